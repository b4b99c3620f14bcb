#!/bin/sh
# Compiles every compute shader here to SPIR-V for Vulkan 1.1 (go generate
# in gpu/vulkan runs it), and the kernels that reduce across invocations
# (their reductions in reduce.glsl or matmul.glsl) a second time with
# -DSUBGROUPS into NAME_sg.spv, which Open takes on devices whose compute
# shaders have subgroup arithmetic. The flags are fixed and carry no paths
# or debug information, so the output depends on the sources and glslc's
# version only: CI compiles again and fails on a difference.
set -eu
cd "$(dirname "$0")"
command -v glslc >/dev/null 2>&1 || { echo "shaders/build.sh: glslc not found (Debian: apt-get install glslc)" >&2; exit 1; }
for src in *.comp; do
	glslc --target-env=vulkan1.1 -O -fshader-stage=compute -o "${src%.comp}.spv" "$src"
done
for src in rmsnorm.comp layernorm.comp softmax.comp matmul_*.comp; do
	glslc --target-env=vulkan1.1 -O -fshader-stage=compute -DSUBGROUPS -o "${src%.comp}_sg.spv" "$src"
done
