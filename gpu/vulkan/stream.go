package vulkan

import (
	"fmt"
	"unsafe"
)

// Ops are recorded into one command buffer as they are called, each
// followed by a full memory barrier (every compute or transfer write made
// visible to every later read or write, and to the host), and submitted
// when the host needs a result (flush): Download, a full staging buffer
// or descriptor pool, Close. Recording is cheap and a submission costs a
// fence wait, so a forward pass becomes one submission.

// maxBindings is the most storage buffers a kernel binds.
const maxBindings = 8

// setsPerPool is how many descriptor sets one pool holds: the dispatches
// recorded between two flushes.
const setsPerPool = 512

// pushBytes is the push-constant block every kernel may use: the
// smallest maxPushConstantsSize Vulkan allows.
const pushBytes = 128

// scratch holds the structs the recording calls pass, allocated once and
// pinned for the backend's life, so that recording an op allocates
// nothing. Its pointer fields point into itself.
type scratch struct {
	barrier  memoryBarrier
	begin    commandBufferBeginInfo
	submit   submitInfo
	cmd      uintptr // the command buffer, for submit.pCommandBuffers
	fence    uint64  // for vkWaitForFences and vkResetFences
	setAlloc descriptorSetAllocateInfo
	layout   uint64 // for setAlloc.pSetLayouts
	set      uint64
	infos    [maxBindings]descriptorBufferInfo
	writes   [maxBindings]writeDescriptorSet
	push     [pushBytes / 4]uint32
	copy     bufferCopy
}

func (s *scratch) init() {
	s.barrier = memoryBarrier{sType: stMemoryBarrier,
		srcAccessMask: accessShaderWrite | accessTransferWrite,
		dstAccessMask: accessShaderRead | accessShaderWrite | accessTransferRead | accessTransferWrite | accessHostRead}
	s.begin = commandBufferBeginInfo{sType: stCommandBufferBeginInfo, flags: commandBufferOneTime}
	s.submit = submitInfo{sType: stSubmitInfo, commandBufferCount: 1, pCommandBuffers: unsafe.Pointer(&s.cmd)}
	s.setAlloc = descriptorSetAllocateInfo{sType: stDescriptorSetAllocateInfo, descriptorSetCount: 1, pSetLayouts: unsafe.Pointer(&s.layout)}
	for i := range s.writes {
		s.writes[i] = writeDescriptorSet{sType: stWriteDescriptorSet, dstBinding: uint32(i), descriptorCount: 1,
			descriptorType: descriptorStorageBuffer, pBufferInfo: unsafe.Pointer(&s.infos[i])}
	}
}

// stream is the queue's recording state.
type stream struct {
	pool      uint64  // VkCommandPool
	cmd       uintptr // VkCommandBuffer
	fence     uint64
	descPool  uint64
	sets      int  // descriptor sets allocated from descPool since it was reset
	recording bool // cmd has begun
	commands  int  // commands recorded since the last flush
	flushes   int  // submissions made
}

// newStream makes the command pool and buffer, the fence and the
// descriptor pool.
func (b *Backend) newStream() error {
	var ps pins
	defer ps.unpin()
	st := &b.stream
	pci := &commandPoolCreateInfo{sType: stCommandPoolCreateInfo, flags: commandPoolReset, queueFamilyIndex: uint32(b.family)}
	h := new(uint64)
	if err := check("vkCreateCommandPool", call(b.l.createCommandPool, b.device, arg(&ps, pci), 0, arg(&ps, h))); err != nil {
		return err
	}
	st.pool = *h
	ai := &commandBufferAllocateInfo{sType: stCommandBufferAllocateInfo, commandPool: st.pool, commandBufferCount: 1}
	cb := new(uintptr)
	if err := check("vkAllocateCommandBuffers", call(b.l.allocateCommandBuffers, b.device, arg(&ps, ai), arg(&ps, cb))); err != nil {
		return err
	}
	st.cmd = *cb
	b.s.cmd = st.cmd
	fci := &fenceCreateInfo{sType: stFenceCreateInfo}
	if err := check("vkCreateFence", call(b.l.createFence, b.device, arg(&ps, fci), 0, arg(&ps, h))); err != nil {
		return err
	}
	st.fence = *h
	b.s.fence = st.fence
	size := &descriptorPoolSize{typ: descriptorStorageBuffer, count: setsPerPool * maxBindings}
	dci := &descriptorPoolCreateInfo{sType: stDescriptorPoolCreateInfo, maxSets: setsPerPool, poolSizeCount: 1, pPoolSizes: ptr(&ps, size)}
	if err := check("vkCreateDescriptorPool", call(b.l.createDescriptorPool, b.device, arg(&ps, dci), 0, arg(&ps, h))); err != nil {
		return err
	}
	st.descPool = *h
	b.s.setAlloc.descriptorPool = st.descPool
	return nil
}

// destroyStream frees what newStream made; nothing may be queued.
func (b *Backend) destroyStream() {
	st := &b.stream
	if st.descPool != 0 {
		call(b.l.destroyDescriptorPool, b.device, uintptr(st.descPool), 0)
	}
	if st.fence != 0 {
		call(b.l.destroyFence, b.device, uintptr(st.fence), 0)
	}
	if st.pool != 0 {
		call(b.l.destroyCommandPool, b.device, uintptr(st.pool), 0) // frees the command buffer
	}
	*st = stream{}
}

// record makes sure the command buffer is recording.
func (b *Backend) record() {
	if b.closed {
		panic("vulkan: backend used after Close")
	}
	st := &b.stream
	if !st.recording {
		must("vkBeginCommandBuffer", call(b.l.beginCommandBuffer, st.cmd, uintptr(unsafe.Pointer(&b.s.begin))))
		st.recording = true
	}
}

// barrier records the full memory barrier that follows every command.
func (b *Backend) barrier() {
	call(b.l.cmdPipelineBarrier, b.stream.cmd, pipelineStageCompute|pipelineStageTransfer,
		pipelineStageCompute|pipelineStageTransfer|pipelineStageHost, 0,
		1, uintptr(unsafe.Pointer(&b.s.barrier)), 0, 0, 0, 0)
	b.stream.commands++
}

// flush submits what is recorded and waits for it; the staging buffer
// and the descriptor pool are then free to reuse.
func (b *Backend) flush() {
	st := &b.stream
	if !st.recording {
		return
	}
	must("vkEndCommandBuffer", call(b.l.endCommandBuffer, st.cmd))
	st.recording = false
	must("vkQueueSubmit", call(b.l.queueSubmit, b.queue, 1, uintptr(unsafe.Pointer(&b.s.submit)), uintptr(st.fence)))
	must("vkWaitForFences", call(b.l.waitForFences, b.device, 1, uintptr(unsafe.Pointer(&b.s.fence)), 1, uintptr(^uint64(0))))
	must("vkResetFences", call(b.l.resetFences, b.device, 1, uintptr(unsafe.Pointer(&b.s.fence))))
	must("vkResetCommandPool", call(b.l.resetCommandPool, b.device, uintptr(st.pool), 0))
	if st.sets > 0 {
		must("vkResetDescriptorPool", call(b.l.resetDescriptorPool, b.device, uintptr(st.descPool), 0))
		st.sets = 0
	}
	b.staging.off = 0
	st.commands = 0
	st.flushes++
}

// copyBuffer records a copy of n bytes from src at so to dst at do.
func (b *Backend) copyBuffer(src *buffer, so int64, dst *buffer, do int64, n int64) {
	b.record()
	b.s.copy = bufferCopy{srcOffset: uint64(so), dstOffset: uint64(do), size: uint64(n)}
	call(b.l.cmdCopyBuffer, b.stream.cmd, uintptr(src.h), uintptr(dst.h), 1, uintptr(unsafe.Pointer(&b.s.copy)))
	b.barrier()
}

// zero records filling buf with zero bytes.
func (b *Backend) zero(buf *buffer) {
	b.record()
	call(b.l.cmdFillBuffer, b.stream.cmd, uintptr(buf.h), 0, uintptr(wholeSize), 0)
	b.barrier()
}

// dispatch records kernel k over groups workgroups, with push as its
// push constants and bufs bound in order to its bindings 0, 1, …
func (b *Backend) dispatch(k kernel, groups [3]uint32, push []uint32, bufs ...*buffer) {
	kp := &b.kernels[k]
	if len(bufs) != kernelTable[k].bindings || len(push) != kernelTable[k].push {
		panic(fmt.Sprintf("vulkan: %s: %d buffers and %d push constants", kernelTable[k].name, len(bufs), len(push)))
	}
	for _, g := range groups {
		if g == 0 {
			return
		}
	}
	if b.stream.sets == setsPerPool {
		b.flush()
	}
	b.record()
	st := &b.stream
	b.s.layout = kp.setLayout
	must("vkAllocateDescriptorSets", call(b.l.allocateDescriptorSets, b.device, uintptr(unsafe.Pointer(&b.s.setAlloc)), uintptr(unsafe.Pointer(&b.s.set))))
	st.sets++
	for i, buf := range bufs {
		b.s.infos[i] = descriptorBufferInfo{buffer: buf.h, rng: wholeSize}
		b.s.writes[i].dstSet = b.s.set
	}
	call(b.l.updateDescriptorSets, b.device, uintptr(len(bufs)), uintptr(unsafe.Pointer(&b.s.writes[0])), 0, 0)
	call(b.l.cmdBindPipeline, st.cmd, bindPointCompute, uintptr(kp.pipeline))
	call(b.l.cmdBindDescriptorSets, st.cmd, bindPointCompute, uintptr(kp.layout), 0, 1, uintptr(unsafe.Pointer(&b.s.set)), 0, 0)
	if len(push) > 0 {
		copy(b.s.push[:], push)
		call(b.l.cmdPushConstants, st.cmd, uintptr(kp.layout), stageCompute, 0, uintptr(4*len(push)), uintptr(unsafe.Pointer(&b.s.push[0])))
	}
	call(b.l.cmdDispatch, st.cmd, uintptr(groups[0]), uintptr(groups[1]), uintptr(groups[2]))
	b.barrier()
}

// grid spreads n workgroups over x and y, x at most the device's limit:
// a kernel's workgroup index is y·gl_NumWorkGroups.x + x.
func (b *Backend) grid(n int64, z int) [3]uint32 {
	mx := int64(b.limits.maxComputeWorkGroupCount[0])
	x := min(n, mx)
	if x == 0 {
		return [3]uint32{}
	}
	y := (n + x - 1) / x
	if y > int64(b.limits.maxComputeWorkGroupCount[1]) || z > int(b.limits.maxComputeWorkGroupCount[2]) {
		panic(fmt.Sprintf("vulkan: %d×%d workgroups exceed %s's limits", n, z, b.dev.Name))
	}
	return [3]uint32{uint32(x), uint32(y), uint32(z)}
}
