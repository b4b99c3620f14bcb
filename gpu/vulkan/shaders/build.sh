#!/bin/sh
# Compiles every compute shader here to SPIR-V for Vulkan 1.1 (go generate
# in gpu/vulkan runs it). The flags are fixed and carry no paths or debug
# information, so the output depends on the sources and glslc's version
# only: CI compiles again and fails on a difference.
set -eu
cd "$(dirname "$0")"
command -v glslc >/dev/null 2>&1 || { echo "shaders/build.sh: glslc not found (Debian: apt-get install glslc)" >&2; exit 1; }
for src in *.comp; do
	glslc --target-env=vulkan1.1 -O -fshader-stage=compute -o "${src%.comp}.spv" "$src"
done
