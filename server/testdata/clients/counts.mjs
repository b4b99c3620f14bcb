// The counts apps read, through the npm clients ollama (ollama-js) and
// openai. Usage: node counts.mjs BASE_URL
//
// The server must serve stories260K and tiny-qwen2 (as
// server/clients_test.go sets up) and not have loaded stories260K yet.
// prompt_eval_count is the whole prompt, cached tokens included, and
// folio's prompt_cached_count says how many came from the prefix cache;
// /v1's prompt_tokens and input_tokens agree, with cached_tokens in their
// details. load_duration is on the final answer. Prints one JSON line
// {"ok", "versions", "checks": [{"name", "ok", "error"?}]}, and exits 1
// when a check failed.
import { readFileSync } from 'node:fs'
import { Ollama } from 'ollama'
import OpenAI from 'openai'

const base = process.argv[2]
if (!base) {
  console.error('usage: node counts.mjs BASE_URL')
  process.exit(2)
}
const ollama = new Ollama({ host: base })
const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'folio', maxRetries: 0, timeout: 60_000 })

const checks = []
async function check(name, fn) {
  try {
    await fn()
    checks.push({ name, ok: true })
  } catch (e) {
    checks.push({ name, ok: false, error: String(e?.stack ?? e) })
  }
}
function assert(cond, what, got) {
  if (!cond) throw new Error(`${what}; got ${JSON.stringify(got)}`)
}
function version(pkg) {
  const url = new URL(`./node_modules/${pkg}/package.json`, import.meta.url)
  return JSON.parse(readFileSync(url, 'utf8')).version
}
function norm(v) {
  return Math.sqrt(v.reduce((s, x) => s + x * x, 0))
}

// A prompt of many blocks: a repeat finds all but its last block cached.
const prompt = 'Once upon a time there was a little girl who liked to play in the park. '.repeat(8)
const story = { model: 'stories260k', options: { temperature: 0, num_predict: 4 } }
let whole = 0 // the prompt's tokens, from the cold request

// ---- ollama-js ----
await check('ollama generate: cold, then cached', async () => {
  const cold = await ollama.generate({ ...story, prompt })
  whole = cold.prompt_eval_count
  assert(whole === cold.context.length - cold.eval_count, 'prompt_eval_count is the prompt (context less the answer)', cold)
  assert(cold.prompt_cached_count === 0 && cold.load_duration > 0 && cold.load_duration <= cold.total_duration,
    'cold: nothing cached, a load_duration', cold)
  const warm = await ollama.generate({ ...story, prompt })
  assert(warm.prompt_eval_count === whole && warm.prompt_cached_count > 0 && warm.prompt_cached_count < whole,
    `warm: the same prompt_eval_count ${whole}, part of it cached`, warm)
  assert(warm.load_duration > 0 && warm.load_duration <= warm.total_duration, 'warm: a load_duration within the total', warm)
})
await check('ollama chat stream: cached', async () => {
  for (let i = 0; i < 2; i++) {
    let last
    for await (const part of await ollama.chat({ ...story, messages: [{ role: 'user', content: prompt }], stream: true })) last = part
    assert(last.done && last.prompt_eval_count === whole && last.prompt_cached_count > 0 && last.load_duration > 0,
      `final chunk: prompt_eval_count ${whole}, some cached, a load_duration`, last)
  }
})
await check('ollama embeddings raw, embed normalized', async () => {
  const raw = (await ollama.embeddings({ model: 'tiny-qwen2', prompt: 'hello world' })).embedding
  const [unit] = (await ollama.embed({ model: 'tiny-qwen2', input: 'hello world' })).embeddings
  const n = norm(raw)
  assert(Math.abs(norm(unit) - 1) < 1e-4 && Math.abs(n - 1) > 0.05, 'embed has unit length; embeddings the raw length', { raw: n, unit: norm(unit) })
  assert(unit.every((x, i) => Math.abs(x - raw[i] / n) < 1e-4), 'embed is embeddings scaled to unit length', null)
})

// ---- openai ----
const msgs = [{ role: 'user', content: prompt }]
await check('openai chat.completions usage', async () => {
  for (let i = 0; i < 2; i++) {
    const r = await openai.chat.completions.create({ model: 'stories260k', messages: msgs, max_tokens: 4 })
    const u = r.usage
    assert(u.prompt_tokens === whole && u.prompt_tokens_details.cached_tokens > 0 && u.total_tokens === whole + u.completion_tokens,
      `prompt_tokens ${whole} (as ollama's prompt_eval_count), some cached`, u)
  }
})
await check('openai completions usage', async () => {
  const r = await openai.completions.create({ model: 'stories260k', prompt, max_tokens: 4 })
  assert(r.usage.prompt_tokens === whole && r.usage.prompt_tokens_details?.cached_tokens > 0, `prompt_tokens ${whole}, some cached`, r.usage)
})
await check('openai responses usage', async () => {
  const r = await openai.responses.create({ model: 'stories260k', input: prompt, max_output_tokens: 4 })
  const u = r.usage
  assert(u.input_tokens === whole && u.input_tokens_details.cached_tokens > 0 && u.total_tokens === whole + u.output_tokens,
    `input_tokens ${whole}, some cached`, u)
})

const failed = checks.filter((c) => !c.ok)
console.log(JSON.stringify({ ok: failed.length === 0, versions: { ollama: version('ollama'), openai: version('openai') }, checks }))
process.exit(failed.length === 0 ? 0 : 1)
