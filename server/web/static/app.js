// app.js: folio's chat page. It holds the open conversation, draws the
// conversation list, streams replies and keeps the page's controls in
// step. The URL's fragment names the open conversation (#c/ID), so a
// reload reopens it.

import * as api from './api.js';
import { Models } from './models.js';
import { UserView, ReplyView, statsOf, copyText } from './chat.js';

const $ = (id) => document.getElementById(id);

const state = {
  conv: null, // the open conversation, as the API returns it (id null: a new chat not sent yet)
  views: [], // a UserView or ReplyView for each of conv.messages, in order
  streaming: null, // {controller, conv} while a reply streams
  resumed: false, // conv was opened with messages: its next reply says whether its prefix was restored
  list: [], // the conversation list as last fetched
  settingsDirty: false, // the settings panel changed since conv was saved
};

const models = new Models(showError, (name) => {
  if (!state.conv || !state.conv.messages.length) selectModel(name);
});

// ---- errors ----

function showError(message) {
  const a = $('alert');
  a.textContent = message;
  a.hidden = false;
}

function clearError() {
  $('alert').hidden = true;
}

// ---- the open conversation ----

function draft() {
  const last = localStorage.getItem('folio.model');
  const model = models.find(last) ? last : models.select.value || (models.list[0] && models.list[0].name) || '';
  return { id: null, title: 'New chat', model, system: '', options: {}, messages: [] };
}

// show makes conv the open conversation and draws it.
function show(conv, resumed) {
  state.conv = conv;
  state.resumed = resumed;
  state.views = [];
  state.settingsDirty = false;
  $('messages').replaceChildren();
  for (const msg of conv.messages) addView(viewOf(msg));
  drawTitle();
  fillSettings();
  models.choose(conv.model);
  updateControls();
  drawList();
  scrollToEnd();
}

function viewOf(msg) {
  if (msg.role === 'user') return new UserView(msg, edit);
  const v = new ReplyView(msg, shortName(state.conv.model), regenerate);
  v.finish(false);
  return v;
}

function addView(view) {
  state.views.push(view);
  $('messages').append(view.el);
  $('empty').hidden = true;
}

function newChat() {
  stop();
  show(draft(), false);
  $('composer-input').focus();
}

async function openConversation(id) {
  if (state.conv && state.conv.id === id) return;
  stop();
  try {
    const conv = await api.getConversation(id);
    clearError();
    show(conv, conv.messages.length > 0);
  } catch (e) {
    showError(e.status === 404 ? 'That conversation no longer exists.' : 'Opening the conversation: ' + e.message);
    history.replaceState(null, '', location.pathname);
    show(draft(), false);
  }
}

// resync redraws the open conversation as the server saved it, to learn
// the ids of a reply that was stopped or failed. A stopped reply is saved
// as the request ends, so wait (a little) for it.
async function resync(id, wantReply) {
  for (let tries = 0; tries < 20; tries++) {
    let conv;
    try {
      conv = await api.getConversation(id);
    } catch (e) {
      showError('Reloading the conversation: ' + e.message);
      return;
    }
    if (!state.conv || state.conv.id !== id || state.streaming) return;
    const last = conv.messages[conv.messages.length - 1];
    if (!wantReply || (last && last.role === 'assistant') || tries === 19) {
      const resumed = state.resumed;
      show(conv, resumed);
      return;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

function drawTitle() {
  const title = state.conv.title || 'New chat';
  $('title').textContent = title;
  document.title = `${title} · folio`;
  $('empty').hidden = state.conv.messages.length > 0;
}

function shortName(model) {
  return (model || '').replace(/:latest$/, '');
}

// updateControls enables what can be used now: while a reply streams,
// only Stop (and typing the next message).
function updateControls() {
  const busy = !!state.streaming;
  $('send').hidden = busy;
  $('stop').hidden = !busy;
  $('model').disabled = busy || $('model').options.length === 0;
  const replies = state.views.filter((v) => v instanceof ReplyView);
  for (const v of state.views) {
    if (v instanceof UserView) v.setEnabled(!busy);
    else v.setLast(v === replies[replies.length - 1] && v === state.views[state.views.length - 1], !busy && !!state.conv.id);
  }
}

// ---- sending and streaming ----

async function send() {
  const input = $('composer-input');
  const content = input.value.trim();
  if (!content || state.streaming) return;
  const model = $('model').value;
  if (!model) {
    showError('Pick a model first, or pull one from Models.');
    return;
  }
  clearError();
  let conv = state.conv;
  if (!conv.id) {
    try {
      const c = await api.createConversation({ model, system: conv.system || undefined, options: conv.options });
      conv = { ...c, messages: [] };
    } catch (e) {
      showError('Starting the conversation: ' + e.message);
      return;
    }
    state.conv = conv;
    state.settingsDirty = false;
    history.replaceState(null, '', '#c/' + encodeURIComponent(conv.id));
  } else if (!(await saveSettings())) {
    return;
  }
  input.value = '';
  autosize();
  const msg = { role: 'user', content };
  conv.messages.push(msg);
  const view = new UserView(msg, edit);
  addView(view);
  stickToEnd = true;
  await runChat({ content }, view);
}

function regenerate(view) {
  if (state.streaming || !state.conv.id) return;
  const k = state.views.indexOf(view);
  if (k !== state.views.length - 1) return;
  state.views.pop().el.remove();
  state.conv.messages.pop();
  runChat({ regenerate: true }, null);
}

function edit(view, content) {
  if (state.streaming || !view.msg.id) return;
  const k = state.views.indexOf(view);
  for (const v of state.views.splice(k + 1)) v.el.remove();
  state.conv.messages.length = k + 1;
  view.setContent(content);
  runChat({ edit: view.msg.id, content }, view);
}

function stop() {
  if (state.streaming) state.streaming.controller.abort();
}

// runChat streams the reply to body (a new message, a regeneration or an
// edit) into a new ReplyView; userView, if any, learns its message id from
// the stream's first line.
async function runChat(body, userView) {
  const conv = state.conv;
  const controller = new AbortController();
  state.streaming = { controller, conv };
  const reply = { role: 'assistant', content: '', thinking: '' };
  conv.messages.push(reply);
  const view = new ReplyView(reply, shortName(conv.model), regenerate);
  addView(view);
  view.setStreaming(true);
  updateControls();
  const resumed = state.resumed;
  let frame = 0;
  const draw = () => {
    frame = 0;
    view.draw();
    follow();
  };
  try {
    await api.chat(conv.id, body, controller.signal, (chunk) => {
      if (chunk.conversation) {
        Object.assign(conv, chunk.conversation, { messages: conv.messages });
        if (userView && chunk.user_message) userView.setId(chunk.user_message.id);
        if (state.conv === conv) drawTitle();
        return;
      }
      if (chunk.message) {
        reply.content += chunk.message.content || '';
        reply.thinking += chunk.message.thinking || '';
        if (!frame) frame = requestAnimationFrame(draw);
      }
      if (chunk.done) {
        reply.id = chunk.message_id;
        reply.stats = statsOf(chunk);
      }
    });
  } catch (e) {
    if (e.name === 'AbortError') reply.stopped = true;
    else reply.error = e.message;
  }
  cancelAnimationFrame(frame);
  state.streaming = null;
  view.setStreaming(false);
  view.draw();
  view.finish(resumed && !!reply.stats);
  if (reply.stats) state.resumed = false;
  updateControls();
  follow();
  refreshList();
  if (state.conv === conv && (!reply.id || (userView && !userView.msg.id))) await resync(conv.id, reply.stopped);
}

// ---- following the reply as it grows ----

let stickToEnd = true;

function follow() {
  if (stickToEnd) scrollToEnd();
}

function scrollToEnd() {
  const s = $('scroller');
  s.scrollTop = s.scrollHeight;
}

// ---- settings: system prompt and options of the conversation ----

function fillSettings() {
  const o = state.conv.options || {};
  $('system').value = state.conv.system || '';
  $('temperature').value = o.temperature ?? '';
  $('num_ctx').value = o.num_ctx ?? '';
  $('seed').value = o.seed ?? '';
}

// readSettings reads the panel into the conversation's system prompt and
// options (keeping the options the panel does not show, set through the
// API); it throws an error that names a bad field.
function readSettings() {
  const options = { ...(state.conv.options || {}) };
  for (const k of ['temperature', 'num_ctx', 'seed']) delete options[k];
  const num = (id, integer, min) => {
    const raw = $(id).value.trim();
    if (raw === '') return undefined;
    const v = Number(raw);
    if (!Number.isFinite(v) || (integer && !Number.isInteger(v)) || v < min) {
      throw new Error(`${$(id).labels[0].textContent} must be ${integer ? 'a whole number' : 'a number'}` +
        (min > -Infinity ? ` of at least ${min}` : '') + `, not "${raw}"`);
    }
    return v;
  };
  const t = num('temperature', false, 0), c = num('num_ctx', true, 1), s = num('seed', true, -Infinity);
  if (t !== undefined) options.temperature = t;
  if (c !== undefined) options.num_ctx = c;
  if (s !== undefined) options.seed = s;
  return { system: $('system').value, options };
}

// saveSettings saves a changed panel to the open conversation; false when
// it could not (the error is shown).
async function saveSettings() {
  if (!state.settingsDirty) return true;
  let s;
  try {
    s = readSettings();
  } catch (e) {
    showError(e.message);
    return false;
  }
  Object.assign(state.conv, s);
  state.settingsDirty = false;
  if (!state.conv.id) return true;
  try {
    await api.updateConversation(state.conv.id, s);
    return true;
  } catch (e) {
    state.settingsDirty = true;
    showError('Saving the settings: ' + e.message);
    return false;
  }
}

// ---- the conversation list ----

async function refreshList() {
  try {
    state.list = await api.listConversations($('search').value.trim());
  } catch (e) {
    showError('Listing conversations: ' + e.message);
    return;
  }
  drawList();
}

function drawList() {
  const ul = $('conversations');
  ul.replaceChildren();
  for (const c of state.list) ul.append(listItem(c));
  const searching = $('search').value.trim() !== '';
  const none = $('no-conversations');
  none.hidden = state.list.length > 0;
  none.textContent = searching ? 'No conversation has that in its title.' : 'No conversations yet.';
}

function button(text, className, label) {
  const b = document.createElement('button');
  b.type = 'button';
  b.className = className;
  b.textContent = text;
  b.setAttribute('aria-label', label);
  return b;
}

function listItem(c) {
  const li = document.createElement('li');
  li.className = 'conv';
  li.dataset.id = c.id;
  const a = document.createElement('a');
  a.href = '#c/' + encodeURIComponent(c.id);
  const title = document.createElement('span');
  title.className = 'conv-title';
  title.textContent = c.title;
  const meta = document.createElement('span');
  meta.className = 'conv-meta';
  meta.textContent = `${shortName(c.model)} · ${c.messages} message${c.messages === 1 ? '' : 's'}`;
  a.append(title, meta);
  if (state.conv && state.conv.id === c.id) {
    li.classList.add('current');
    a.setAttribute('aria-current', 'page');
  }
  a.addEventListener('click', () => closeSidebar());
  const rename = button('✎', 'rename', `Rename “${c.title}”`);
  const del = button('✕', 'delete', `Delete “${c.title}”`);
  rename.addEventListener('click', () => startRename(li, a, c));
  let armed = null;
  del.addEventListener('click', async () => {
    if (!armed) { // first click asks; a second within 4 s deletes
      del.textContent = 'Delete?';
      del.classList.add('confirm');
      del.setAttribute('aria-label', `Confirm: delete “${c.title}”`);
      armed = setTimeout(() => {
        armed = null;
        del.textContent = '✕';
        del.classList.remove('confirm');
        del.setAttribute('aria-label', `Delete “${c.title}”`);
      }, 4000);
      return;
    }
    clearTimeout(armed);
    try {
      await api.deleteConversation(c.id);
    } catch (e) {
      showError('Deleting the conversation: ' + e.message);
      return;
    }
    if (state.conv && state.conv.id === c.id) {
      history.replaceState(null, '', location.pathname);
      newChat();
    }
    refreshList();
  });
  li.append(a, rename, del);
  return li;
}

function startRename(li, a, c) {
  const input = document.createElement('input');
  input.value = c.title;
  input.setAttribute('aria-label', 'New title');
  input.maxLength = 200;
  let finished = false;
  const finish = async (save) => {
    if (finished) return;
    finished = true;
    const title = input.value.trim();
    if (save && title && title !== c.title) {
      try {
        const updated = await api.updateConversation(c.id, { title });
        if (state.conv && state.conv.id === c.id) {
          state.conv.title = updated.title;
          drawTitle();
        }
      } catch (e) {
        showError('Renaming: ' + e.message);
      }
    }
    await refreshList();
    const again = document.querySelector(`.conv[data-id="${CSS.escape(c.id)}"] .rename`);
    if (again) again.focus();
  };
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      finish(true);
    } else if (e.key === 'Escape') {
      e.preventDefault();
      e.stopPropagation();
      finish(false);
    }
  });
  input.addEventListener('blur', () => finish(true));
  a.replaceWith(input);
  input.focus();
  input.select();
}

// ---- the drawer on narrow screens ----

const narrow = matchMedia('(max-width: 800px)');

function setSidebar(open) {
  $('app').classList.toggle('sidebar-open', open);
  $('toggle-sidebar').setAttribute('aria-expanded', String(open));
  $('sidebar').inert = narrow.matches && !open;
}

function closeSidebar() {
  if ($('app').classList.contains('sidebar-open')) setSidebar(false);
}

// ---- wiring ----

function autosize() {
  const t = $('composer-input');
  t.style.height = 'auto';
  t.style.height = t.scrollHeight + 2 + 'px';
}

function route() {
  const m = /^#c\/(.+)$/.exec(location.hash);
  if (m) openConversation(decodeURIComponent(m[1]));
  else if (!state.conv || state.conv.id) newChat();
}

function wire() {
  $('composer').addEventListener('submit', (e) => {
    e.preventDefault();
    send();
  });
  const input = $('composer-input');
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send();
    }
  });
  input.addEventListener('input', autosize);
  $('stop').addEventListener('click', stop);
  document.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape' || e.defaultPrevented || $('models-dialog').open) return;
    if (state.streaming) {
      e.preventDefault();
      stop();
    } else {
      closeSidebar();
    }
  });
  $('new-chat').addEventListener('click', () => {
    closeSidebar();
    if (location.hash) history.pushState(null, '', location.pathname);
    newChat();
  });
  window.addEventListener('hashchange', route);
  window.addEventListener('popstate', route);
  let searchTimer = 0;
  $('search').addEventListener('input', () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(refreshList, 200);
  });
  $('model').addEventListener('change', () => selectModel($('model').value));
  for (const id of ['system', 'temperature', 'num_ctx', 'seed']) {
    $(id).addEventListener('input', () => {
      state.settingsDirty = true;
    });
    $(id).addEventListener('change', () => saveSettings());
  }
  $('open-settings').addEventListener('click', () => {
    const panel = $('settings');
    panel.hidden = !panel.hidden;
    $('open-settings').setAttribute('aria-expanded', String(!panel.hidden));
    if (!panel.hidden) $('system').focus();
  });
  $('toggle-sidebar').addEventListener('click', () => setSidebar(!$('app').classList.contains('sidebar-open')));
  $('scrim').addEventListener('click', () => setSidebar(false));
  narrow.addEventListener('change', () => setSidebar(false));
  $('scroller').addEventListener('scroll', () => {
    const s = $('scroller');
    stickToEnd = s.scrollHeight - s.scrollTop - s.clientHeight < 60;
  });
  $('messages').addEventListener('click', async (e) => {
    const b = e.target.closest('button.copy');
    if (!b) return;
    const code = b.closest('.code').querySelector('pre code');
    try {
      await copyText(code.textContent);
      b.textContent = 'Copied';
    } catch (err) {
      b.textContent = 'Copy failed';
      showError('Copying: ' + err.message);
    }
    setTimeout(() => {
      b.textContent = 'Copy';
    }, 1500);
  });
}

async function selectModel(name) {
  if (!name) return;
  localStorage.setItem('folio.model', name);
  models.choose(name);
  const conv = state.conv;
  if (!conv || conv.model === name) return;
  conv.model = name;
  if (!conv.id) return;
  try {
    await api.updateConversation(conv.id, { model: name });
    refreshList();
  } catch (e) {
    showError('Changing the model: ' + e.message);
  }
}

async function start() {
  wire();
  setSidebar(false);
  await models.refresh(localStorage.getItem('folio.model'));
  route();
  await refreshList();
  document.body.dataset.ready = 'true'; // the page has drawn: what scripts and tests wait for
}

start();
