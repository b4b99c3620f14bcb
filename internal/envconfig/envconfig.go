// Package envconfig is folio's one table of settings read from the
// environment: each one's name, default and help. It is the only package
// that reads the process environment; cmd reads the settings here and
// hands the libraries what they say as options (runner.LoadOptions,
// cuda.Options, installer.Options, server.Config).
package envconfig

import (
	"fmt"
	"os"
	"strings"
)

// Setting is one environment variable folio reads.
type Setting struct {
	Name    string
	Default string // as shown in help; "" where there is none
	Help    string
}

// Settings is the table, in the order `folio serve --help` lists it.
var Settings = []Setting{
	{"FOLIO_HOST", "127.0.0.1:11434", "where serve listens and the other commands find it (host, host:port, :port, http://host:port); 0.0.0.0 serves the network"},
	{"FOLIO_MODELS_PATH", "", "folders of GGUF files, separated like PATH"},
	{"FOLIO_HOME", "~/.folio", "the registry, downloaded models, the persisted prefix cache and the kernel cache"},
	{"FOLIO_GPU", "auto", "where models compute: cpu, cuda, vulkan, or auto (a GPU when one can: CUDA, then a Vulkan GPU; else the CPU)"},
	{"FOLIO_KEEP_ALIVE", "5m", "how long a model stays loaded after its last request"},
	{"FOLIO_MAX_LOADED_MODELS", "3", "models loaded at once"},
	{"FOLIO_MAX_QUEUE", "512", "requests waiting per model before a 503"},
	{"FOLIO_KV_MEMORY", "", "bytes of K/V cache per model (default: grown to what num_ctx needs, within free memory)"},
	{"FOLIO_CONTEXT_LENGTH", "4096", "default num_ctx (at most the model's)"},
	{"FOLIO_KV_CACHE_TYPE", "f16", "K/V cache type: f16, q8_0 (twice the tokens in the same memory, on the CPU) or f32; a model or device it does not suit gets f16, with a warning"},
	{"FOLIO_KV_STORE_MAX", "", "bytes on disk of persisted prefixes, kvcache.db with its WAL; at least 1 MiB (default 10% of free disk, at most 20 GB)"},
	{"FOLIO_KV_REMOTE", "", "redis://host:port/db of a Redis that a fleet of servers shares prefix K/V blocks through (docs/fleet.md); needs FOLIO_KV_REMOTE_KEY"},
	{"FOLIO_KV_REMOTE_KEY", "", "the fleet's secret (at least 16 bytes) sealing shared blocks with HMAC-SHA256: a block that does not verify is never used"},
	{"FOLIO_ORIGINS", "", "browser origins allowed beyond localhost and app pages, comma-separated; * for all"},
	{"FOLIO_MAX_BODY", "33554432", "bytes of a request body (blob uploads are not limited)"},
	{"FOLIO_METRICS_ADDR", "", "a second address (host:port) serving GET /metrics alone, for a scraper that should not reach the API; /metrics is on FOLIO_HOST too"},
	{"FOLIO_MAX_CONNECTIONS", "", "connections open at once (default half the open-file limit; 0: no cap)"},
	{"FOLIO_DEBUG", "0", "1: serve logs at debug level too (the settings at start, what truncation dropped from a prompt)"},
	{"FOLIO_HF_ENDPOINT", "https://huggingface.co", "the host pull fetches hf.co/ names from"},
	{"HF_TOKEN", "", "a Hugging Face token, for gated and private repositories"},
	{"FOLIO_CUDA_PATH", "", "the CUDA toolkit's folder (NVRTC, cuBLAS), searched before CUDA_HOME, CUDA_PATH and /usr/local/cuda"},
	{"CUDA_HOME", "", "the CUDA toolkit's folder, after FOLIO_CUDA_PATH"},
	{"CUDA_PATH", "", "the CUDA toolkit's folder, after CUDA_HOME"},
	{"FOLIO_CUDA_SYNC", "0", "1: wait for each GPU kernel as it is launched, so that a fault names its kernel (slow)"},
	{"FOLIO_CUDA_GRAPHS", "0", "1: replay decode steps as CUDA graphs"},
	{"FOLIO_VULKAN_DEVICE", "", "the Vulkan device, by its index or part of its name as `folio gpu info` lists them (default: the first discrete GPU, else integrated, else the CPU's lavapipe)"},
	{"FOLIO_CPU_LEVEL", "", "the CPU kernels' instruction set: scalar, avx2, avxvnni, avx512, avx512bf16 (AVX-512 with BF16 products for attention over f16 and q8_0 caches) or amx (AVX-512 with AMX tiles: INT8 for prefill's matmuls, BF16 for attention over f16 and q8_0 caches; neon or i8mm (its int8 matrix multiply for prefill) on arm64), at most what the CPU has (default its best); bench --vs-llamacpp then runs llama.cpp's matching build"},
	{"GOMAXPROCS", "", "Go's; when unset, folio runs one more than its CPU threads so that one is always idle"},
	{"LLAMAREF", "../shared/tools/llamaref/llamaref", "the llamaref command bench --vs-llamacpp runs"},
}

// Get is the setting name's value, "" when unset. name must be in the
// table: a setting not listed there is a mistake of folio's.
func Get(name string) string {
	for _, s := range Settings {
		if s.Name == name {
			return os.Getenv(name)
		}
	}
	panic(fmt.Sprintf("envconfig: %s is not in the settings table", name))
}

// AsMap is every setting's current value (its default where it is unset).
func AsMap() map[string]string {
	m := make(map[string]string, len(Settings))
	for _, s := range Settings {
		v := Get(s.Name)
		if v == "" {
			v = s.Default
		}
		m[s.Name] = v
	}
	return m
}

// Usage lists the settings as `folio serve --help` shows them: one line
// each, name, default and help.
func Usage() string {
	var b strings.Builder
	for _, s := range Settings {
		def := s.Default
		if def == "" {
			def = "unset"
		}
		fmt.Fprintf(&b, "  %-24s (%s) %s\n", s.Name, def, s.Help)
	}
	return b.String()
}
