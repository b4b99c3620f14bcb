#!/usr/bin/env bash
# Time `folio show` on a synthetic ~1.3 GB model (llama-1b shapes, Q8_0), cold
# page cache where the machine allows dropping it, next to the independent
# GGUF parser of ../shared/tools/llamaref (`llamaref info`) on the same file.
# Usage: bench/show.sh [WORKDIR]   (needs ~1.4 GB free in WORKDIR)
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-$(mktemp -d)}
llamaref=../shared/tools/llamaref/llamaref
go build -o "$work/folio" .
model="$work/llama-1b-q8_0.gguf"
[ -f "$model" ] || "$work/folio" dev synth --preset llama-1b --type q8_0 -o "$model"

now() { date +%s.%N; }
runs=5
drop() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true; }

t_folio=0; t_ref=0
for _ in $(seq $runs); do
  drop; a=$(now); "$work/folio" show "$model" >/dev/null; b=$(now)
  t_folio=$(echo "$t_folio + $b - $a" | bc -l)
  drop; a=$(now); "$llamaref" info "$model" --max-array 1 --compact >/dev/null 2>&1; b=$(now)
  t_ref=$(echo "$t_ref + $b - $a" | bc -l)
done
rss=$( { /usr/bin/time -f %M "$work/folio" show "$model" >/dev/null; } 2>&1 )
printf 'file: %s (%s bytes)\n' "$model" "$(stat -c %s "$model")"
printf 'folio show:    %.3f s mean of %d (cold cache when permitted), max RSS %s KB\n' "$(echo "$t_folio / $runs" | bc -l)" $runs "$rss"
printf 'llamaref info: %.3f s mean of %d (@huggingface/gguf under Node)\n' "$(echo "$t_ref / $runs" | bc -l)" $runs
printf 'ratio folio/llamaref: %.3f\n' "$(echo "$t_folio / $t_ref" | bc -l)"
