// chat.js: the messages of a conversation on the page. A user message is
// plain text (never Markdown: what the user typed is shown as typed); a
// reply is Markdown (markdown.js), its thinking apart in a collapsible
// box, and a line of statistics: speed, prompt size and how much of the
// prompt came from folio's prefix cache.

import { render } from './markdown.js';

function el(tag, className, ...children) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  for (const c of children) e.append(c);
  return e;
}

function button(text, className, label) {
  const b = el('button', className, text);
  b.type = 'button';
  if (label) b.setAttribute('aria-label', label);
  return b;
}

// UserView is a user message: its text and an Edit button, which turns it
// into a box to change and resend it.
export class UserView {
  constructor(msg, onEdit) {
    this.msg = msg;
    this.onEdit = onEdit;
    this.body = el('div', 'msg-body', msg.content);
    this.editButton = button('Edit', 'edit', 'Edit and resend this message');
    this.editButton.addEventListener('click', () => this.startEdit());
    this.actions = el('div', 'msg-actions', this.editButton);
    this.el = el('article', 'msg user', el('div', 'msg-head', 'You'), this.body, this.actions);
    this.setId(msg.id);
  }

  setId(id) {
    this.msg.id = id;
    if (id) this.el.dataset.id = id;
    this.editButton.disabled = !id;
  }

  setEnabled(on) {
    this.editButton.disabled = !on || !this.msg.id;
  }

  startEdit() {
    const area = el('textarea');
    area.value = this.msg.content;
    area.rows = Math.min(12, Math.max(2, this.msg.content.split('\n').length));
    area.setAttribute('aria-label', 'Edited message');
    const send = button('Send', 'primary');
    const cancel = button('Cancel', '');
    const box = el('div', 'edit-box', area, el('div', 'msg-actions', send, cancel));
    const done = () => {
      box.replaceWith(this.body);
      this.actions.hidden = false;
    };
    send.addEventListener('click', () => {
      const content = area.value.trim();
      if (!content) return;
      done();
      this.onEdit(this, content);
    });
    cancel.addEventListener('click', done);
    area.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        send.click();
      } else if (e.key === 'Escape') {
        e.preventDefault();
        e.stopPropagation();
        done();
      }
    });
    this.body.replaceWith(box);
    this.actions.hidden = true;
    area.focus();
  }

  setContent(content) {
    this.msg.content = content;
    this.body.textContent = content;
  }
}

// ReplyView is an assistant message: thinking, Markdown content, badges,
// statistics and, on the last reply, a Regenerate button.
export class ReplyView {
  constructor(msg, who, onRegenerate) {
    this.msg = msg;
    this.thinkingBody = el('div', 'thinking-body');
    this.thinking = el('details', 'thinking', el('summary', '', 'Thinking'), this.thinkingBody);
    this.thinking.hidden = true;
    this.body = el('div', 'msg-body markdown');
    this.notes = el('div', 'msg-notes');
    this.regenerate = button('Regenerate', 'regenerate', 'Regenerate this reply');
    this.regenerate.addEventListener('click', () => onRegenerate(this));
    this.actions = el('div', 'msg-actions', this.regenerate);
    this.el = el('article', 'msg assistant', el('div', 'msg-head', who), this.thinking, this.body, this.notes, this.actions);
    this.shown = { content: null, thinking: null };
    this.el.setAttribute('aria-busy', 'false');
    this.draw();
  }

  // setStreaming marks the reply as arriving (aria-busy: screen readers
  // read it once it is whole) or done.
  setStreaming(on) {
    this.el.setAttribute('aria-busy', on ? 'true' : 'false');
    this.el.classList.toggle('streaming', on);
    if (on) this.thinking.open = true;
  }

  // draw renders what changed of the content and thinking.
  draw() {
    const { content = '', thinking = '' } = this.msg;
    if (thinking !== this.shown.thinking) {
      this.thinking.hidden = !thinking;
      this.thinkingBody.textContent = thinking;
      this.shown.thinking = thinking;
    }
    if (content !== this.shown.content) {
      this.body.replaceChildren(render(content));
      this.shown.content = content;
    }
  }

  // finish shows the reply's end: stopped, an error, its statistics and,
  // when resumed is set (the first reply after reopening a conversation),
  // whether its prefix was restored from the cache or computed again.
  finish(resumed) {
    const { stats, stopped, error } = this.msg;
    if (this.msg.id) this.el.dataset.id = this.msg.id;
    this.notes.replaceChildren();
    if (stopped) this.notes.append(el('span', 'badge stopped', 'Stopped'));
    if (error) this.notes.append(el('p', 'msg-error', 'Error: ' + error));
    if (stats) this.notes.append(statsLine(stats));
    if (resumed && stats) this.notes.append(resumedLine(stats));
    if (!this.msg.content && !this.msg.thinking && !stopped && !error && this.el.getAttribute('aria-busy') !== 'true') {
      this.body.replaceChildren(el('p', 'muted', '(empty reply)'));
      this.shown.content = null;
    }
    if (this.msg.thinking && this.el.getAttribute('aria-busy') !== 'true') this.thinking.open = false;
  }

  setLast(last, enabled) {
    this.regenerate.hidden = !last;
    this.regenerate.disabled = !enabled;
  }
}

// statsOf is the statistics of a reply from its final stream chunk, in
// the shape the API stores with the message.
export function statsOf(chunk) {
  const s = {
    prompt_eval_count: chunk.prompt_eval_count || 0,
    prompt_cached_count: chunk.prompt_cached_count || 0,
    prompt_restored_count: chunk.prompt_restored_count || 0,
    eval_count: chunk.eval_count || 0,
    eval_duration: chunk.eval_duration || 0,
  };
  s.tokens_per_second = s.eval_duration > 0 ? s.eval_count / (s.eval_duration / 1e9) : 0;
  return s;
}

function statsLine(s) {
  const prompt = s.prompt_eval_count || 0, cached = s.prompt_cached_count || 0, restored = s.prompt_restored_count || 0;
  const tps = s.tokens_per_second || (s.eval_duration > 0 ? s.eval_count / (s.eval_duration / 1e9) : 0);
  const p = el('p', 'stats');
  p.dataset.prompt = prompt;
  p.dataset.cached = cached;
  p.dataset.restored = restored;
  const parts = [];
  if (tps > 0) parts.push(`${tps.toFixed(tps < 10 ? 1 : 0)} tokens/s`);
  if (s.eval_count) parts.push(`${s.eval_count} tokens`);
  parts.push(`prompt ${prompt} tokens`);
  parts.push(`${cached} of ${prompt} prompt tokens from cache` + (restored > 0 ? ` (${restored} restored from disk)` : ''));
  p.append(parts.join(' · '));
  return p;
}

function resumedLine(s) {
  const cached = s.prompt_cached_count || 0, restored = s.prompt_restored_count || 0;
  const p = el('p', 'resumed');
  p.dataset.cached = cached;
  const where = restored > 0 ? ` (${restored} of them loaded from disk, where folio kept them)` : '';
  p.append(cached > 0
    ? `Resumed: ${cached} prompt tokens of this conversation were restored from folio's cache${where}, not computed again.`
    : 'Resumed: no part of this conversation was in the cache, so its prompt was computed again.');
  return p;
}

// copyText puts text on the clipboard: the Clipboard API where the page
// is a secure context (localhost), else a selected text area.
export async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const area = el('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.style.position = 'fixed';
  area.style.opacity = '0';
  document.body.append(area);
  area.select();
  const ok = document.execCommand('copy');
  area.remove();
  if (!ok) throw new Error('the browser refused to copy');
}
