package cpu

import (
	"encoding/binary"
	"sync"
	"time"
	"unsafe"
)

// ReadBandwidth measures the machine's memory read bandwidth in bytes per
// second: threads threads each read their share of a buffer of size bytes
// (much larger than the caches) with vector loads, five times; the best
// pass counts. Decoding a token reads every weight once, so bandwidth ÷
// model bytes is decode's ceiling. The buffer is freed afterwards.
func ReadBandwidth(threads int, size int64) float64 {
	threads = max(threads, 1)
	per := int(size/int64(threads)) &^ 4095
	raw := make([]byte, per*threads+64)
	buf := raw[int(-uintptr(unsafe.Pointer(&raw[0]))&63):][:per*threads]
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = byte(i >> 12) // fault every page in
	}
	var best float64
	sums := make([]uint64, threads)
	for range 5 {
		var wg sync.WaitGroup
		t0 := time.Now()
		for i := range threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sums[i] = readSum(buf[i*per : (i+1)*per])
			}()
		}
		wg.Wait()
		best = max(best, float64(len(buf))/time.Since(t0).Seconds())
	}
	return best
}

// readSumGo is readSum in plain Go.
func readSumGo(p []byte) uint64 {
	var s0, s1, s2, s3 uint64
	for i := 0; i+32 <= len(p); i += 32 {
		s0 += binary.LittleEndian.Uint64(p[i:])
		s1 += binary.LittleEndian.Uint64(p[i+8:])
		s2 += binary.LittleEndian.Uint64(p[i+16:])
		s3 += binary.LittleEndian.Uint64(p[i+24:])
	}
	return s0 + s1 + s2 + s3
}
