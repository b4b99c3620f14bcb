package vulkan

import (
	"fmt"
	"unsafe"
)

// The Vulkan structs and constants folio passes, laid out as vulkan_core.h
// lays them out on a 64-bit machine (amd64, arm64): a pointer or a size_t
// is 8 bytes, a non-dispatchable handle (VkBuffer, VkPipeline…) a uint64,
// a dispatchable one (VkInstance, VkDevice, VkCommandBuffer…) a pointer.
// A _ field is either padding the C compiler inserts or, with its C name
// in a comment, a field folio leaves zero or never reads; vk_test.go
// checks every size, and the offsets of the fields past a gap, against
// the header's. Pointer fields are unsafe.Pointer to memory pinned for the
// call that passes the struct (pin.go).

// structure types (VkStructureType)
const (
	stApplicationInfo                  = 0
	stInstanceCreateInfo               = 1
	stDeviceQueueCreateInfo            = 2
	stDeviceCreateInfo                 = 3
	stSubmitInfo                       = 4
	stMemoryAllocateInfo               = 5
	stFenceCreateInfo                  = 8
	stBufferCreateInfo                 = 12
	stShaderModuleCreateInfo           = 16
	stPipelineShaderStageCreateInfo    = 18
	stComputePipelineCreateInfo        = 29
	stPipelineLayoutCreateInfo         = 30
	stDescriptorSetLayoutCreateInfo    = 32
	stDescriptorPoolCreateInfo         = 33
	stDescriptorSetAllocateInfo        = 34
	stWriteDescriptorSet               = 35
	stCommandPoolCreateInfo            = 39
	stCommandBufferAllocateInfo        = 40
	stCommandBufferBeginInfo           = 42
	stMemoryBarrier                    = 46
	stPhysicalDeviceProperties2        = 1000059001
	stPhysicalDeviceSubgroupProperties = 1000094000
	stPhysicalDeviceDriverProperties   = 1000196000
)

// Flags and enum values.
const (
	queueCompute = 0x2 // VK_QUEUE_COMPUTE_BIT

	subgroupBasic      = 0x1 // VK_SUBGROUP_FEATURE_BASIC_BIT
	subgroupArithmetic = 0x4 // VK_SUBGROUP_FEATURE_ARITHMETIC_BIT

	memDeviceLocal  = 0x1 // VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
	memHostVisible  = 0x2
	memHostCoherent = 0x4
	memHostCached   = 0x8

	bufferTransferSrc = 0x1  // VK_BUFFER_USAGE_TRANSFER_SRC_BIT
	bufferTransferDst = 0x2  // VK_BUFFER_USAGE_TRANSFER_DST_BIT
	bufferStorage     = 0x20 // VK_BUFFER_USAGE_STORAGE_BUFFER_BIT

	descriptorStorageBuffer = 7          // VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
	stageCompute            = 0x20       // VK_SHADER_STAGE_COMPUTE_BIT
	bindPointCompute        = 1          // VK_PIPELINE_BIND_POINT_COMPUTE
	pipelineStageTransfer   = 0x1000     // VK_PIPELINE_STAGE_TRANSFER_BIT
	pipelineStageCompute    = 0x800      // VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
	pipelineStageHost       = 0x4000     // VK_PIPELINE_STAGE_HOST_BIT
	accessShaderRead        = 0x20       // VK_ACCESS_SHADER_READ_BIT
	accessShaderWrite       = 0x40       // VK_ACCESS_SHADER_WRITE_BIT
	accessTransferRead      = 0x800      // VK_ACCESS_TRANSFER_READ_BIT
	accessTransferWrite     = 0x1000     // VK_ACCESS_TRANSFER_WRITE_BIT
	accessHostRead          = 0x2000     // VK_ACCESS_HOST_READ_BIT
	commandBufferOneTime    = 0x1        // VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT
	commandPoolReset        = 0x2        // VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT
	wholeSize               = ^uint64(0) // VK_WHOLE_SIZE
)

// VkPhysicalDeviceType, in the order Open prefers them.
const (
	typeOther         = 0
	typeIntegratedGPU = 1
	typeDiscreteGPU   = 2
	typeVirtualGPU    = 3
	typeCPU           = 4
)

// makeVersion is VK_MAKE_API_VERSION(0, major, minor, patch).
func makeVersion(major, minor, patch uint32) uint32 { return major<<22 | minor<<12 | patch }

// versionString is "major.minor.patch" of a Vulkan API version.
func versionString(v uint32) string {
	return fmt.Sprintf("%d.%d.%d", v>>22&0x7f, v>>12&0x3ff, v&0xfff)
}

// VkApplicationInfo (48 bytes).
type applicationInfo struct {
	sType            uint32
	_                uint32
	_                unsafe.Pointer // pNext
	pApplicationName unsafe.Pointer
	_                uint32 // applicationVersion
	_                uint32
	pEngineName      unsafe.Pointer
	_                uint32 // engineVersion
	apiVersion       uint32
}

// VkInstanceCreateInfo (64 bytes).
type instanceCreateInfo struct {
	sType                   uint32
	_                       uint32
	_                       unsafe.Pointer // pNext
	_                       uint32         // flags
	_                       uint32
	pApplicationInfo        unsafe.Pointer
	_                       uint32 // enabledLayerCount
	_                       uint32
	_                       unsafe.Pointer // ppEnabledLayerNames
	_                       uint32         // enabledExtensionCount
	_                       uint32
	ppEnabledExtensionNames unsafe.Pointer
}

// VkPhysicalDeviceLimits (504 bytes), the fields folio reads named.
type physicalDeviceLimits struct {
	_                              [7]uint32 // maxImageDimension1D … maxUniformBufferRange
	maxStorageBufferRange          uint32
	maxPushConstantsSize           uint32
	maxMemoryAllocationCount       uint32
	_                              uint32     // maxSamplerAllocationCount
	_                              [2]uint64  // bufferImageGranularity, sparseAddressSpaceSize
	_                              [38]uint32 // maxBoundDescriptorSets … maxFragmentCombinedOutputResources
	maxComputeSharedMemorySize     uint32
	maxComputeWorkGroupCount       [3]uint32
	maxComputeWorkGroupInvocations uint32
	maxComputeWorkGroupSize        [3]uint32
	_                              [13]uint32 // subPixelPrecisionBits … viewportSubPixelBits
	_                              uint32
	_                              [3]uint64 // minMemoryMapAlignment … minUniformBufferOffsetAlignment
	minStorageBufferOffsetAlign    uint64
	_                              [35]uint32 // minTexelOffset … standardSampleLocations
	_                              uint32
	_                              [2]uint64 // optimalBufferCopyOffsetAlignment, optimalBufferCopyRowPitchAlignment
	nonCoherentAtomSize            uint64
}

// VkPhysicalDeviceProperties (824 bytes).
type physicalDeviceProperties struct {
	apiVersion       uint32
	driverVersion    uint32
	_                uint32 // vendorID
	_                uint32 // deviceID
	deviceType       uint32
	deviceName       [256]byte
	_                [16]byte // pipelineCacheUUID
	_                [4]byte
	limits           physicalDeviceLimits
	sparseProperties [5]uint32
	_                uint32
}

// VkPhysicalDeviceProperties2 (840 bytes).
type physicalDeviceProperties2 struct {
	sType      uint32
	_          uint32
	pNext      unsafe.Pointer
	properties physicalDeviceProperties
}

// VkPhysicalDeviceSubgroupProperties (32 bytes), Vulkan 1.1.
type physicalDeviceSubgroupProperties struct {
	sType               uint32
	_                   uint32
	pNext               unsafe.Pointer
	subgroupSize        uint32
	supportedStages     uint32 // VkShaderStageFlags
	supportedOperations uint32 // VkSubgroupFeatureFlags
	_                   uint32 // quadOperationsInAllStages
}

// VkPhysicalDeviceDriverProperties (536 bytes), Vulkan 1.2.
type physicalDeviceDriverProperties struct {
	sType      uint32
	_          uint32
	_          unsafe.Pointer // pNext
	_          uint32         // driverID
	driverName [256]byte
	driverInfo [256]byte
	_          [4]uint8 // conformanceVersion
}

// VkQueueFamilyProperties (24 bytes).
type queueFamilyProperties struct {
	queueFlags uint32
	queueCount uint32
	_          uint32    // timestampValidBits
	_          [3]uint32 // minImageTransferGranularity
}

// VkMemoryType (8 bytes).
type memoryType struct {
	propertyFlags uint32
	_             uint32 // heapIndex
}

// VkMemoryHeap (16 bytes).
type memoryHeap struct {
	size  uint64
	flags uint32
	_     uint32
}

// VkPhysicalDeviceMemoryProperties (520 bytes).
type physicalDeviceMemoryProperties struct {
	memoryTypeCount uint32
	memoryTypes     [32]memoryType
	memoryHeapCount uint32
	memoryHeaps     [16]memoryHeap
}

// VkDeviceQueueCreateInfo (40 bytes).
type deviceQueueCreateInfo struct {
	sType            uint32
	_                uint32
	_                unsafe.Pointer // pNext
	_                uint32         // flags
	queueFamilyIndex uint32
	queueCount       uint32
	_                uint32
	pQueuePriorities unsafe.Pointer
}

// VkDeviceCreateInfo (72 bytes).
type deviceCreateInfo struct {
	sType                uint32
	_                    uint32
	_                    unsafe.Pointer // pNext
	_                    uint32         // flags
	queueCreateInfoCount uint32
	pQueueCreateInfos    unsafe.Pointer
	_                    uint32 // enabledLayerCount
	_                    uint32
	_                    unsafe.Pointer // ppEnabledLayerNames
	_                    uint32         // enabledExtensionCount
	_                    uint32
	_                    unsafe.Pointer // ppEnabledExtensionNames
	pEnabledFeatures     unsafe.Pointer
}

// VkMemoryAllocateInfo (32 bytes).
type memoryAllocateInfo struct {
	sType           uint32
	_               uint32
	_               unsafe.Pointer // pNext
	allocationSize  uint64
	memoryTypeIndex uint32
	_               uint32
}

// VkBufferCreateInfo (56 bytes).
type bufferCreateInfo struct {
	sType               uint32
	_                   uint32
	_                   unsafe.Pointer // pNext
	_                   uint32         // flags
	_                   uint32
	size                uint64
	usage               uint32
	_                   uint32 // sharingMode
	_                   uint32 // queueFamilyIndexCount
	_                   uint32
	pQueueFamilyIndices unsafe.Pointer
}

// VkMemoryRequirements (24 bytes).
type memoryRequirements struct {
	size           uint64
	_              uint64 // alignment
	memoryTypeBits uint32
	_              uint32
}

// VkDescriptorSetLayoutBinding (24 bytes).
type descriptorSetLayoutBinding struct {
	binding         uint32
	descriptorType  uint32
	descriptorCount uint32
	stageFlags      uint32
	_               unsafe.Pointer // pImmutableSamplers
}

// VkDescriptorSetLayoutCreateInfo (32 bytes).
type descriptorSetLayoutCreateInfo struct {
	sType        uint32
	_            uint32
	_            unsafe.Pointer // pNext
	_            uint32         // flags
	bindingCount uint32
	pBindings    unsafe.Pointer
}

// VkDescriptorPoolSize (8 bytes).
type descriptorPoolSize struct {
	typ   uint32
	count uint32
}

// VkDescriptorPoolCreateInfo (40 bytes).
type descriptorPoolCreateInfo struct {
	sType         uint32
	_             uint32
	_             unsafe.Pointer // pNext
	_             uint32         // flags
	maxSets       uint32
	poolSizeCount uint32
	_             uint32
	pPoolSizes    unsafe.Pointer
}

// VkDescriptorSetAllocateInfo (40 bytes).
type descriptorSetAllocateInfo struct {
	sType              uint32
	_                  uint32
	pNext              unsafe.Pointer
	descriptorPool     uint64
	descriptorSetCount uint32
	_                  uint32
	pSetLayouts        unsafe.Pointer
}

// VkDescriptorBufferInfo (24 bytes).
type descriptorBufferInfo struct {
	buffer uint64
	offset uint64
	rng    uint64
}

// VkWriteDescriptorSet (64 bytes).
type writeDescriptorSet struct {
	sType            uint32
	_                uint32
	pNext            unsafe.Pointer
	dstSet           uint64
	dstBinding       uint32
	dstArrayElement  uint32
	descriptorCount  uint32
	descriptorType   uint32
	pImageInfo       unsafe.Pointer
	pBufferInfo      unsafe.Pointer
	pTexelBufferView unsafe.Pointer
}

// VkShaderModuleCreateInfo (40 bytes).
type shaderModuleCreateInfo struct {
	sType    uint32
	_        uint32
	_        unsafe.Pointer // pNext
	_        uint32         // flags
	_        uint32
	codeSize uint64
	pCode    unsafe.Pointer
}

// VkPushConstantRange (12 bytes).
type pushConstantRange struct {
	stageFlags uint32
	_          uint32 // offset
	size       uint32
}

// VkPipelineLayoutCreateInfo (48 bytes).
type pipelineLayoutCreateInfo struct {
	sType                  uint32
	_                      uint32
	_                      unsafe.Pointer // pNext
	_                      uint32         // flags
	setLayoutCount         uint32
	pSetLayouts            unsafe.Pointer
	pushConstantRangeCount uint32
	_                      uint32
	pPushConstantRanges    unsafe.Pointer
}

// VkPipelineShaderStageCreateInfo (48 bytes).
type pipelineShaderStageCreateInfo struct {
	sType  uint32
	_      uint32
	_      unsafe.Pointer // pNext
	_      uint32         // flags
	stage  uint32
	module uint64
	pName  unsafe.Pointer
	_      unsafe.Pointer // pSpecializationInfo
}

// VkComputePipelineCreateInfo (96 bytes).
type computePipelineCreateInfo struct {
	sType             uint32
	_                 uint32
	_                 unsafe.Pointer // pNext
	_                 uint32         // flags
	_                 uint32
	stage             pipelineShaderStageCreateInfo
	layout            uint64
	_                 uint64 // basePipelineHandle
	basePipelineIndex int32
	_                 uint32
}

// VkCommandPoolCreateInfo (24 bytes).
type commandPoolCreateInfo struct {
	sType            uint32
	_                uint32
	_                unsafe.Pointer // pNext
	flags            uint32
	queueFamilyIndex uint32
}

// VkCommandBufferAllocateInfo (32 bytes).
type commandBufferAllocateInfo struct {
	sType              uint32
	_                  uint32
	_                  unsafe.Pointer // pNext
	commandPool        uint64
	_                  uint32 // level
	commandBufferCount uint32
}

// VkCommandBufferBeginInfo (32 bytes).
type commandBufferBeginInfo struct {
	sType            uint32
	_                uint32
	pNext            unsafe.Pointer
	flags            uint32
	_                uint32
	pInheritanceInfo unsafe.Pointer
}

// VkMemoryBarrier (24 bytes).
type memoryBarrier struct {
	sType         uint32
	_             uint32
	pNext         unsafe.Pointer
	srcAccessMask uint32
	dstAccessMask uint32
}

// VkBufferCopy (24 bytes).
type bufferCopy struct {
	srcOffset, dstOffset, size uint64
}

// VkSubmitInfo (72 bytes).
type submitInfo struct {
	sType                uint32
	_                    uint32
	pNext                unsafe.Pointer
	waitSemaphoreCount   uint32
	_                    uint32
	pWaitSemaphores      unsafe.Pointer
	pWaitDstStageMask    unsafe.Pointer
	commandBufferCount   uint32
	_                    uint32
	pCommandBuffers      unsafe.Pointer
	signalSemaphoreCount uint32
	_                    uint32
	pSignalSemaphores    unsafe.Pointer
}

// VkFenceCreateInfo (24 bytes).
type fenceCreateInfo struct {
	sType uint32
	_     uint32
	_     unsafe.Pointer // pNext
	_     uint32         // flags
	_     uint32
}

// cstr is the NUL-terminated string in b.
func cstr(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
