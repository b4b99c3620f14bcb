// Anthropic's Messages API through the official npm package @anthropic-ai/sdk.
// Usage: node anthropic.mjs BASE_URL
//
// The server must serve tiny-tools (a template that renders tools, calls
// as bare JSON), tiny-think (a template whose prompt opens a thought),
// tiny-qwen2 (no template) and qwen3-scripted (Qwen3's template on a
// scripted model that thinks "plan", answers "Sure" and calls get_weather
// for Paris), as server/clients_anthropic_test.go sets up. The client finds
// the server through ANTHROPIC_BASE_URL, as Claude Code does. Prints one
// JSON line, {"ok", "versions", "checks": [{"name", "ok", "error"?}]}, and
// exits 1 when a check failed.
import Anthropic from '@anthropic-ai/sdk'
import { VERSION } from '@anthropic-ai/sdk/version'

const base = process.argv[2]
if (!base) {
  console.error('usage: node anthropic.mjs BASE_URL')
  process.exit(2)
}
process.env.ANTHROPIC_BASE_URL = base
process.env.ANTHROPIC_API_KEY = 'folio'
const client = new Anthropic({ maxRetries: 0, timeout: 60_000 })

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

const msgId = /^msg_[A-Za-z0-9]{24}$/
const toolId = /^toolu_[A-Za-z0-9]{24}$/
const tools = [{ name: 'get_weather', description: 'The weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Rome'] } }, required: ['city'] } }]
const ask = [{ role: 'user', content: 'What is the weather in Paris?' }]
const thinking = { type: 'enabled', budget_tokens: 1024 }

await check('messages.create', async () => {
  const m = await client.messages.create({ model: 'tiny-tools', max_tokens: 8, messages: ask, temperature: 0,
    system: 'Be brief.', metadata: { user_id: 'folio-test' } })
  assert(msgId.test(m.id) && m.type === 'message' && m.role === 'assistant' && m.model === 'tiny-tools', 'a message', m)
  assert(m.content.length === 1 && m.content[0].type === 'text' && m.content[0].text.length > 0, 'one text block', m.content)
  assert(m.stop_reason === 'max_tokens' && m.stop_sequence === null, 'stopped at max_tokens', m)
  assert(m.usage.output_tokens === 8 && m.usage.input_tokens > 0 && m.usage.cache_read_input_tokens >= 0 &&
    m.usage.cache_creation_input_tokens === 0, 'usage', m.usage)
})

await check('messages.stream finalMessage: thinking, text and tool_use blocks', async () => {
  const stream = client.messages.stream({ model: 'qwen3-scripted', max_tokens: 2000, messages: ask, tools, thinking, temperature: 0 })
  const events = []
  let text = ''
  let thought = ''
  stream.on('streamEvent', (ev) => events.push(ev.type === 'content_block_delta' ? ev.delta.type : ev.type))
  stream.on('text', (t) => { text += t })
  stream.on('thinking', (t) => { thought += t })
  const m = await stream.finalMessage()
  assert(m.content.map((b) => b.type).join() === 'thinking,text,tool_use', 'three blocks', m.content)
  const [th, tx, tu] = m.content
  assert(th.thinking === 'plan' && th.signature.length > 0 && thought === 'plan', 'the thought, signed', { th, thought })
  assert(tx.text === 'Sure' && text === 'Sure', 'the text', { tx, text })
  assert(toolId.test(tu.id) && tu.name === 'get_weather' && tu.input.city === 'Paris', 'the call, its input parsed', tu)
  assert(m.stop_reason === 'tool_use' && m.usage.output_tokens === 7, 'stop_reason and usage', m)
  // (the SDK passes no ping on: server/anthropic_test.go checks it)
  const want = ['message_start', 'content_block_start', 'thinking_delta', 'signature_delta', 'content_block_stop',
    'content_block_start', 'text_delta', 'content_block_stop', 'content_block_start', 'input_json_delta', 'content_block_stop',
    'message_delta', 'message_stop']
  assert(events.join() === want.join(), 'the events in order', events)
})

await check('tool use round trip', async () => {
  // tiny-tools' random weights never call on their own: tool_choice forces the call
  const first = await client.messages.create({ model: 'tiny-tools', max_tokens: 100, messages: ask, tools,
    tool_choice: { type: 'tool', name: 'get_weather' }, temperature: 0 })
  const call = first.content.find((b) => b.type === 'tool_use')
  assert(first.stop_reason === 'tool_use' && call && toolId.test(call.id) && ['Paris', 'Rome'].includes(call.input.city),
    'a forced call', first)
  const messages = [...ask, { role: 'assistant', content: first.content },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: [{ type: 'text', text: 'Sunny, 21 C' }] }] }]
  const answer = await client.messages.create({ model: 'tiny-tools', max_tokens: 12, messages, tools, temperature: 0 })
  assert(answer.content.length === 1 && answer.content[0].type === 'text' && ['end_turn', 'max_tokens'].includes(answer.stop_reason),
    'an answer', answer)
  assert(answer.usage.cache_read_input_tokens > 0, 'the second turn reads the first from the prefix cache', answer.usage)
  const err = await client.messages.create({ model: 'tiny-tools', max_tokens: 12, tools, temperature: 0, messages: [...messages.slice(0, 2),
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'no such city', is_error: true }] }] })
  assert(err.content.length > 0, 'an answer to a failed call', err)
})

await check('thinking blocks', async () => {
  const m = await client.messages.create({ model: 'tiny-think', max_tokens: 1100, messages: ask, thinking, temperature: 0,
    stop_sequences: ['never-written'] })
  assert(m.content[0].type === 'thinking' && m.content[0].thinking.length > 0 && typeof m.content[0].signature === 'string',
    'a thinking block first', m.content)
  const off = await client.messages.create({ model: 'tiny-think', max_tokens: 12, messages: ask, thinking: { type: 'disabled' }, temperature: 0 })
  assert(off.content.every((b) => b.type === 'text'), 'no thinking when disabled', off.content)
  // the thought goes back with the history
  const again = await client.messages.create({ model: 'tiny-think', max_tokens: 4, thinking: { type: 'disabled' },
    messages: [...ask, { role: 'assistant', content: m.content.filter((b) => b.type === 'thinking').concat([{ type: 'text', text: 'Sunny.' }]) },
      { role: 'user', content: 'And Rome?' }] })
  assert(again.type === 'message', 'a history with thinking blocks', again)
  const e = await refused(() => client.messages.create({ model: 'tiny-qwen2', max_tokens: 2000, messages: ask, thinking }))
  assert(e instanceof Anthropic.BadRequestError && /does not support thinking/.test(e.message), 'thinking on a model without it', String(e))
})

await check('stop sequences', async () => {
  const m = await client.messages.create({ model: 'qwen3-scripted', max_tokens: 2000, messages: ask, thinking, temperature: 0,
    stop_sequences: ['never', 'Sure'] })
  assert(m.stop_reason === 'stop_sequence' && m.stop_sequence === 'Sure', 'stopped by "Sure"', m)
  assert(m.content.length === 1 && m.content[0].type === 'thinking', 'the thought before it', m.content)
  const s = await client.messages.stream({ model: 'qwen3-scripted', max_tokens: 2000, messages: ask, thinking, temperature: 0,
    stop_sequences: ['Sure'] }).finalMessage()
  assert(s.stop_reason === 'stop_sequence' && s.stop_sequence === 'Sure', 'streamed', s)
})

await check('count_tokens', async () => {
  const body = { model: 'qwen3-scripted', messages: ask, tools, system: [{ type: 'text', text: 'Be brief.' }], thinking: { type: 'disabled' } }
  const { input_tokens: n } = await client.messages.countTokens(body)
  const m = await client.messages.create({ ...body, max_tokens: 1 })
  assert(n > 0 && n === m.usage.input_tokens + m.usage.cache_read_input_tokens, 'the prompt that was computed', { n, usage: m.usage })
})

await check('error classes', async () => {
  const nf = await refused(() => client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 8, messages: ask }))
  assert(nf instanceof Anthropic.NotFoundError && nf.status === 404 && nf.error?.error?.type === 'not_found_error', 'NotFoundError', String(nf))
  const nm = await refused(() => client.messages.create({ model: 'tiny-tools', messages: ask }))
  assert(nm instanceof Anthropic.BadRequestError && nm.error?.error?.type === 'invalid_request_error' && /max_tokens/.test(nm.message),
    'BadRequestError for a missing max_tokens', String(nm))
  const img = await refused(() => client.messages.create({ model: 'tiny-tools', max_tokens: 8, messages: [{ role: 'user', content: [
    { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }] }] }))
  assert(img instanceof Anthropic.BadRequestError && /image blocks are not supported/.test(img.message), 'BadRequestError for an image', String(img))
  const st = await refused(async () => {
    for await (const _ of client.messages.stream({ model: 'tiny-tools', max_tokens: 1, messages: ask, tools, tool_choice: { type: 'any' } })) {
      // an error event ends the stream
    }
  })
  assert(st instanceof Anthropic.APIError && /format allows no token/.test(st.message), 'an error event raised mid-stream', String(st))
})

await check('auth token and headers', async () => {
  const bearer = new Anthropic({ apiKey: null, authToken: 'anything', baseURL: base, maxRetries: 0,
    defaultHeaders: { 'anthropic-beta': 'interleaved-thinking-2025-05-14' } })
  const m = await bearer.messages.create({ model: 'tiny-tools', max_tokens: 2, messages: ask })
  assert(m.type === 'message', 'a message with ANTHROPIC_AUTH_TOKEN', m)
})

const failed = checks.filter((c) => !c.ok)
console.log(JSON.stringify({ ok: failed.length === 0, versions: { anthropic: VERSION }, checks }))
process.exit(failed.length === 0 ? 0 : 1)
