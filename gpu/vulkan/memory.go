package vulkan

import (
	"fmt"
	"unsafe"
)

// buffer is a VkBuffer bound to memory of its own, mapped when the host
// sees that memory.
type buffer struct {
	h      uint64 // VkBuffer
	mem    uint64 // VkDeviceMemory
	size   int64  // bytes, a multiple of 4
	mapped unsafe.Pointer
}

// host is the buffer's memory as host bytes; nil when it is not mapped.
func (b *buffer) host() []byte {
	if b.mapped == nil {
		return nil
	}
	return unsafe.Slice((*byte)(b.mapped), b.size)
}

// memoryTypeIndex is the first memory type allowed by bits with every
// flag of need, preferring one with every flag of want too; -1 when none
// has need.
func memoryTypeIndex(p *physicalDeviceMemoryProperties, bits, need, want uint32) int {
	found := -1
	for i := range min(int(p.memoryTypeCount), len(p.memoryTypes)) {
		f := p.memoryTypes[i].propertyFlags
		if bits&(1<<i) == 0 || f&need != need {
			continue
		}
		if f&want == want {
			return i
		}
		if found < 0 {
			found = i
		}
	}
	return found
}

// unifiedMemory reports whether device memory is also the host's: an
// integrated GPU or a CPU device (lavapipe) with a memory type that is
// device-local, host-visible and coherent. Tensors then live in mapped
// memory, and weights are written in place without a staging copy. A
// discrete GPU's host-visible device memory (a PCIe BAR) is not counted:
// it is small and slow to read.
func unifiedMemory(devType uint32, p *physicalDeviceMemoryProperties) bool {
	if devType != typeIntegratedGPU && devType != typeCPU {
		return false
	}
	return memoryTypeIndex(p, ^uint32(0), memDeviceLocal|memHostVisible|memHostCoherent, 0) >= 0
}

// newBuffer makes a buffer of at least n bytes for storage and copies,
// in device memory (mapped when the memory is unified) or, with host,
// in host-visible coherent memory for staging. what names it in the error.
func (b *Backend) newBuffer(n int64, host bool, what string) (*buffer, error) {
	n = max(4, (n+3)&^3)
	if n > int64(b.limits.maxStorageBufferRange) {
		return nil, fmt.Errorf("vulkan: %s takes %d bytes, more than %s's largest storage buffer (%d)",
			what, n, b.dev.Name, b.limits.maxStorageBufferRange)
	}
	var ps pins
	defer ps.unpin()
	ci := &bufferCreateInfo{sType: stBufferCreateInfo, size: uint64(n), usage: bufferStorage | bufferTransferSrc | bufferTransferDst}
	buf := &buffer{size: n}
	h := new(uint64)
	if err := check("vkCreateBuffer", call(b.l.createBuffer, b.device, arg(&ps, ci), 0, arg(&ps, h))); err != nil {
		return nil, fmt.Errorf("vulkan: %s: %w", what, err)
	}
	buf.h = *h
	req := new(memoryRequirements)
	call(b.l.getBufferMemoryRequirements, b.device, uintptr(buf.h), arg(&ps, req))
	need, want := uint32(memDeviceLocal), uint32(0)
	switch {
	case host:
		need, want = memHostVisible|memHostCoherent, memHostCached
	case b.unified:
		need = memDeviceLocal | memHostVisible | memHostCoherent
	}
	ti := memoryTypeIndex(&b.mem, req.memoryTypeBits, need, want)
	if ti < 0 {
		call(b.l.destroyBuffer, b.device, uintptr(buf.h), 0)
		return nil, fmt.Errorf("vulkan: %s: %s has no memory type with flags %#x for a buffer", what, b.dev.Name, need)
	}
	ai := &memoryAllocateInfo{sType: stMemoryAllocateInfo, allocationSize: req.size, memoryTypeIndex: uint32(ti)}
	mem := new(uint64)
	if err := check("vkAllocateMemory", call(b.l.allocateMemory, b.device, arg(&ps, ai), 0, arg(&ps, mem))); err != nil {
		call(b.l.destroyBuffer, b.device, uintptr(buf.h), 0)
		return nil, fmt.Errorf("vulkan: allocating %d bytes for %s on %s (%d in use): %w", n, what, b.dev.Name, b.used, err)
	}
	buf.mem = *mem
	free := func(err error) (*buffer, error) {
		call(b.l.destroyBuffer, b.device, uintptr(buf.h), 0)
		call(b.l.freeMemory, b.device, uintptr(buf.mem), 0)
		return nil, fmt.Errorf("vulkan: %s: %w", what, err)
	}
	if err := check("vkBindBufferMemory", call(b.l.bindBufferMemory, b.device, uintptr(buf.h), uintptr(buf.mem), 0)); err != nil {
		return free(err)
	}
	if host || b.unified {
		p := new(unsafe.Pointer)
		if err := check("vkMapMemory", call(b.l.mapMemory, b.device, uintptr(buf.mem), 0, uintptr(wholeSize), 0, arg(&ps, p))); err != nil {
			return free(err)
		}
		buf.mapped = *p
	}
	b.buffers[buf] = struct{}{}
	b.used += n
	return buf, nil
}

// freeBuffer releases buf, which no queued command may still use.
func (b *Backend) freeBuffer(buf *buffer) {
	if buf.mapped != nil {
		call(b.l.unmapMemory, b.device, uintptr(buf.mem))
	}
	call(b.l.destroyBuffer, b.device, uintptr(buf.h), 0)
	call(b.l.freeMemory, b.device, uintptr(buf.mem), 0)
	delete(b.buffers, buf)
	b.used -= buf.size
}

// staging is a host-visible buffer that uploads and downloads pass
// through, filled from its start between submissions: a region handed
// out stays valid until the next flush.
type staging struct {
	buf *buffer
	off int64
}

// minStaging is the staging buffer's first size; it grows to the largest
// copy asked for.
const minStaging = 4 << 20

// stage returns a region of n bytes of the staging buffer: its offset
// and its host bytes. A region that does not fit after what is queued
// flushes the queue first.
func (b *Backend) stage(n int64) (int64, []byte) {
	s := &b.staging
	if s.buf != nil && s.off+n > s.buf.size {
		b.flush()
	}
	if s.buf == nil || n > s.buf.size {
		if s.buf != nil {
			b.freeBuffer(s.buf)
			s.buf = nil
		}
		buf, err := b.newBuffer(max(n, minStaging), true, "the staging buffer")
		if err != nil {
			panic(err)
		}
		s.buf = buf
	}
	off := s.off
	s.off = (off + n + 15) &^ 15
	return off, s.buf.host()[off : off+n]
}

// write copies data into buf at off, in queue order: through the
// staging buffer, in pieces no larger than it.
func (b *Backend) write(buf *buffer, off int64, data []byte) {
	for len(data) > 0 {
		n := min(int64(len(data)), max(minStaging, b.stagingCap()))
		so, host := b.stage(n)
		copy(host, data[:n])
		b.copyBuffer(b.staging.buf, so, buf, off, n)
		data, off = data[n:], off+n
	}
}

// stagingCap is the staging buffer's size, 0 before it exists.
func (b *Backend) stagingCap() int64 {
	if b.staging.buf == nil {
		return 0
	}
	return b.staging.buf.size
}

// read copies n bytes of buf at off into dst once every queued command
// has run.
func (b *Backend) read(dst []byte, buf *buffer, off int64) {
	if buf.mapped != nil {
		b.flush()
		copy(dst, buf.host()[off:])
		return
	}
	for len(dst) > 0 {
		n := min(int64(len(dst)), max(minStaging, b.stagingCap()))
		so, host := b.stage(n)
		b.copyBuffer(buf, off, b.staging.buf, so, n)
		b.flush()
		copy(dst[:n], host)
		dst, off = dst[n:], off+n
	}
}
