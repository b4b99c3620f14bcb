// Structured outputs through two clients nobody here wrote: ollama-js's
// `format` with a JSON schema and openai-node's `response_format`
// {type: "json_schema"}, with the keywords Pydantic and Zod emit (pattern,
// format, minimum/maximum and their exclusive forms, prefixItems,
// additionalProperties beside properties, minProperties), sampled at
// temperature 1 from a random-weight model. Every reply must parse and
// match its schema, checked here with JavaScript's own RegExp and Date.
// Usage: node jschema.mjs BASE_URL; prints one JSON summary line like
// clients.mjs and exits 1 when a check failed.
import { readFileSync } from 'node:fs'
import { Ollama } from 'ollama'
import OpenAI from 'openai'

const base = process.argv[2]
if (!base) {
  console.error('usage: node jschema.mjs BASE_URL')
  process.exit(2)
}
const ollama = new Ollama({ host: base })
const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'folio', maxRetries: 0, timeout: 120_000 })

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
function version(pkg) {
  const url = new URL(`./node_modules/${pkg}/package.json`, import.meta.url)
  return JSON.parse(readFileSync(url, 'utf8')).version
}

// A Pydantic model's schema: class Visit(BaseModel) with constr, conint,
// confloat, a date, a UUID, a tuple and extra="allow"-style strings.
const visit = {
  title: 'Visit', type: 'object',
  properties: {
    code: { title: 'Code', type: 'string', pattern: '^[A-Z]{2}\\d{3}$' },
    age: { title: 'Age', type: 'integer', minimum: 18, maximum: 99 },
    score: { title: 'Score', type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 },
    day: { title: 'Day', type: 'string', format: 'date' },
    id: { title: 'Id', type: 'string', format: 'uuid' },
    point: { title: 'Point', type: 'array', prefixItems: [{ type: 'integer', minimum: -9, maximum: 9 }, { type: 'boolean' }], minItems: 2, maxItems: 2 },
  },
  required: ['code', 'age', 'score', 'day', 'id', 'point'],
  additionalProperties: { type: 'string', maxLength: 6 },
}
function checkVisit(v) {
  assert(/^[A-Z]{2}\d{3}$/.test(v.code), 'code matches its pattern', v)
  assert(Number.isInteger(v.age) && v.age >= 18 && v.age <= 99, 'age within 18..99', v)
  assert(typeof v.score === 'number' && v.score > 0 && v.score < 1, 'score within (0, 1)', v)
  assert(/^\d{4}-\d{2}-\d{2}$/.test(v.day) && new Date(`${v.day}T00:00:00Z`).toISOString().slice(0, 10) === v.day, 'day is a calendar date', v)
  assert(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v.id), 'id is a uuid', v)
  assert(Array.isArray(v.point) && v.point.length === 2 && Number.isInteger(v.point[0]) && Math.abs(v.point[0]) <= 9 && typeof v.point[1] === 'boolean', 'point is a tuple', v)
  for (const [k, x] of Object.entries(v)) {
    if (!(k in visit.properties)) assert(typeof x === 'string' && [...x].length <= 6, `extra ${k} is a short string`, v)
  }
}

// A Zod schema as zod-to-json-schema writes it: z.object({...}).strict()
// with z.string().email(), z.number().int().positive(), a record.
const signup = {
  type: 'object',
  properties: {
    email: { type: 'string', format: 'email' },
    seats: { type: 'integer', exclusiveMinimum: 0, maximum: 500 },
    tags: { type: 'object', additionalProperties: { type: 'number', minimum: -1, maximum: 1 }, minProperties: 1, maxProperties: 3 },
    note: { type: 'string' },
  },
  required: ['email', 'seats', 'tags', 'note'],
  additionalProperties: false,
  $schema: 'http://json-schema.org/draft-07/schema#',
}
function checkSignup(v) {
  assert(/^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$/.test(v.email), 'email', v)
  assert(Number.isInteger(v.seats) && v.seats > 0 && v.seats <= 500, 'seats within (0, 500]', v)
  const tags = Object.entries(v.tags)
  assert(tags.length >= 1 && tags.length <= 3 && tags.every(([, x]) => typeof x === 'number' && x >= -1 && x <= 1), 'tags: 1 to 3 numbers in [-1, 1]', v)
  assert(typeof v.note === 'string', 'note', v)
  assert(Object.keys(v).every((k) => k in signup.properties), 'no other keys', v)
}

const msgs = [{ role: 'user', content: 'fill it in' }]
await check('ollama chat format: a Pydantic schema, temperature 1', async () => {
  for (const seed of [1, 2, 3]) {
    const r = await ollama.chat({ model: 'tiny-qwen2', messages: msgs, format: visit, options: { temperature: 1, seed, num_predict: 200 } })
    checkVisit(JSON.parse(r.message.content))
  }
})
await check('ollama generate format, streamed: a Zod schema', async () => {
  for (const seed of [4, 5]) {
    let text = ''
    for await (const part of await ollama.generate({ model: 'tiny-qwen2', prompt: 'sign up', format: signup, stream: true, options: { temperature: 1, seed, num_predict: 160 } })) {
      text += part.response
    }
    checkSignup(JSON.parse(text))
  }
})
await check('ollama format: a string without maxLength ends within num_predict', async () => {
  const r = await ollama.generate({ model: 'tiny-qwen2', prompt: 'write', format: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] }, options: { temperature: 1, seed: 6, num_predict: 24 } })
  const v = JSON.parse(r.response)
  assert(typeof v.text === 'string' && r.eval_count <= 24, 'a complete object within 24 tokens', r)
})
await check('openai response_format json_schema: both schemas, temperature 1', async () => {
  for (const [name, schema, verify] of [['visit', visit, checkVisit], ['signup', signup, checkSignup]]) {
    const r = await openai.chat.completions.create({ model: 'tiny-qwen2', messages: msgs, temperature: 1, seed: 7, max_tokens: 200,
      response_format: { type: 'json_schema', json_schema: { name, strict: true, schema } } })
    verify(JSON.parse(r.choices[0].message.content))
  }
})
await check('a keyword that cannot be enforced is a 400 naming it', async () => {
  const schema = { type: 'object', properties: { n: { type: 'integer', multipleOf: 5 } } }
  const e1 = await refused(() => ollama.chat({ model: 'tiny-qwen2', messages: msgs, format: schema }))
  assert(e1.status_code === 400 && /multipleOf/.test(e1.error), 'ollama-js error', { status: e1.status_code, error: e1.error })
  const e2 = await refused(() => openai.chat.completions.create({ model: 'tiny-qwen2', messages: msgs,
    response_format: { type: 'json_schema', json_schema: { name: 'n', schema } } }))
  assert(e2 instanceof OpenAI.BadRequestError && e2.param === 'response_format' && /multipleOf/.test(e2.message), 'openai error', String(e2))
})

const ok = checks.every((c) => c.ok)
console.log(JSON.stringify({ ok, versions: { ollama: version('ollama'), openai: version('openai') }, checks }))
process.exit(ok ? 0 : 1)
