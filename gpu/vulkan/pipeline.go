package vulkan

import (
	"embed"
	"encoding/binary"
	"fmt"
)

// The shaders are GLSL in shaders/*.comp, compiled to SPIR-V by glslc
// (shaders/build.sh, run by go generate) into the committed
// shaders/*.spv that the binary embeds. CI compiles them again and fails
// on any difference.
//
//go:generate sh shaders/build.sh

//go:embed shaders/*.spv
var spirv embed.FS

// kernel names a compute pipeline.
type kernel int

const (
	kAdd kernel = iota
	kRMSNorm
	kSiLUMul
	kSoftmax
	kMatMulF32
	kMatMulF16
	kMatMulQ8_0
	kGetRows
	kScale
	kSoftcap
	kGELUMul
	kSwiGLUOAI
	kSigmoidMul
	kLayerNorm
	kRope
	kMatMulQ4_0
	kMatMulQ4_K
	kMatMulQ6_K
	kMatMulQ5_K
	kMatMulMXFP4
	kWriteKV
	kAttention
	kMixRows
	kMatchNorm
	kMulRow
	kSparsify
	numKernels
)

// kernelTable is each kernel's shader (shaders/NAME.comp), the storage
// buffers it binds and the 32-bit words of its push-constant block, as
// the shader declares them, and for a kernel that reduces across its
// workgroup the workgroup size of its subgroup variant
// (shaders/NAME_sg.spv, see subgroupsFit).
var kernelTable = [numKernels]struct {
	name           string
	bindings, push int
	group          int
}{
	kAdd:         {"add", 3, 3, 0},
	kRMSNorm:     {"rmsnorm", 3, 3, normGroup},
	kSiLUMul:     {"silumul", 3, 1, 0},
	kSoftmax:     {"softmax", 1, 2, normGroup},
	kMatMulF32:   {"matmul_f32", 3, 4, matmulGroup},
	kMatMulF16:   {"matmul_f16", 3, 4, matmulGroup},
	kMatMulQ8_0:  {"matmul_q8_0", 3, 4, matmulGroup},
	kGetRows:     {"getrows", 3, 4, 0},
	kScale:       {"scale", 2, 2, 0},
	kSoftcap:     {"softcap", 1, 3, 0},
	kGELUMul:     {"gelumul", 3, 2, 0},
	kSwiGLUOAI:   {"swigluoai", 3, 3, 0},
	kSigmoidMul:  {"sigmoidmul", 3, 1, 0},
	kLayerNorm:   {"layernorm", 4, 5, normGroup},
	kRope:        {"rope", 2, 5, 0},
	kMatMulQ4_0:  {"matmul_q4_0", 3, 4, matmulGroup},
	kMatMulQ4_K:  {"matmul_q4_k", 3, 4, matmulGroup},
	kMatMulQ6_K:  {"matmul_q6_k", 3, 4, matmulGroup},
	kMatMulQ5_K:  {"matmul_q5_k", 3, 4, matmulGroup},
	kMatMulMXFP4: {"matmul_mxfp4", 3, 4, matmulGroup},
	kWriteKV:     {"writekv", 4, 7, 0},
	kAttention:   {"attention", 6, 12, 0},
	kMixRows:     {"mixrows", 7, 9, 0},
	kMatchNorm:   {"matchnorm", 3, 2, 0},
	kMulRow:      {"mulrow", 3, 2, 0},
	kSparsify:    {"sparsify", 1, 3, 0},
}

func (k kernel) String() string { return kernelTable[k].name }

// Workgroup sizes, as the shaders declare them.
const (
	elementwiseGroup = 256 // add, silumul, scale, softcap, gelumul, swigluoai, sigmoidmul, getrows, mixrows, mulrow: one element per invocation
	matmulRows       = 8   // matmul: rows of x per workgroup
	matmulGroup      = 64  // matmul: invocations a workgroup (one output column)
	normGroup        = 256 // rmsnorm, layernorm, softmax, matchnorm, sparsify: invocations a row
)

// minSubgroup is the smallest subgroup the _sg variants take: their
// shared arrays hold a workgroup's subgroup sums for subgroups of 4 or
// more invocations.
const minSubgroup = 4

// subgroupsFit reports whether a kernel whose subgroup variant has group
// invocations a workgroup may run it on dev: compute shaders have subgroup
// arithmetic, and the subgroup size (a power of two) is at least
// minSubgroup and divides group, so that every subgroup is full.
func subgroupsFit(dev Device, group int) bool {
	return group > 0 && dev.SubgroupArithmetic && dev.SubgroupSize >= minSubgroup && group%dev.SubgroupSize == 0
}

// pipeline is one kernel's Vulkan objects.
type pipeline struct {
	setLayout uint64 // VkDescriptorSetLayout
	layout    uint64 // VkPipelineLayout
	module    uint64 // VkShaderModule
	pipeline  uint64 // VkPipeline
	subgroups bool   // made from the subgroup variant
}

// spirvOf is kernel k's SPIR-V (its subgroup variant's with sg),
// checked for the magic number.
func spirvOf(k kernel, sg bool) ([]uint32, error) {
	file := "shaders/" + k.String() + ".spv"
	if sg {
		file = "shaders/" + k.String() + "_sg.spv"
	}
	data, err := spirv.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("vulkan: kernel %s: %w", k, err)
	}
	if len(data) < 20 || len(data)%4 != 0 || binary.LittleEndian.Uint32(data) != 0x07230203 {
		return nil, fmt.Errorf("vulkan: kernel %s: %s is not SPIR-V", k, file)
	}
	words := make([]uint32, len(data)/4)
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(data[4*i:])
	}
	return words, nil
}

// newPipelines makes every kernel's descriptor set layout, pipeline
// layout (the push-constant block included), shader module and pipeline:
// of the subgroup variant where the device's subgroups fit the kernel,
// unless noSubgroups.
func (b *Backend) newPipelines(noSubgroups bool) error {
	for k := range numKernels {
		if err := b.newPipeline(k, !noSubgroups && subgroupsFit(b.dev, kernelTable[k].group)); err != nil {
			return err
		}
	}
	return nil
}

func (b *Backend) newPipeline(k kernel, sg bool) error {
	code, err := spirvOf(k, sg)
	if err != nil {
		return err
	}
	var ps pins
	defer ps.unpin()
	kp := &b.kernels[k]
	kp.subgroups = sg
	h := new(uint64)
	binds := make([]descriptorSetLayoutBinding, kernelTable[k].bindings)
	for i := range binds {
		binds[i] = descriptorSetLayoutBinding{binding: uint32(i), descriptorType: descriptorStorageBuffer, descriptorCount: 1, stageFlags: stageCompute}
	}
	dl := &descriptorSetLayoutCreateInfo{sType: stDescriptorSetLayoutCreateInfo, bindingCount: uint32(len(binds)), pBindings: slicePtr(&ps, binds)}
	if err := check("vkCreateDescriptorSetLayout", call(b.l.createDescriptorSetLayout, b.device, arg(&ps, dl), 0, arg(&ps, h))); err != nil {
		return fmt.Errorf("vulkan: kernel %s: %w", k, err)
	}
	kp.setLayout = *h
	setLayout := &kp.setLayout
	pr := &pushConstantRange{stageFlags: stageCompute, size: pushBytes}
	pl := &pipelineLayoutCreateInfo{sType: stPipelineLayoutCreateInfo, setLayoutCount: 1, pSetLayouts: ptr(&ps, setLayout),
		pushConstantRangeCount: 1, pPushConstantRanges: ptr(&ps, pr)}
	if err := check("vkCreatePipelineLayout", call(b.l.createPipelineLayout, b.device, arg(&ps, pl), 0, arg(&ps, h))); err != nil {
		return fmt.Errorf("vulkan: kernel %s: %w", k, err)
	}
	kp.layout = *h
	sm := &shaderModuleCreateInfo{sType: stShaderModuleCreateInfo, codeSize: uint64(4 * len(code)), pCode: slicePtr(&ps, code)}
	if err := check("vkCreateShaderModule", call(b.l.createShaderModule, b.device, arg(&ps, sm), 0, arg(&ps, h))); err != nil {
		return fmt.Errorf("vulkan: kernel %s: %w", k, err)
	}
	kp.module = *h
	cp := &computePipelineCreateInfo{sType: stComputePipelineCreateInfo, layout: kp.layout, basePipelineIndex: -1,
		stage: pipelineShaderStageCreateInfo{sType: stPipelineShaderStageCreateInfo, stage: stageCompute, module: kp.module,
			pName: cString(&ps, "main")}}
	if err := check("vkCreateComputePipelines", call(b.l.createComputePipelines, b.device, 0, 1, arg(&ps, cp), 0, arg(&ps, h))); err != nil {
		return fmt.Errorf("vulkan: kernel %s: %w", k, err)
	}
	kp.pipeline = *h
	return nil
}

// destroyPipelines frees what newPipelines made.
func (b *Backend) destroyPipelines() {
	for i := range b.kernels {
		kp := &b.kernels[i]
		if kp.pipeline != 0 {
			call(b.l.destroyPipeline, b.device, uintptr(kp.pipeline), 0)
		}
		if kp.module != 0 {
			call(b.l.destroyShaderModule, b.device, uintptr(kp.module), 0)
		}
		if kp.layout != 0 {
			call(b.l.destroyPipelineLayout, b.device, uintptr(kp.layout), 0)
		}
		if kp.setLayout != 0 {
			call(b.l.destroyDescriptorSetLayout, b.device, uintptr(kp.setLayout), 0)
		}
		*kp = pipeline{}
	}
}
