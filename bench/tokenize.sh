#!/usr/bin/env bash
# Tokenizer throughput, folio next to llama.cpp, on the same 1 MiB of mixed text
# (fixtures.MixedText) and the same vocabularies. Prints one line per vocab
# with both medians and the ratio folio/llama.cpp (above 1: folio is faster).
# Usage: bench/tokenize.sh [VOCAB.gguf ...]   (default: the vocabs in ../shared/models)
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
libdir=$(bench/llamacpp/build.sh bench/llamacpp/tokbench.c "$work/tokbench")
go build -o "$work/gotokbench" ./bench/tokbench
"$work/gotokbench" -write-text "$work/text.txt"

vocabs=("$@")
[ ${#vocabs[@]} -gt 0 ] || vocabs=(../shared/models/ggml-vocab-{llama-spm,phi-3,gpt-2,deepseek-coder,deepseek-llm,falcon,mpt,refact,starcoder,bert-bge}.gguf)
printf '%-28s %10s %10s %8s %9s %9s\n' vocab folio_MB/s llama_MB/s ratio tok_folio tok_llama
for v in "${vocabs[@]}"; do
  a=$("$work/gotokbench" -model "$v")
  b=$("$work/tokbench" "$libdir" "$v" "$work/text.txt" 7)
  python3 - "$v" "$a" "$b" <<'PY'
import json, os, sys
name, a, b = os.path.basename(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
print(f"{name:<28} {a['mb_per_s']:10.2f} {b['mb_per_s']:10.2f} {a['mb_per_s']/b['mb_per_s']:8.2f} {a['tokens']:9d} {b['tokens']:9d}")
PY
done
