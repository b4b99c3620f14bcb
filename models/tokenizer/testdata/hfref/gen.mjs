// gen.mjs: the deterministic test strings of dump.mjs. generate(seed) returns
// [{kind, text}], the same list for the same seed on any machine.
//
// The strings avoid what the reference (JavaScript regular expressions) and
// Hugging Face / llama.cpp classify differently rather than what tokenizers
// get wrong: U+0085 and U+FEFF (\s in one, not the other), lone surrogates,
// and letters added in recent Unicode versions (Go, V8 and llama.cpp carry
// different Unicode tables). All kinds but "nfd" are NFC-normalized.

// rng is mulberry32: small, fast and the same everywhere.
function rng(seed) {
  let a = seed >>> 0;
  const f = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const r = {
    f,
    int: (n) => Math.floor(f() * n),
    range: (lo, hi) => lo + r.int(hi - lo + 1),
    chance: (p) => f() < p,
    pick: (list) => list[r.int(list.length)],
    cp: (lo, hi) => String.fromCodePoint(r.range(lo, hi)),
    cps: (lo, hi, n) => Array.from({ length: n }, () => r.cp(lo, hi)).join(""),
    times: (n, fn) => Array.from({ length: n }, (_, i) => fn(i)),
  };
  return r;
}

const words = (s) => s.trim().split(/\s+/);

const EN = words(`the of and to a in is it you that he was for on are with as I his they be at one
have this from or had by word but what some we can out other were all there when up use your how
said an each she which do their time if will way about many then them would like so these her long
make thing see him two has look more day could go come did number people water first who may down
been now find any new work part take get place made live where after back little only round man
year came show every good me give our under name very through just form sentence great think say
help line turn cause much mean before move right old same tell does set three want air well also
tokenizer llama GGUF quantization Hello World HTTP JSON API URL iPhone McDonald O'Neil camelCase
snake_case UPPER_CASE x86_64 e-mail co-operate`);

const CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d"];

const LATIN = words(`café naïve résumé Führer São Paulo Ångström façade coöperate jalapeño mañana
über straße déjà vu Český Krumlov Łódź Kraków Dvořák żółć gęślą Tiếng Việt Nguyễn Đà Nẵng İstanbul
ığdır şçğ Þórr Ægir Øresund ÉCOLE œuvre Œdipe ﬁnance garçon Ñandú Ärger Öl Übermut Ĳssel Škoda
Brașov Mănăstirea Ćevapi Ħamrun Ŀlibre ångström crème brûlée piñata`);

const CYRILLIC = words(`привет мир это пример текста на русском языке который содержит разные слова
Україна Київ їжак ґанок Београд Ђорђе љубав Қазақстан Ёлка ЁЖИК щётка съешь ещё этих мягких
французских булок да выпей чаю Москва София Беларусь ПРИВЕТ Ўзбекистон`);

const ARABIC = words(`مرحبا بالعالم هذا نص عربي اللغة العربية جميلة السلام عليكم مَرْحَبًا كِتَابٌ
مُحَمَّد شُكْرًا سلام دنیا فارسی پژوهش اردو ہے یہ ـــ القاهرة`);

const DEVANAGARI = words(`नमस्ते दुनिया यह एक परीक्षण है हिन्दी भाषा क़िला ज़रूर मैं तुम्हें
प्रधानमंत्री विज्ञान संस्कृतम् श्री ॐ क्षत्रिय`);

const SCRIPTS = words(`Γειά σου Κόσμε ελληνικά ΑΘΗΝΑ ἀρχή שלום עולם עִבְרִית สวัสดีชาวโลก ภาษาไทย
გამარჯობა Բարեւ ሰላም বাংলা தமிழ் ಕನ್ನಡ ગુજરાતી ਪੰਜਾਬੀ සිංහල ລາວ မြန်မာ ខ្មែរ ᏣᎳᎩ`);

const CJK_PHRASES = words(`你好，世界。 我们今天去学校。 人工智能正在改变世界！ 北京市朝阳区
こんにちは、世界！ 東京都渋谷区 カタカナとひらがな 日本語の文章です。 안녕하세요 세계 한국어
「引用」 （括弧） 2024年3月15日 第3章 ＡＢＣ１２３ 繁體中文測試 粵語嘅句子`);

const EMOJI = ["🦙", "😀", "😂", "🥲", "👍", "👍🏽", "👋🏿", "❤️", "❤", "🔥", "✨", "🚀", "🐍", "🙈", "🎉",
  "☕", "⭐", "✅", "❌", "⚠️", "☀️", "♻️", "™", "©", "🫠", "🧑‍💻", "👩🏽‍💻", "👨‍👩‍👧‍👦",
  "🏳️‍🌈", "🏴‍☠️", "👁️‍🗨️", "🧑🏿‍🚀", "❤️‍🔥", "👨‍❤️‍💋‍👨", "🐕‍🦺", "🫱🏼‍🫲🏾", "1️⃣", "#️⃣", "*️⃣",
  "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "🇺🇳"];
const FLAGS = words("US FR JP DE IN BR CN UA ZA KR GB IT ES MX NG EG AR CA AU SE");

const SPECIAL = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
  "<|eot_id|>", "<|reserved_special_token_0|>", "<|reserved_special_token_250|>",
  "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|vision_pad|>",
  "<think>", "</think>", "<tool_call>", "</tool_call>", "<tool_response>"];
const NOT_SPECIAL = ["<|eot_id", "eot_id|>", "<|im_start", "<|", "|>", "< think>", "<THINK>", "<|EOT_ID|>",
  "<|reserved_special_token_251|>", "[INST]", "[/INST]", "<s>", "</s>", "<unk>", "<|im_start |>"];
const TEMPLATES = [
  (t) => `<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n${t}<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n${t}<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n`,
  (t) => `<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n${t}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n`,
  (t) => `<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "${t}"}}\n</tool_call><|im_end|>`,
  (t) => `<|fim_prefix|>def f(x):\n    ${t}<|fim_suffix|>\n    return y<|fim_middle|>`,
];

const PUNCT = "!?.,;:-_=+*/\\|<>()[]{}@#$%^&~`'\"";
const PUNCT_RUNS = ["...", "!!!", "?!?!", "--", "->", "=>", ":=", "!=", "<=>", "/**/", "```", "~~~", "***",
  "###", "----", "«»", "„“", "—", "–", "…", "¿¡", "•", "§", "©", "®", "‼", "⁉", "''", '""', "::", "&&", "||"];
const SPACES = [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\n\n\n", "\r\n", "\r\n\r\n", "\r", " \n", "\n ",
  "   \n", "\t\n", " \t ", "\n\t", "\u00a0", "\u3000", "\u2009", "\u202f", "\v", "\f", "        "];

// sentence joins n words of list with spaces and, sometimes, punctuation.
function sentence(r, list, n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    out.push(r.pick(list));
    if (r.chance(0.12)) out.push(r.pick([",", ".", "!", "?", ";", ":"]));
  }
  return out.join(" ").replace(/ ([,.!?;:])/g, "$1");
}

const ident = (r) => r.pick(["x", "err", "buf", "n", "ctx", "tok", "ids", "cfg", "req", "resp", "kvCache",
  "maxLen", "i", "j", "userID", "HTTPServer", "_tmp", "__init__", "self", "data2", "ÄÖÜ", "名前"]);
const num = (r) => r.pick([String(r.int(10)), String(r.int(1000)), String(r.int(1e6)), (r.f() * 100).toFixed(r.int(5)),
  `0x${r.int(1 << 30).toString(16)}`, `${r.int(10)}e-${r.int(20)}`, `-${r.int(500)}`, "1_000_000"]);
const indent = (r, d) => (r.chance(0.8) ? "\t" : "    ").repeat(d);

function goCode(r) {
  const T = r.pick(["Tokenizer", "Server", "Cache", "Block", "Vocab"]);
  const typ = () => r.pick(["int", "int32", "string", "[]byte", "error", "float32", "map[string]int", "*" + T, "chan struct{}", "[]int32"]);
  const lines = r.times(r.range(2, 9), () => r.pick([
    () => `func (${ident(r)} *${T}) ${r.pick(["Encode", "Get", "Run", "alloc"])}(${ident(r)} ${typ()}, ${ident(r)} ${typ()}) (${typ()}, error) {`,
    () => `${indent(r, 1)}if err != nil {\n${indent(r, 2)}return nil, fmt.Errorf("${r.pick(EN)} %s: %w", ${ident(r)}, err)\n${indent(r, 1)}}`,
    () => `${indent(r, 1)}for ${ident(r)}, ${ident(r)} := range ${ident(r)} {`,
    () => `${indent(r, 2)}${ident(r)} += ${num(r)}`,
    () => `${indent(r, 1)}${ident(r)} := make([]int32, 0, ${num(r)})`,
    () => `// ${sentence(r, EN, r.range(3, 12))}`,
    () => `${indent(r, 1)}switch ${ident(r)} {\n${indent(r, 1)}case ${num(r)}, ${num(r)}:`,
    () => `}`,
    () => `package ${r.pick(["main", "tokenizer", "gguf"])}`,
    () => `import (\n\t"fmt"\n\t"os"\n)`,
    () => `type ${T} struct {\n\t${ident(r)} ${typ()} \`json:"${r.pick(EN)},omitempty"\`\n}`,
    () => `${indent(r, 1)}x := []float32{${num(r)}, ${num(r)}}; y = x[i+1:j-1] // ${r.pick(EN)}`,
    () => `${indent(r, 1)}go func() { defer wg.Done(); ch <- ${ident(r)} }()`,
  ])());
  return lines.join(r.chance(0.9) ? "\n" : "\r\n") + (r.chance(0.5) ? "\n" : "");
}

function pythonCode(r) {
  const lines = r.times(r.range(2, 9), () => r.pick([
    () => `def ${ident(r)}(${ident(r)}, ${ident(r)}=${num(r)}, *args, **kwargs):`,
    () => `    return [${ident(r)} ** 2 for ${ident(r)} in range(${num(r)})]`,
    () => `class ${r.pick(["Model", "Vocab", "Tok"])}(object):`,
    () => `    """${sentence(r, EN, r.range(3, 10))}."""`,
    () => `print(f"{${ident(r)}:>8.3f} {${ident(r)}!r}")`,
    () => `if __name__ == "__main__":`,
    () => `    with open("${r.pick(EN)}.txt", "rb") as fh:`,
    () => `        data = fh.read()  # ${sentence(r, EN, r.range(2, 6))}`,
    () => `# ${sentence(r, EN, r.range(3, 12))}`,
    () => `f = lambda x, y: x @ y + ${num(r)}`,
    () => `${ident(r)} = {'a': ${num(r)}, "b": [1, 2.5e-3, None, True]}`,
    () => `@dataclass\nclass Point:\n    x: int = 0\n    y: int = 0`,
    () => `    async def run(self) -> None:\n        await asyncio.sleep(${num(r)})`,
    () => `\ttry:\n\t\tpass\n\texcept (ValueError, KeyError) as e:\n\t\traise`,
  ])());
  return lines.join("\n") + (r.chance(0.5) ? "\n" : "");
}

function jsonValue(r, depth) {
  const k = depth > 2 ? r.int(4) : r.int(7);
  switch (k) {
    case 0: return r.pick([true, false, null]);
    case 1: return Number(num(r).replace(/_/g, "")) || r.int(100);
    case 2: return r.pick([sentence(r, EN, r.range(1, 5)), r.pick(LATIN), r.pick(CJK_PHRASES), r.pick(EMOJI), "a\"b\\c", "tab\there", "line\nbreak"]);
    case 3: return r.f() * 1e6 - 5e5;
    case 4: case 5:
      return Object.fromEntries(r.times(r.range(1, 4), () => [r.pick(["id", "name", "model", "messages", "role", "content", "stream", "options", "num_ctx", "temperature", "ключ", "名前"]), jsonValue(r, depth + 1)]));
    default: return r.times(r.range(0, 4), () => jsonValue(r, depth + 1));
  }
}

function cjk(r) {
  return r.times(r.range(1, 5), () => r.pick([
    () => r.cps(0x4e00, 0x9fff, r.range(1, 30)), // CJK unified ideographs
    () => r.cps(0x3041, 0x3096, r.range(1, 12)), // hiragana
    () => r.cps(0x30a1, 0x30fa, r.range(1, 12)), // katakana
    () => r.cps(0xac00, 0xd7a3, r.range(1, 10)), // hangul syllables
    () => r.pick(CJK_PHRASES),
    () => r.pick(["，", "。", "！", "？", "「", "」", "（", "）", "：", "；", "、", "・", "ー", "〜"]),
    () => r.pick(EN),
    () => String(r.int(100000)),
  ])()).join(r.pick(["", "", " ", "\n"]));
}

function emoji(r) {
  return r.times(r.range(1, 8), () => r.pick([
    () => r.pick(EMOJI),
    () => r.pick(EMOJI) + r.cp(0x1f3fb, 0x1f3ff), // skin tone
    () => [...r.pick(FLAGS)].map((c) => String.fromCodePoint(0x1f1e6 + c.charCodeAt(0) - 65)).join(""),
    () => r.cps(0x1f600, 0x1f64f, r.range(1, 4)),
    () => r.cps(0x1f300, 0x1f5ff, r.range(1, 3)),
    () => sentence(r, EN, r.range(1, 4)),
  ])()).join(r.pick(["", " ", "  ", "\n", " "]));
}

function numbers(r) {
  return r.times(r.range(1, 6), () => r.pick([
    () => r.times(r.range(1, 50), () => r.int(10)).join(""),
    () => r.int(1e9).toLocaleString("en-US"),
    () => num(r),
    () => `${r.range(1990, 2030)}-${String(r.range(1, 12)).padStart(2, "0")}-${String(r.range(1, 28)).padStart(2, "0")}`,
    () => `${r.int(24)}:${String(r.int(60)).padStart(2, "0")}:${String(r.int(60)).padStart(2, "0")}`,
    () => `v${r.int(10)}.${r.int(20)}.${r.int(100)}`,
    () => `$${r.int(1e6).toLocaleString("en-US")}.${String(r.int(100)).padStart(2, "0")}`,
    () => `${r.int(101)}%`,
    () => `${r.pick(EN)}${r.int(1000)}${r.pick(EN)}${r.int(1e6)}`,
    () => `+1 (${r.range(200, 999)}) ${r.range(100, 999)}-${r.range(1000, 9999)}`,
    () => r.pick(["٠١٢٣٤٥٦٧٨٩", "१२३४", "①②③", "½", "²³", "１２３", "Ⅻ", "٣.١٤", "໑໒", "𝟙𝟚𝟛"]),
    () => r.times(r.range(2, 6), () => r.int(10000)).join(r.pick([" ", ",", ", ", ".", "/", "-", "x", "+"])),
  ])()).join(r.pick([" ", "", ", ", "\n", " and "]));
}

function whitespace(r) {
  const n = r.range(0, 6);
  let s = r.chance(0.4) ? r.pick(SPACES) : "";
  for (let i = 0; i < n; i++) {
    s += r.pick([r.pick(EN), r.pick(EN), num(r), r.pick(PUNCT_RUNS), r.pick(CYRILLIC)]);
    s += r.times(r.range(1, 3), () => r.pick(SPACES)).join("");
  }
  if (n === 0) s += r.times(r.range(1, 6), () => r.pick(SPACES)).join("");
  return r.chance(0.5) ? s.trimEnd() + r.pick(SPACES) : s;
}

function casing(r, s) {
  switch (r.int(4)) {
    case 0: return s.toUpperCase();
    case 1: return [...s].map((c) => (r.chance(0.5) ? c.toUpperCase() : c)).join("");
    default: return s;
  }
}

function contractions(r) {
  return r.times(r.range(1, 8), () => r.pick([
    () => casing(r, r.pick(["I", "you", "they", "she", "he", "it", "we", "don", "can", "won", "Bob", "O'Reilly"]) + r.pick(CONTRACTIONS)),
    () => casing(r, r.pick(CONTRACTIONS)),
    () => r.pick(["rock'n'roll", "the 90's", "'twas", "y'all'd've", "''s", "'S'", "it’s", "I’ll", "‘quoted’", "'quoted'", "don''t", "'s's", "ma'am", "'LL"]),
    () => r.pick(EN),
  ])()).join(r.pick([" ", " ", "", ", ", "\n", "  "]));
}

function punctuation(r) {
  return r.times(r.range(1, 6), () => r.pick([
    () => r.times(r.range(1, 12), () => PUNCT[r.int(PUNCT.length)]).join(""),
    () => r.pick(PUNCT_RUNS) + r.pick(["", "", "\n", "\r\n", "\n\n"]),
    () => r.pick(EN),
  ])()).join(r.pick(["", " ", " ", "\n"]));
}

const script = (list) => (r) => {
  let s = sentence(r, list, r.range(1, 12));
  if (r.chance(0.3)) s = casing(r, s);
  if (r.chance(0.3)) s += r.pick([" ", "\n", "، ", "। ", " — "]) + r.pick([num(r), r.pick(EN), r.pick(EMOJI)]);
  return s;
};

function special(r) {
  if (r.chance(0.25)) return r.pick(TEMPLATES)(sentence(r, EN, r.range(1, 8)));
  return r.times(r.range(1, 6), () => r.pick([
    () => r.pick(SPECIAL), () => r.pick(SPECIAL), () => r.pick(NOT_SPECIAL),
    () => sentence(r, EN, r.range(1, 5)), () => r.pick(SPACES), () => r.pick(EMOJI), () => r.pick(CJK_PHRASES),
  ])()).join(r.pick(["", "", " ", "\n"]));
}

function nfd(r) {
  return r.pick([
    () => sentence(r, LATIN, r.range(1, 6)).normalize("NFD"),
    () => sentence(r, SCRIPTS, r.range(1, 4)).normalize("NFD"),
    () => r.cps(0xac00, 0xd7a3, r.range(1, 6)).normalize("NFD"), // hangul as jamo
    () => r.pick(["e\u0301", "A\u030a", "\u212b", "\u2126", "n\u0303o", "a\u0308\u0301", "\u1e9b\u0323", "q\u0307\u0323"]) + r.pick(EN),
  ])();
}

const GENERATORS = [
  ["code-go", 250, goCode],
  ["code-python", 250, pythonCode],
  ["json", 200, (r) => JSON.stringify(jsonValue(r, 0), null, r.pick([0, 0, 2, 4, "\t"]))],
  ["cjk", 250, cjk],
  ["emoji", 250, emoji],
  ["numbers", 250, numbers],
  ["whitespace", 300, whitespace],
  ["contractions", 200, contractions],
  ["punctuation", 200, punctuation],
  ["latin", 150, script(LATIN)],
  ["cyrillic", 120, script(CYRILLIC)],
  ["arabic", 120, script(ARABIC)],
  ["devanagari", 120, script(DEVANAGARI)],
  ["scripts", 150, script(SCRIPTS)],
  ["special", 250, special],
  ["mixed", 300, (r) => r.times(r.range(2, 5), () => r.pick(GENERATORS.slice(0, 15))[2](r)).join(r.pick(SPACES))],
  ["nfd", 60, nfd],
];

// long holds inputs that stress the length handling of the BPE loop.
function long(r) {
  const out = [
    " ".repeat(3000), "\n".repeat(500), "a".repeat(3000), "9".repeat(2000), "=".repeat(1500),
    "的".repeat(1500), "🦙".repeat(500), "ab ".repeat(1000), "\t \n".repeat(700), "<|eot_id|>".repeat(200),
  ];
  for (let i = 0; i < 10; i++) {
    let s = "";
    while (s.length < 2000 + 500 * i) s += r.pick(GENERATORS)[2](r) + r.pick(SPACES);
    out.push(s);
  }
  return out;
}

function check(kind, text) {
  if (!text.isWellFormed()) throw new Error(`gen.mjs: ${kind} made a string with a lone surrogate`);
  if (/[\u0085\ufeff]/.test(text)) throw new Error(`gen.mjs: ${kind} made a string with U+0085 or U+FEFF`);
}

export function generate(seed) {
  const r = rng(seed);
  const seen = new Set();
  const out = [];
  const add = (kind, text) => {
    if (kind !== "nfd") text = text.normalize("NFC");
    check(kind, text);
    if (seen.has(text)) return false;
    seen.add(text);
    out.push({ kind, text });
    return true;
  };
  for (const [kind, count, gen] of GENERATORS) {
    for (let n = 0, tries = 0; n < count && tries < count * 20; tries++) if (add(kind, gen(r))) n++;
  }
  for (const text of long(r)) add("long", text);
  return out;
}
