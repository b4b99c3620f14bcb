#!/usr/bin/env bash
# gpu-build.sh: build, where Go is, what bench/gpu-check.sh runs on a GPU
# machine that has no Go toolchain and no network:
#
#   bench/gpu-build.sh        (from anywhere in the repository)
#
#   bin/folio       CGO_ENABLED=1 go build -trimpath -ldflags='-s -w' -o bin/folio .
#   bin/cuda.test   CGO_ENABLED=1 go test -c -trimpath -ldflags='-s -w' -o bin/cuda.test ./gpu/cuda
#   bin/BUILD       the commit, whether the tree was clean, the Go version, and
#                   the newest glibc symbol version the binaries need
#
# linux/amd64 only (the GPU machines are x86-64); about 30 MB in all, within
# the 64 MiB a device call carries. bin/ is ignored by git: name it in the
# call's `carry`.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(uname -s)/$(uname -m)" != Linux/x86_64 ]; then
	echo "gpu-build: this is $(uname -s)/$(uname -m); build on linux/x86_64 (cgo does not cross-compile here)" >&2
	exit 2
fi
export CGO_ENABLED=1 GOFLAGS=${GOFLAGS:-} PATH="$PATH:/usr/local/go/bin"
mkdir -p bin
go build -trimpath -ldflags='-s -w' -o bin/folio .
go test -c -trimpath -ldflags='-s -w' -o bin/cuda.test ./gpu/cuda
glibc=$( (objdump -T bin/folio bin/cuda.test 2>/dev/null || true) | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
{
	echo "commit $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
	echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) with $(go version)"
	echo "needs ${glibc:-an unknown glibc} or newer"
} >bin/BUILD
cat bin/BUILD
ls -l bin/folio bin/cuda.test
