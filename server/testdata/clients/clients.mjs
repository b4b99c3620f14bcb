// Drives a live folio server with two clients nobody here wrote: the npm
// packages `ollama` (ollama-js) and `openai`. Usage: node clients.mjs BASE_URL
//
// The server must serve stories260K (greedy text starts ", there was"),
// tiny-qwen2 (a synthetic qwen2 with 256-wide embeddings) and its weights
// as tiny-think and tiny-tools (templates that think and render tools), as
// server/clients_test.go sets up. Prints one JSON line, a summary
// {"ok", "versions", "checks": [{"name", "ok", "error"?}]}, and exits 1 when a
// check failed.
import { readFileSync } from 'node:fs'
import { Ollama } from 'ollama'
import OpenAI from 'openai'

const base = process.argv[2]
if (!base) {
  console.error('usage: node clients.mjs BASE_URL')
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
// refused runs fn and returns the error it must throw.
async function refused(fn) {
  try {
    await fn()
  } catch (e) {
    return e
  }
  throw new Error('the call succeeded; it must be refused')
}
function version(pkg) {
  const url = new URL(`./node_modules/${pkg}/package.json`, import.meta.url)
  return JSON.parse(readFileSync(url, 'utf8')).version
}

const story = { model: 'stories260k', options: { temperature: 0, num_predict: 12 } }
const chatMsgs = [
  { role: 'system', content: 'be brief' },
  { role: 'user', content: 'hello' },
]
let greedy = '' // stories260K's greedy 12 tokens after "Once upon a time"

// ---- ollama-js ----
await check('ollama list', async () => {
  const r = await ollama.list()
  const names = r.models.map((m) => m.name)
  assert(names.includes('stories260K:latest') && names.includes('tiny-qwen2:latest'), 'list names', names)
  assert(r.models.every((m) => m.digest && m.size > 0 && m.details?.format === 'gguf'), 'list entries', r.models)
})
await check('ollama generate', async () => {
  const r = await ollama.generate({ ...story, prompt: 'Once upon a time' })
  assert(r.done && r.done_reason === 'length' && r.eval_count === 12, 'generate final fields', r)
  assert(r.response.startsWith(', there was') && Array.isArray(r.context), 'generate text and context', r.response)
  greedy = r.response
})
await check('ollama generate stream', async () => {
  let text = ''
  let last
  for await (const part of await ollama.generate({ ...story, prompt: 'Once upon a time', stream: true })) {
    text += part.response
    last = part
  }
  assert(text === greedy && last.done && last.eval_count === 12, `streamed text equal to ${JSON.stringify(greedy)}`, { text, last })
})
await check('ollama chat', async () => {
  const r = await ollama.chat({ model: 'tiny-qwen2', messages: chatMsgs, options: { num_predict: 8, seed: 1 } })
  assert(r.done && r.message.role === 'assistant' && typeof r.message.content === 'string', 'chat response', r)
})
await check('ollama chat stream', async () => {
  let parts = 0
  let last
  for await (const part of await ollama.chat({ model: 'tiny-qwen2', messages: chatMsgs, stream: true, options: { num_predict: 8, seed: 1 } })) {
    parts++
    last = part
  }
  assert(parts >= 1 && last.done && last.eval_count <= 8, 'chat stream end', last)
})
await check('ollama embed', async () => {
  const r = await ollama.embed({ model: 'tiny-qwen2', input: ['hello', 'world'] })
  assert(r.embeddings.length === 2 && r.embeddings[0].length === 256, 'embed shape', r.embeddings.map((e) => e.length))
  const old = await ollama.embeddings({ model: 'tiny-qwen2', prompt: 'hello' })
  assert(old.embedding.length === 256, 'legacy embeddings length', old.embedding.length)
})
await check('ollama show', async () => {
  const r = await ollama.show({ model: 'tiny-qwen2' })
  assert(r.details.family === 'qwen2' && r.model_info['qwen2.block_count'] > 0, 'show details', r.details)
})
await check('ollama ps', async () => {
  const r = await ollama.ps()
  const names = r.models.map((m) => m.name.toLowerCase())
  assert(names.includes('stories260k:latest') && names.includes('tiny-qwen2:latest'), 'ps names', names)
  assert(r.models.every((m) => m.size > 0 && m.expires_at), 'ps entries', r.models)
})
await check('ollama copy and delete', async () => {
  assert((await ollama.copy({ source: 'tiny-qwen2', destination: 'clients-copy:v1' })).status === 'success', 'copy status', null)
  let names = (await ollama.list()).models.map((m) => m.name)
  assert(names.includes('clients-copy:v1'), 'the copy listed', names)
  assert((await ollama.delete({ model: 'clients-copy:v1' })).status === 'success', 'delete status', null)
  names = (await ollama.list()).models.map((m) => m.name)
  assert(!names.includes('clients-copy:v1'), 'the copy gone', names)
  // a file of the library is the user's: folio refuses to delete it
  const e = await refused(() => ollama.delete({ model: 'tiny-qwen2' }))
  assert(e.name === 'ResponseError' && e.status_code === 400 && /does not delete/.test(e.error), 'delete of a library file', String(e))
})
await check('ollama version', async () => {
  const r = await ollama.version()
  assert(typeof r.version === 'string' && r.version.length > 0, 'version', r)
})

// ---- openai ----
const chatReq = {
  model: 'stories260k',
  messages: [{ role: 'user', content: 'Once upon a time' }],
  temperature: 0,
  max_tokens: 12,
}
await check('openai models.list', async () => {
  const ids = []
  for await (const m of openai.models.list()) ids.push(m.id)
  assert(ids.includes('stories260K:latest') && ids.includes('tiny-qwen2:latest'), 'model ids', ids)
  const m = await openai.models.retrieve('tiny-qwen2')
  assert(m.id === 'tiny-qwen2:latest' && m.object === 'model', 'retrieve', m)
})
await check('openai chat.completions', async () => {
  const r = await openai.chat.completions.create(chatReq)
  const c = r.choices[0]
  assert(r.object === 'chat.completion' && c.message.role === 'assistant' && c.finish_reason === 'length', 'completion', r)
  assert(c.message.content === greedy, `content equal to ollama's ${JSON.stringify(greedy)}`, c.message.content)
  assert(r.usage.completion_tokens === 12 && r.usage.total_tokens === r.usage.prompt_tokens + 12, 'usage', r.usage)
})
await check('openai chat.completions stream', async () => {
  let text = ''
  let usage
  let finish
  const stream = await openai.chat.completions.create({ ...chatReq, stream: true, stream_options: { include_usage: true } })
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      text += c.delta.content ?? ''
      finish = c.finish_reason ?? finish
    }
    usage = chunk.usage ?? usage
  }
  assert(text === greedy && finish === 'length' && usage?.completion_tokens === 12, 'stream', { text, finish, usage })
})
await check('openai chat.completions n=2 logprobs', async () => {
  const r = await openai.chat.completions.create({ ...chatReq, n: 2, logprobs: true, top_logprobs: 2, max_tokens: 4, seed: 3, temperature: 1 })
  assert(r.choices.length === 2 && r.choices[1].index === 1, 'two choices', r.choices)
  for (const c of r.choices) {
    const lp = c.logprobs.content
    assert(lp.length === 4 && lp.every((t) => t.top_logprobs.length === 2 && t.logprob <= 0 && Array.isArray(t.bytes)), 'logprobs', lp)
    assert(lp.map((t) => t.token).join('') === c.message.content, 'logprob tokens spell the content', c)
  }
})
await check('openai completions', async () => {
  const r = await openai.completions.create({ model: 'stories260k', prompt: 'Once upon a time', temperature: 0, max_tokens: 12, logprobs: 2 })
  const c = r.choices[0]
  assert(r.object === 'text_completion' && c.text === greedy && c.finish_reason === 'length', 'text completion', r)
  assert(c.logprobs.tokens.join('') === greedy && c.logprobs.top_logprobs.length === 12, 'legacy logprobs', c.logprobs)
})
await check('openai completions stream', async () => {
  let text = ''
  const stream = await openai.completions.create({ model: 'stories260k', prompt: 'Once upon a time', temperature: 0, max_tokens: 12, stream: true })
  for await (const chunk of stream) text += chunk.choices[0]?.text ?? ''
  assert(text === greedy, `streamed completion equal to ${JSON.stringify(greedy)}`, text)
})
await check('openai embeddings', async () => {
  // the client asks for base64 and decodes it unless told float
  const b = await openai.embeddings.create({ model: 'tiny-qwen2', input: ['hello', 'world'] })
  const f = await openai.embeddings.create({ model: 'tiny-qwen2', input: 'hello', encoding_format: 'float' })
  assert(b.data.length === 2 && b.data[0].embedding.length === 256 && b.usage.prompt_tokens > 0, 'embeddings', b.data.map((d) => d.embedding.length))
  const same = f.data[0].embedding.every((x, i) => Math.abs(x - b.data[0].embedding[i]) < 1e-6)
  assert(same, 'base64 and float embeddings agree', null)
})
await check('openai errors', async () => {
  const nf = await refused(() => openai.chat.completions.create({ ...chatReq, model: 'no-such-model' }))
  assert(nf instanceof OpenAI.NotFoundError && nf.code === 'model_not_found' && nf.param === 'model', 'unknown model', String(nf))
  const bad = await refused(() => openai.chat.completions.create({ ...chatReq, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'number', multipleOf: 3 } } } }))
  assert(bad instanceof OpenAI.BadRequestError && bad.param === 'response_format', 'unsupported schema keyword', String(bad))
})
await check('openai json_schema', async () => {
  const schema = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] }
  const r = await openai.chat.completions.create({ model: 'tiny-qwen2', messages: [{ role: 'user', content: 'answer' }], max_tokens: 40, seed: 4,
    response_format: { type: 'json_schema', json_schema: { name: 'answer', schema } } })
  const v = JSON.parse(r.choices[0].message.content)
  assert(typeof v.ok === 'boolean' && r.choices[0].finish_reason === 'stop', 'json_schema output', r.choices[0])
})
await check('openai responses', async () => {
  const r = await openai.responses.create({ model: 'stories260k', input: 'Once upon a time', temperature: 0, max_output_tokens: 12 })
  assert(r.object === 'response' && r.status === 'incomplete' && r.incomplete_details?.reason === 'max_output_tokens', 'response', r)
  assert(r.output_text === greedy, `output_text equal to ollama's ${JSON.stringify(greedy)}`, r.output_text)
  assert(r.usage.output_tokens === 12 && r.usage.total_tokens === r.usage.input_tokens + 12, 'usage', r.usage)
})
await check('openai responses stream', async () => {
  // the SDK's stream helper builds the response up from the events and
  // checks their order and indexes
  const stream = openai.responses.stream({ model: 'stories260k', input: [{ role: 'user', content: 'Once upon a time' }],
    temperature: 0, max_output_tokens: 12 })
  let text = ''
  for await (const e of stream) if (e.type === 'response.output_text.delta') text += e.delta
  const r = await stream.finalResponse()
  assert(text === greedy && r.output_text === greedy && r.status === 'incomplete', 'streamed response', { text, r })
})
await check('openai responses stream reasoning', async () => {
  // tiny-think's prompt opens a thought: the reply starts inside the reasoning
  const stream = openai.responses.stream({ model: 'tiny-think', input: 'Once upon a time', temperature: 0,
    max_output_tokens: 12, reasoning: { effort: 'low' } })
  let thought = ''
  for await (const e of stream) if (e.type === 'response.reasoning_text.delta') thought += e.delta
  const r = await stream.finalResponse()
  const item = r.output[0]
  assert(item.type === 'reasoning' && item.content[0].text === thought && thought !== '' && r.output[1].type === 'message',
    'reasoning item, then the message', r.output)
})
await check('openai responses function call', async () => {
  // tiny-tools's template has no tool-call tag, so a bare JSON object that
  // names a tool is a call; the schema forces one
  const schema = { type: 'object', properties: { name: { const: 'get_weather' },
    arguments: { type: 'object', properties: { city: { enum: ['Paris', 'Rome'] } }, required: ['city'] } }, required: ['name', 'arguments'] }
  const req = { model: 'tiny-tools', input: 'weather?', temperature: 0, max_output_tokens: 400,
    tools: [{ type: 'function', name: 'get_weather', parameters: { type: 'object' }, strict: false }],
    text: { format: { type: 'json_schema', name: 'call', schema } } }
  for (const r of [await openai.responses.create(req), await openai.responses.stream(req).finalResponse()]) {
    const call = r.output[0]
    assert(r.output.length === 1 && call.type === 'function_call' && call.name === 'get_weather' && call.call_id.startsWith('call_') &&
      ['Paris', 'Rome'].includes(JSON.parse(call.arguments).city), 'one function_call item', r.output)
  }
})
await check('openai responses errors', async () => {
  const e = await refused(() => openai.responses.create({ model: 'stories260k', input: 'hi', previous_response_id: 'resp_1' }))
  assert(e.status === 501 && e.param === 'previous_response_id', 'previous_response_id', String(e))
})

const failed = checks.filter((c) => !c.ok)
console.log(JSON.stringify({ ok: failed.length === 0, versions: { ollama: version('ollama'), openai: version('openai') }, checks }))
process.exit(failed.length === 0 ? 0 : 1)
