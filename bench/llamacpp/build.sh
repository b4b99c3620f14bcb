#!/usr/bin/env bash
# Compiles one of this folder's C programs against the llama.cpp libraries
# that ../shared/tools/llamaref installs (installing them on first use) and
# prints the libraries' folder, which the programs take as their first
# argument. Usage (from the repository root): bench/llamacpp/build.sh SRC.c OUT
set -euo pipefail
src=${1:?usage: bench/llamacpp/build.sh SRC.c OUT} out=${2:?usage: bench/llamacpp/build.sh SRC.c OUT}
home=${LLAMAREF_HOME:-$HOME/.cache/llamaref}
../shared/tools/llamaref/llamaref version >/dev/null # installs llama.cpp's libraries on first use
libdir="$home/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"
lib=$(cd "$libdir" && ls libllama.v*.so | head -n1)
ggml=$(cd "$libdir" && ls libggml.v*.so | head -n1)
${CC:-cc} -O2 -std=c11 -o "$out" "$src" -I"$home/include" \
  -L"$libdir" -l:"$lib" -l:"$ggml" -l:libggml-base.so -Wl,-rpath,"$libdir" -ldl
echo "$libdir"
