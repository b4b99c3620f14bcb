// Drives a live folio server with ollama-js through the model lifecycle:
// a burst across more models than FOLIO_MAX_LOADED_MODELS (they queue, as
// under Ollama), unloads, Ollama's full model names and its not-found
// error, and the GET / probe. Usage: node lifecycle.mjs BASE_URL
//
// The server must serve stories260k, tiny-qwen2, story-b and story-c with
// FOLIO_MAX_LOADED_MODELS 2, as server/clients_lifecycle_test.go sets up.
// Prints one JSON line, a summary {"ok", "versions", "checks": [{"name",
// "ok", "error"?}]}, and exits 1 when a check failed.
import { readFileSync } from 'node:fs'
import { Ollama } from 'ollama'

const base = process.argv[2]
if (!base) {
  console.error('usage: node lifecycle.mjs BASE_URL')
  process.exit(2)
}
const ollama = new Ollama({ host: base })
const models = ['stories260k', 'tiny-qwen2', 'story-b', 'story-c']
const maxLoaded = 2

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

await check('burst across 4 models, 2 loaded at most', async () => {
  const calls = []
  for (let i = 0; i < 12; i++) {
    const model = models[i % models.length]
    const options = { num_predict: 24, seed: i }
    calls.push(
      i % 2 === 0
        ? ollama.generate({ model, prompt: 'Once upon a time', options }).then((r) => r.eval_count)
        : ollama.chat({ model, messages: [{ role: 'user', content: 'hello' }], options, stream: true }).then(async (s) => {
            let n = 0
            for await (const part of s) if (part.done) n = part.eval_count
            return n
          }),
    )
  }
  const results = await Promise.allSettled(calls)
  const failed = results.filter((r) => r.status === 'rejected').map((r) => String(r.reason))
  assert(failed.length === 0, 'every request of the burst answered', failed)
  assert(results.every((r) => r.value > 0), 'every request generated', results)
  const ps = await ollama.ps()
  assert(ps.models.length <= maxLoaded, 'at most 2 loaded', ps.models.map((m) => m.name))
})

await check('unload of a model that is not loaded', async () => {
  for (const m of (await ollama.ps()).models) {
    const r = await ollama.generate({ model: m.name, prompt: '', keep_alive: 0 })
    assert(r.done && r.done_reason === 'unload', 'unload reply', r)
  }
  assert((await ollama.ps()).models.length === 0, 'nothing loaded', await ollama.ps())
  await ollama.generate({ model: 'stories260k', prompt: '', keep_alive: '5m' }) // a load request
  const r = await ollama.chat({ model: 'story-c', messages: [], keep_alive: 0 })
  assert(r.done && r.done_reason === 'unload', 'chat unload reply', r)
  const names = (await ollama.ps()).models.map((m) => m.name.toLowerCase())
  assert(names.length === 1 && names[0] === 'stories260k:latest', 'stories260k alone stays loaded', names)
})

await check("Ollama's names and not-found error", async () => {
  const show = await ollama.show({ model: 'registry.ollama.ai/library/stories260k' })
  assert(show.details?.family === 'llama', 'show of the full name', show.details)
  const r = await ollama.generate({ model: 'library/stories260k', prompt: 'Once', options: { num_predict: 2 } })
  assert(r.done, 'generate of library/x', r)
  let e
  try {
    await ollama.generate({ model: 'nope', prompt: 'hi' })
  } catch (err) {
    e = err
  }
  assert(e?.name === 'ResponseError' && e.status_code === 404 && e.error === 'model "nope" not found', 'not found', String(e))
})

await check('GET / probe', async () => {
  const res = await fetch(base)
  assert(res.ok && (await res.text()) === 'Ollama is running', 'probe text', res.status)
})

const version = JSON.parse(readFileSync(new URL('./node_modules/ollama/package.json', import.meta.url), 'utf8')).version
const ok = checks.every((c) => c.ok)
console.log(JSON.stringify({ ok, versions: { ollama: version }, checks }))
process.exit(ok ? 0 : 1)
