// Prompts longer than num_ctx through real clients: ollama-js (chat and
// generate, truncated by default, refused with truncate:false) and openai
// (/v1 truncates, as Ollama's does). Usage: node truncate.mjs BASE_URL
//
// The server serves stories260K and tiny-qwen2 as server/clients_test.go
// sets up. Prints one JSON line {"ok", "checks": [{"name", "ok", "error"?}]}
// and exits 1 when a check failed.
import { Ollama } from 'ollama'
import OpenAI from 'openai'

const base = process.argv[2]
if (!base) {
  console.error('usage: node truncate.mjs BASE_URL')
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
async function refused(fn) {
  try {
    await fn()
  } catch (e) {
    return e
  }
  throw new Error('the call succeeded; it must be refused')
}

const long = 'the quick brown fox jumps over the lazy dog. '.repeat(40) // hundreds of tokens
const options = { num_ctx: 64, num_predict: 4, temperature: 0 }
const history = [
  { role: 'system', content: 'be brief' },
  { role: 'user', content: long },
  { role: 'assistant', content: long },
  { role: 'user', content: 'and now?' },
]

await check('ollama generate over num_ctx is truncated', async () => {
  const r = await ollama.generate({ model: 'stories260k', prompt: long, options })
  assert(r.done && r.eval_count > 0 && r.prompt_eval_count <= 64 && r.context.length <= 64, 'a truncated answer', r)
})
await check('ollama generate stream over num_ctx is truncated', async () => {
  let last
  for await (const part of await ollama.generate({ model: 'stories260k', prompt: long, options, stream: true })) last = part
  assert(last.done && last.eval_count > 0, 'a truncated answer', last)
})
await check('ollama chat over num_ctx drops old messages', async () => {
  const r = await ollama.chat({ model: 'tiny-qwen2', messages: history, options })
  assert(r.done && r.message.role === 'assistant' && r.prompt_eval_count <= 64, 'a truncated answer', r)
})
await check('ollama generate with truncate:false is refused', async () => {
  const e = await refused(() => ollama.generate({ model: 'stories260k', prompt: long, options, truncate: false }))
  assert(e.name === 'ResponseError' && e.status_code === 400 && /num_ctx/.test(e.error), '400 naming num_ctx', String(e))
})
await check('ollama chat with truncate:false is refused', async () => {
  const e = await refused(() => ollama.chat({ model: 'tiny-qwen2', messages: history, options, truncate: false }))
  assert(e.name === 'ResponseError' && e.status_code === 400 && /num_ctx/.test(e.error), '400 naming num_ctx', String(e))
})
await check('openai chat over num_ctx is truncated', async () => {
  // the server's num_ctx is 512; /v1 has no truncate flag, as Ollama's
  const r = await openai.chat.completions.create({ model: 'tiny-qwen2', max_tokens: 4,
    messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: long.repeat(2) }] })
  assert(r.choices[0].finish_reason && r.usage.prompt_tokens <= 508, 'a truncated answer', r)
})

const failed = checks.filter((c) => !c.ok)
console.log(JSON.stringify({ ok: failed.length === 0, checks }))
process.exit(failed.length === 0 ? 0 : 1)
