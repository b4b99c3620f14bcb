package cmd

import "os"

// gpuSetting is FOLIO_GPU: cpu, cuda or auto (the default, "").
func gpuSetting() string { return os.Getenv("FOLIO_GPU") }
