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
	kLayerNorm
	kRope
	kMatMulQ4_0
	kMatMulQ4_K
	kMatMulQ6_K
	kMatMulQ5_K
	kMatMulMXFP4
	kWriteKV
	kAttention
	numKernels
)

// kernelTable is each kernel's shader (shaders/NAME.comp), the storage
// buffers it binds and the 32-bit words of its push-constant block, as
// the shader declares them.
var kernelTable = [numKernels]struct {
	name           string
	bindings, push int
}{
	kAdd:         {"add", 3, 3},
	kRMSNorm:     {"rmsnorm", 3, 3},
	kSiLUMul:     {"silumul", 3, 1},
	kSoftmax:     {"softmax", 1, 2},
	kMatMulF32:   {"matmul_f32", 3, 4},
	kMatMulF16:   {"matmul_f16", 3, 4},
	kMatMulQ8_0:  {"matmul_q8_0", 3, 4},
	kGetRows:     {"getrows", 3, 4},
	kScale:       {"scale", 2, 2},
	kSoftcap:     {"softcap", 1, 3},
	kGELUMul:     {"gelumul", 3, 2},
	kSwiGLUOAI:   {"swigluoai", 3, 3},
	kLayerNorm:   {"layernorm", 4, 5},
	kRope:        {"rope", 2, 5},
	kMatMulQ4_0:  {"matmul_q4_0", 3, 4},
	kMatMulQ4_K:  {"matmul_q4_k", 3, 4},
	kMatMulQ6_K:  {"matmul_q6_k", 3, 4},
	kMatMulQ5_K:  {"matmul_q5_k", 3, 4},
	kMatMulMXFP4: {"matmul_mxfp4", 3, 4},
	kWriteKV:     {"writekv", 4, 7},
	kAttention:   {"attention", 6, 12},
}

func (k kernel) String() string { return kernelTable[k].name }

// Workgroup sizes, as the shaders declare them.
const (
	elementwiseGroup = 256 // add, silumul, scale, softcap, gelumul, swigluoai, getrows: one element per invocation
	matmulRows       = 8   // matmul: rows of x per workgroup
)

// pipeline is one kernel's Vulkan objects.
type pipeline struct {
	setLayout uint64 // VkDescriptorSetLayout
	layout    uint64 // VkPipelineLayout
	module    uint64 // VkShaderModule
	pipeline  uint64 // VkPipeline
}

// spirvOf is kernel k's SPIR-V, checked for the magic number.
func spirvOf(k kernel) ([]uint32, error) {
	data, err := spirv.ReadFile("shaders/" + k.String() + ".spv")
	if err != nil {
		return nil, fmt.Errorf("vulkan: kernel %s: %w", k, err)
	}
	if len(data) < 20 || len(data)%4 != 0 || binary.LittleEndian.Uint32(data) != 0x07230203 {
		return nil, fmt.Errorf("vulkan: kernel %s: shaders/%s.spv is not SPIR-V", k, k)
	}
	words := make([]uint32, len(data)/4)
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(data[4*i:])
	}
	return words, nil
}

// newPipelines makes every kernel's descriptor set layout, pipeline
// layout (the push-constant block included), shader module and pipeline.
func (b *Backend) newPipelines() error {
	for k := range numKernels {
		if err := b.newPipeline(k); err != nil {
			return err
		}
	}
	return nil
}

func (b *Backend) newPipeline(k kernel) error {
	code, err := spirvOf(k)
	if err != nil {
		return err
	}
	var ps pins
	defer ps.unpin()
	kp := &b.kernels[k]
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
