// api.js: the calls the page makes to folio's API (Ollama's /api/tags,
// /api/show and /api/pull; folio's /api/folio/conversations), and a reader
// of their NDJSON streams.

// APIError is an answer that is not a success: the API's {"error": ...}
// message and the HTTP status (0 for an error inside a stream).
export class APIError extends Error {
  constructor(message, status) {
    super(message);
    this.name = 'APIError';
    this.status = status;
  }
}

async function errorOf(res) {
  let msg = `${res.status} ${res.statusText}`;
  try {
    const body = await res.json();
    if (body && typeof body.error === 'string') msg = body.error;
    else if (body && body.error && body.error.message) msg = body.error.message;
  } catch {
    // not JSON: keep the status line
  }
  return new APIError(msg, res.status);
}

async function call(method, path, body) {
  const init = { method, headers: { Accept: 'application/json' } };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  if (!res.ok) throw await errorOf(res);
  return res.status === 204 ? null : res.json();
}

const conv = (id) => '/api/folio/conversations/' + encodeURIComponent(id);

export const listModels = () => call('GET', '/api/tags').then((r) => r.models || []);
export const showModel = (model) => call('POST', '/api/show', { model });
export const listConversations = (q) =>
  call('GET', '/api/folio/conversations' + (q ? '?q=' + encodeURIComponent(q) : '')).then((r) => r.conversations || []);
export const createConversation = (c) => call('POST', '/api/folio/conversations', c);
export const getConversation = (id) => call('GET', conv(id));
export const updateConversation = (id, patch) => call('PATCH', conv(id), patch);
export const deleteConversation = (id) => call('DELETE', conv(id));

// stream POSTs body to path and calls onChunk with each object of the
// NDJSON answer, in order; a line {"error": ...} ends it with an
// APIError. Aborting signal rejects with the fetch's AbortError.
export async function stream(path, body, signal, onChunk) {
  const res = await fetch(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/x-ndjson' },
    body: JSON.stringify(body),
    signal,
  });
  if (!res.ok) throw await errorOf(res);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  const emit = (line) => {
    if (!line.trim()) return;
    const obj = JSON.parse(line);
    if (obj.error) throw new APIError(typeof obj.error === 'string' ? obj.error : JSON.stringify(obj.error), 0);
    onChunk(obj);
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      emit(line);
    }
  }
  emit(buf + decoder.decode());
}

// chat streams a reply in conversation id: body is {content},
// {regenerate: true} or {edit, content}.
export const chat = (id, body, signal, onChunk) => stream(conv(id) + '/chat', body, signal, onChunk);

// pull streams the progress of pulling model name.
export const pull = (name, insecure, signal, onChunk) =>
  stream('/api/pull', { model: name, insecure, stream: true }, signal, onChunk);
