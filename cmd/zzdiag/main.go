package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"folio/runner"
)

func main() {
	m, err := runner.Load(os.Args[1], runner.LoadOptions{Device: "cpu", Threads: 2, NumCtx: 192, NumBatch: 128, BlockSize: 16, MaxSeqs: 1, KVType: "f16"})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%+v\n", m.Bytes)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("heap alloc %d MB, sys %d MB\n", ms.HeapAlloc>>20, ms.Sys>>20)
	b, _ := os.ReadFile("/proc/self/status")
	os.Stdout.Write(b[:0])
	for _, l := range []string{"VmHWM", "RssAnon", "RssFile"} {
		_ = l
	}
	fmt.Println(string(b))
	f, _ := os.Create("/tmp/heap.prof")
	pprof.WriteHeapProfile(f)
	f.Close()
	runtime.KeepAlive(m)
}
