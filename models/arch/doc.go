// Package arch holds the forward passes of the llama family — llama
// (Llama 2/3, Mistral, SmolLM, TinyLlama), qwen2 and qwen3 — written once
// against gpu.Backend, one file per architecture with a shape comment on
// every weight and activation.
//
// A forward pass takes a ragged batch (gpu.Batch): rows of several
// sequences, each with its positions and block table, mixing prompt chunks
// and single decode tokens. K and V go into the paged pool through the
// block tables and attention reads them back the same way; the block
// tables themselves come from paged/ through the runner.
package arch
