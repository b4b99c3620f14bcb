package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"folio/gpu/cuda"
	"folio/gpu/vet"
	"folio/gpu/vulkan"
	"folio/installer"
	"folio/internal/envconfig"
	"folio/models"
	"folio/runner"
	"folio/store"
)

// The libraries read no environment: cmd reads the settings of
// internal/envconfig's table here and passes what they say as options.

// gpuSetting is FOLIO_GPU: cpu, cuda, vulkan or auto (the default, "").
func gpuSetting() string { return envconfig.Get("FOLIO_GPU") }

// modelsPath is FOLIO_MODELS_PATH's folders.
func modelsPath() []string { return filepath.SplitList(envconfig.Get("FOLIO_MODELS_PATH")) }

// locate is models.LocateIn over FOLIO_MODELS_PATH.
func locate(name string) (string, error) { return models.LocateIn(name, modelsPath()) }

// cudaOptions are the CUDA backend's options the settings give: the kernel
// cache in FOLIO_HOME (else the user's cache folder), FOLIO_CUDA_SYNC,
// FOLIO_CUDA_GRAPHS and the toolkit's folders.
func cudaOptions() cuda.Options {
	opt := cuda.Options{Sync: envconfig.Get("FOLIO_CUDA_SYNC") == "1", Graphs: envconfig.Get("FOLIO_CUDA_GRAPHS") == "1",
		Toolkit: []string{envconfig.Get("FOLIO_CUDA_PATH"), envconfig.Get("CUDA_HOME"), envconfig.Get("CUDA_PATH")}}
	if h := envconfig.Get("FOLIO_HOME"); h != "" {
		opt.CacheDir = filepath.Join(h, "cache", "cuda")
	}
	return opt
}

// deviceChecker is the process's gpu/vet checker, its verdicts in FOLIO_HOME
// (memory only when there is no home): one per process, so that a device
// that failed is reported once.
var deviceChecker = sync.OnceValue(func() *vet.Checker {
	home, err := folioHome()
	if err != nil {
		home = ""
	}
	return vet.New(home, Version)
})

// vulkanOptions are the Vulkan backend's options from the settings:
// FOLIO_VULKAN_DEVICE.
func vulkanOptions() vulkan.Options {
	return vulkan.Options{Device: envconfig.Get("FOLIO_VULKAN_DEVICE")}
}

// withDevice is opt with the device and GPU options the settings give,
// and the first-load check of a GPU (gpu/vet), whose verdicts FOLIO_HOME
// keeps.
func withDevice(opt runner.LoadOptions) runner.LoadOptions {
	opt.Device, opt.CUDA, opt.Vulkan, opt.Vet = gpuSetting(), cudaOptions(), vulkanOptions(), deviceChecker().Check
	return opt
}

// loadModel loads path with opt and the settings' device, and says on
// stderr why the model is not where FOLIO_GPU asked, when it is not.
func loadModel(path string, opt runner.LoadOptions) (*runner.Model, error) {
	m, err := runner.Load(path, withDevice(opt))
	if err == nil && m.Notice != "" {
		fmt.Fprintf(os.Stderr, "folio: %s\n", m.Notice)
	}
	return m, err
}

// installOptions are the installer's options for home and st with the
// settings': FOLIO_HF_ENDPOINT, HF_TOKEN and FOLIO_MODELS_PATH.
func installOptions(home string, st *store.Registry) installer.Options {
	return installer.Options{Home: home, Store: st, HFEndpoint: envconfig.Get("FOLIO_HF_ENDPOINT"),
		HFToken: envconfig.Get("HF_TOKEN"), ModelDirs: modelsPath()}
}

// withCUDA is opt with the kernel cache and toolkit folders the settings
// give, and their FOLIO_CUDA_SYNC and FOLIO_CUDA_GRAPHS added.
func withCUDA(opt cuda.Options) cuda.Options {
	set := cudaOptions()
	opt.Toolkit, opt.Sync, opt.Graphs = set.Toolkit, opt.Sync || set.Sync, opt.Graphs || set.Graphs
	if opt.CacheDir == "" {
		opt.CacheDir = set.CacheDir
	}
	return opt
}
