// Thinking and tool calls through the npm packages `ollama` (ollama-js) and
// `openai`. Usage: node thinking.mjs BASE_URL
//
// The server must serve tiny-think (a template whose prompt opens a
// thought), tiny-tools (a template that renders tools, calls as bare JSON)
// and tiny-qwen2 (no template), as server/clients_thinking_test.go sets
// up. Prints one JSON line, {"ok", "checks": [{"name", "ok", "error"?}]},
// and exits 1 when a check failed.
import { Ollama } from 'ollama'
import OpenAI from 'openai'

const base = process.argv[2]
if (!base) {
  console.error('usage: node thinking.mjs BASE_URL')
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

const ask = [{ role: 'user', content: 'answer in JSON' }]
const opts = { temperature: 0, num_predict: 12 }
const callId = /^call_[a-z0-9]{8}$/
// a schema that forces a call of get_weather as a bare JSON object
const callSchema = { type: 'object', properties: { name: { const: 'get_weather' },
  arguments: { type: 'object', properties: { city: { enum: ['Paris', 'Rome'] } }, required: ['city'] } }, required: ['name', 'arguments'] }
const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }]

await check('ollama chat thinks by default', async () => {
  const r = await ollama.chat({ model: 'tiny-think', messages: ask, options: opts })
  const m = r.message
  assert(m.thinking && m.content === '' && !m.thinking.includes('<think>'), 'the thought in message.thinking, the content clean', m)
})
await check('ollama chat stream thinks by default', async () => {
  let thinking = ''
  let content = ''
  for await (const part of await ollama.chat({ model: 'tiny-think', messages: ask, options: opts, stream: true })) {
    thinking += part.message.thinking ?? ''
    content += part.message.content
  }
  assert(thinking !== '' && content === '', 'streamed thought apart from the content', { thinking, content })
})
await check('ollama generate think levels and false', async () => {
  const high = await ollama.generate({ model: 'tiny-think', prompt: 'answer in JSON', think: 'high', options: opts })
  assert(high.thinking && high.response === '', 'think "high" thinks', high)
  const off = await ollama.generate({ model: 'tiny-think', prompt: 'answer in JSON', think: false, options: opts })
  assert(!off.thinking && off.response !== '', 'think false answers', off)
})
await check('ollama think refused', async () => {
  const e = await refused(() => ollama.chat({ model: 'tiny-qwen2', messages: ask, think: true, options: opts }))
  assert(e.status_code === 400 && /"tiny-qwen2" does not support thinking/.test(e.error), 'a 400 naming the model', String(e))
})
await check('ollama tool calls carry ids', async () => {
  for (const stream of [false, true]) {
    const req = { model: 'tiny-tools', messages: [{ role: 'user', content: 'weather?' }], tools, format: callSchema,
      options: { temperature: 1, seed: 1, num_predict: 400 } }
    let calls = []
    let content = ''
    if (stream) {
      for await (const part of await ollama.chat({ ...req, stream })) {
        calls.push(...(part.message.tool_calls ?? []))
        content += part.message.content
      }
    } else {
      const r = await ollama.chat(req)
      calls = r.message.tool_calls ?? []
      content = r.message.content
    }
    assert(calls.length === 1 && callId.test(calls[0].id) && calls[0].function.name === 'get_weather' && content === '',
      `one call with an id, no content (stream ${stream})`, { calls, content })
  }
})
await check('ollama tools refused', async () => {
  const e = await refused(() => ollama.chat({ model: 'tiny-qwen2', messages: ask, tools, options: opts }))
  assert(e.status_code === 400 && /does not support tools/.test(e.error), 'a 400 saying so', String(e))
})
await check('openai tool_calls ids', async () => {
  const req = { model: 'tiny-tools', messages: [{ role: 'user', content: 'weather?' }], tools, temperature: 1, seed: 1, max_tokens: 400,
    response_format: { type: 'json_schema', json_schema: { name: 'call', schema: callSchema } } }
  const r = await openai.chat.completions.create(req)
  const c = r.choices[0]
  assert(c.finish_reason === 'tool_calls' && c.message.tool_calls.length === 1 && callId.test(c.message.tool_calls[0].id),
    'one call with an id', c)
  const stream = await openai.chat.completions.create({ ...req, stream: true })
  const ids = []
  for await (const chunk of stream) for (const ch of chunk.choices) for (const tc of ch.delta.tool_calls ?? []) ids.push(tc.id)
  assert(ids.length === 1 && callId.test(ids[0]), 'a streamed call with an id', ids)
})
await check('openai reasoning by default', async () => {
  const r = await openai.chat.completions.create({ model: 'tiny-think', messages: ask, temperature: 0, max_tokens: 12 })
  const m = r.choices[0].message
  assert(m.reasoning && m.content === '', 'the thought as message.reasoning, the content clean', m)
  const e = await refused(() => openai.chat.completions.create({ model: 'tiny-qwen2', messages: ask, reasoning_effort: 'low' }))
  assert(e instanceof OpenAI.BadRequestError && e.param === 'reasoning_effort', 'reasoning_effort on a model that does not think', String(e))
})

const failed = checks.filter((c) => !c.ok)
console.log(JSON.stringify({ ok: failed.length === 0, checks }))
process.exit(failed.length === 0 ? 0 : 1)
