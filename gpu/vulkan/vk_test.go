//go:build amd64 || arm64

package vulkan

import (
	"testing"
	"unsafe"
)

// layouts are the sizes and offsets of vulkan_core.h's structs on a 64-bit
// machine, as its C compiler gives them (sizeof and offsetof of the
// Vulkan 1.3.239 headers with gcc on amd64), against vk.go's Go structs:
// every struct folio passes, and every field it reads past a gap.
var layouts = []struct {
	what      string
	got, want uintptr
}{
	{"sizeof(VkApplicationInfo)", unsafe.Sizeof(applicationInfo{}), 48},
	{"sizeof(VkInstanceCreateInfo)", unsafe.Sizeof(instanceCreateInfo{}), 64},
	{"sizeof(VkPhysicalDeviceLimits)", unsafe.Sizeof(physicalDeviceLimits{}), 504},
	{"sizeof(VkPhysicalDeviceProperties)", unsafe.Sizeof(physicalDeviceProperties{}), 824},
	{"sizeof(VkPhysicalDeviceProperties2)", unsafe.Sizeof(physicalDeviceProperties2{}), 840},
	{"sizeof(VkPhysicalDeviceDriverProperties)", unsafe.Sizeof(physicalDeviceDriverProperties{}), 536},
	{"sizeof(VkPhysicalDeviceSubgroupProperties)", unsafe.Sizeof(physicalDeviceSubgroupProperties{}), 32},
	{"sizeof(VkQueueFamilyProperties)", unsafe.Sizeof(queueFamilyProperties{}), 24},
	{"sizeof(VkPhysicalDeviceMemoryProperties)", unsafe.Sizeof(physicalDeviceMemoryProperties{}), 520},
	{"sizeof(VkDeviceQueueCreateInfo)", unsafe.Sizeof(deviceQueueCreateInfo{}), 40},
	{"sizeof(VkDeviceCreateInfo)", unsafe.Sizeof(deviceCreateInfo{}), 72},
	{"sizeof(VkMemoryAllocateInfo)", unsafe.Sizeof(memoryAllocateInfo{}), 32},
	{"sizeof(VkBufferCreateInfo)", unsafe.Sizeof(bufferCreateInfo{}), 56},
	{"sizeof(VkMemoryRequirements)", unsafe.Sizeof(memoryRequirements{}), 24},
	{"sizeof(VkDescriptorSetLayoutBinding)", unsafe.Sizeof(descriptorSetLayoutBinding{}), 24},
	{"sizeof(VkDescriptorSetLayoutCreateInfo)", unsafe.Sizeof(descriptorSetLayoutCreateInfo{}), 32},
	{"sizeof(VkDescriptorPoolSize)", unsafe.Sizeof(descriptorPoolSize{}), 8},
	{"sizeof(VkDescriptorPoolCreateInfo)", unsafe.Sizeof(descriptorPoolCreateInfo{}), 40},
	{"sizeof(VkDescriptorSetAllocateInfo)", unsafe.Sizeof(descriptorSetAllocateInfo{}), 40},
	{"sizeof(VkDescriptorBufferInfo)", unsafe.Sizeof(descriptorBufferInfo{}), 24},
	{"sizeof(VkWriteDescriptorSet)", unsafe.Sizeof(writeDescriptorSet{}), 64},
	{"sizeof(VkShaderModuleCreateInfo)", unsafe.Sizeof(shaderModuleCreateInfo{}), 40},
	{"sizeof(VkPushConstantRange)", unsafe.Sizeof(pushConstantRange{}), 12},
	{"sizeof(VkPipelineLayoutCreateInfo)", unsafe.Sizeof(pipelineLayoutCreateInfo{}), 48},
	{"sizeof(VkPipelineShaderStageCreateInfo)", unsafe.Sizeof(pipelineShaderStageCreateInfo{}), 48},
	{"sizeof(VkComputePipelineCreateInfo)", unsafe.Sizeof(computePipelineCreateInfo{}), 96},
	{"sizeof(VkCommandPoolCreateInfo)", unsafe.Sizeof(commandPoolCreateInfo{}), 24},
	{"sizeof(VkCommandBufferAllocateInfo)", unsafe.Sizeof(commandBufferAllocateInfo{}), 32},
	{"sizeof(VkCommandBufferBeginInfo)", unsafe.Sizeof(commandBufferBeginInfo{}), 32},
	{"sizeof(VkMemoryBarrier)", unsafe.Sizeof(memoryBarrier{}), 24},
	{"sizeof(VkBufferCopy)", unsafe.Sizeof(bufferCopy{}), 24},
	{"sizeof(VkSubmitInfo)", unsafe.Sizeof(submitInfo{}), 72},
	{"sizeof(VkFenceCreateInfo)", unsafe.Sizeof(fenceCreateInfo{}), 24},
	{"offsetof(VkPhysicalDeviceLimits.maxStorageBufferRange)", unsafe.Offsetof(physicalDeviceLimits{}.maxStorageBufferRange), 28},
	{"offsetof(VkPhysicalDeviceLimits.maxPushConstantsSize)", unsafe.Offsetof(physicalDeviceLimits{}.maxPushConstantsSize), 32},
	{"offsetof(VkPhysicalDeviceLimits.maxMemoryAllocationCount)", unsafe.Offsetof(physicalDeviceLimits{}.maxMemoryAllocationCount), 36},
	{"offsetof(VkPhysicalDeviceLimits.maxComputeSharedMemorySize)", unsafe.Offsetof(physicalDeviceLimits{}.maxComputeSharedMemorySize), 216},
	{"offsetof(VkPhysicalDeviceLimits.maxComputeWorkGroupCount)", unsafe.Offsetof(physicalDeviceLimits{}.maxComputeWorkGroupCount), 220},
	{"offsetof(VkPhysicalDeviceLimits.maxComputeWorkGroupInvocations)", unsafe.Offsetof(physicalDeviceLimits{}.maxComputeWorkGroupInvocations), 232},
	{"offsetof(VkPhysicalDeviceLimits.maxComputeWorkGroupSize)", unsafe.Offsetof(physicalDeviceLimits{}.maxComputeWorkGroupSize), 236},
	{"offsetof(VkPhysicalDeviceLimits.minStorageBufferOffsetAlignment)", unsafe.Offsetof(physicalDeviceLimits{}.minStorageBufferOffsetAlign), 328},
	{"offsetof(VkPhysicalDeviceLimits.nonCoherentAtomSize)", unsafe.Offsetof(physicalDeviceLimits{}.nonCoherentAtomSize), 496},
	{"offsetof(VkPhysicalDeviceProperties.deviceType)", unsafe.Offsetof(physicalDeviceProperties{}.deviceType), 16},
	{"offsetof(VkPhysicalDeviceProperties.deviceName)", unsafe.Offsetof(physicalDeviceProperties{}.deviceName), 20},
	{"offsetof(VkPhysicalDeviceProperties.limits)", unsafe.Offsetof(physicalDeviceProperties{}.limits), 296},
	{"offsetof(VkPhysicalDeviceProperties.sparseProperties)", unsafe.Offsetof(physicalDeviceProperties{}.sparseProperties), 800},
	{"offsetof(VkPhysicalDeviceDriverProperties.driverName)", unsafe.Offsetof(physicalDeviceDriverProperties{}.driverName), 20},
	{"offsetof(VkPhysicalDeviceDriverProperties.driverInfo)", unsafe.Offsetof(physicalDeviceDriverProperties{}.driverInfo), 276},
	{"offsetof(VkPhysicalDeviceSubgroupProperties.subgroupSize)", unsafe.Offsetof(physicalDeviceSubgroupProperties{}.subgroupSize), 16},
	{"offsetof(VkPhysicalDeviceSubgroupProperties.supportedOperations)", unsafe.Offsetof(physicalDeviceSubgroupProperties{}.supportedOperations), 24},
	{"offsetof(VkPhysicalDeviceMemoryProperties.memoryHeapCount)", unsafe.Offsetof(physicalDeviceMemoryProperties{}.memoryHeapCount), 260},
	{"offsetof(VkPhysicalDeviceMemoryProperties.memoryHeaps)", unsafe.Offsetof(physicalDeviceMemoryProperties{}.memoryHeaps), 264},
	{"offsetof(VkComputePipelineCreateInfo.stage)", unsafe.Offsetof(computePipelineCreateInfo{}.stage), 24},
	{"offsetof(VkComputePipelineCreateInfo.layout)", unsafe.Offsetof(computePipelineCreateInfo{}.layout), 72},
	{"offsetof(VkComputePipelineCreateInfo.basePipelineIndex)", unsafe.Offsetof(computePipelineCreateInfo{}.basePipelineIndex), 88},
	{"offsetof(VkWriteDescriptorSet.dstSet)", unsafe.Offsetof(writeDescriptorSet{}.dstSet), 16},
	{"offsetof(VkWriteDescriptorSet.descriptorType)", unsafe.Offsetof(writeDescriptorSet{}.descriptorType), 36},
	{"offsetof(VkWriteDescriptorSet.pBufferInfo)", unsafe.Offsetof(writeDescriptorSet{}.pBufferInfo), 48},
	{"offsetof(VkSubmitInfo.pCommandBuffers)", unsafe.Offsetof(submitInfo{}.pCommandBuffers), 48},
	{"offsetof(VkSubmitInfo.pSignalSemaphores)", unsafe.Offsetof(submitInfo{}.pSignalSemaphores), 64},
	{"offsetof(VkDeviceCreateInfo.pEnabledFeatures)", unsafe.Offsetof(deviceCreateInfo{}.pEnabledFeatures), 64},
	{"offsetof(VkBufferCreateInfo.usage)", unsafe.Offsetof(bufferCreateInfo{}.usage), 32},
	{"offsetof(VkBufferCreateInfo.pQueueFamilyIndices)", unsafe.Offsetof(bufferCreateInfo{}.pQueueFamilyIndices), 48},
	{"offsetof(VkApplicationInfo.apiVersion)", unsafe.Offsetof(applicationInfo{}.apiVersion), 44},
	{"offsetof(VkInstanceCreateInfo.ppEnabledExtensionNames)", unsafe.Offsetof(instanceCreateInfo{}.ppEnabledExtensionNames), 56},
	{"offsetof(VkPipelineLayoutCreateInfo.pPushConstantRanges)", unsafe.Offsetof(pipelineLayoutCreateInfo{}.pPushConstantRanges), 40},
	{"offsetof(VkDescriptorPoolCreateInfo.pPoolSizes)", unsafe.Offsetof(descriptorPoolCreateInfo{}.pPoolSizes), 32},
	{"offsetof(VkDescriptorSetAllocateInfo.pSetLayouts)", unsafe.Offsetof(descriptorSetAllocateInfo{}.pSetLayouts), 32},
	{"offsetof(VkShaderModuleCreateInfo.pCode)", unsafe.Offsetof(shaderModuleCreateInfo{}.pCode), 32},
	{"offsetof(VkPipelineShaderStageCreateInfo.pName)", unsafe.Offsetof(pipelineShaderStageCreateInfo{}.pName), 32},
	{"offsetof(VkDeviceQueueCreateInfo.pQueuePriorities)", unsafe.Offsetof(deviceQueueCreateInfo{}.pQueuePriorities), 32},
}

func TestStructLayouts(t *testing.T) {
	for _, l := range layouts {
		if l.got != l.want {
			t.Errorf("%s = %d in Go, %d in C", l.what, l.got, l.want)
		}
	}
}
