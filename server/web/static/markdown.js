// markdown.js: the Markdown renderer of model replies.
//
// It builds DOM nodes and gives them text only through createTextNode, and
// attributes only from a fixed set (href when its scheme is http, https or
// mailto; a language class made of safe characters). It never parses HTML,
// so a reply's <script>, <img onerror=...> or javascript: link is shown as
// text and never runs.
//
// Blocks: paragraphs (a line break inside one is kept), ATX headings,
// fenced code blocks (an unclosed fence runs to the end, as while a reply
// streams), bullet and numbered lists nested by indentation, tables, block
// quotes, thematic breaks. Inline: `code`, **strong**, *em*, _em_,
// ***both***, ~~strike~~, [links](url), ![images](url) (shown as links,
// never loaded), <autolinks>, bare http(s) URLs, backslash escapes.

const SAFE_SCHEMES = new Set(['http:', 'https:', 'mailto:']);

// safeURL is href, normalised, when it is absolute with a safe scheme;
// else null.
export function safeURL(href) {
  let u;
  try {
    u = new URL(href.trim());
  } catch {
    return null; // relative, or not a URL
  }
  return SAFE_SCHEMES.has(u.protocol) ? u.href : null;
}

// render returns a fragment holding text rendered as Markdown.
export function render(text) {
  const frag = document.createDocumentFragment();
  blocks(String(text).replace(/\r\n?/g, '\n').split('\n'), frag);
  return frag;
}

function el(tag, ...children) {
  const e = document.createElement(tag);
  for (const c of children) e.append(c);
  return e;
}

const FENCE = /^( {0,3})(`{3,}|~{3,})[ \t]*([^`\s]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const ITEM = /^( *)([-*+]|\d{1,9}[.)])(?:[ \t]+(.*))?$/;
const DELIMITER = /^ *\|? *:?-+:? *(\| *:?-+:? *)*\|? *$/;

const blank = (line) => line.trim() === '';
const indentOf = (line) => line.length - line.trimStart().length;

// startsBlock reports whether line (followed by next) opens a block other
// than a paragraph, so that it ends the paragraph before it.
function startsBlock(line, next) {
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) ||
    ITEM.test(line) && ITEM.exec(line)[3] !== undefined || isTable(line, next);
}

// blocks renders lines as block elements into parent.
function blocks(lines, parent) {
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if (blank(line)) {
      i++;
    } else if ((m = FENCE.exec(line))) {
      i = codeBlock(lines, i, m, parent);
    } else if ((m = HEADING.exec(line))) {
      const h = el('h' + m[1].length);
      inline(m[2] || '', h);
      parent.append(h);
      i++;
    } else if (RULE.test(line)) {
      parent.append(el('hr'));
      i++;
    } else if (QUOTE.test(line)) {
      const inner = [];
      while (i < lines.length && !blank(lines[i]) && (QUOTE.test(lines[i]) || !startsBlock(lines[i], lines[i + 1]))) {
        const q = QUOTE.exec(lines[i]);
        inner.push(q ? q[1] : lines[i]);
        i++;
      }
      const bq = el('blockquote');
      blocks(inner, bq);
      parent.append(bq);
    } else if (ITEM.test(line) && ITEM.exec(line)[3] !== undefined) {
      i = list(lines, i, parent);
    } else if (isTable(line, lines[i + 1])) {
      i = table(lines, i, parent);
    } else {
      const para = [];
      while (i < lines.length && !blank(lines[i]) && !(para.length && startsBlock(lines[i], lines[i + 1]))) {
        para.push(lines[i].trim());
        i++;
      }
      const p = el('p');
      inline(para.join('\n'), p);
      parent.append(p);
    }
  }
}

// codeBlock renders the fence opened at lines[i] (matched as m) and
// returns the index after its closing fence.
function codeBlock(lines, i, m, parent) {
  const indent = m[1].length, fence = m[2], lang = m[3].replace(/[^\w+#.-]/g, '').slice(0, 32);
  const body = [];
  for (i++; i < lines.length; i++) {
    const close = lines[i].trim();
    if (indentOf(lines[i]) < 4 && close.startsWith(fence) && close.split('').every((c) => c === fence[0])) {
      i++;
      break;
    }
    body.push(lines[i].slice(Math.min(indent, indentOf(lines[i]))));
  }
  const code = el('code', body.join('\n'));
  if (lang) code.className = 'language-' + lang;
  const copy = el('button', 'Copy');
  copy.type = 'button';
  copy.className = 'copy';
  copy.setAttribute('aria-label', lang ? `Copy ${lang} code` : 'Copy code');
  const head = el('div', el('span', lang || 'code'), copy);
  head.className = 'code-head';
  const wrap = el('div', head, el('pre', code));
  wrap.className = 'code';
  parent.append(wrap);
  return i;
}

// list renders the list whose first item is lines[i] and returns the
// index after it. An item holds the lines indented past its marker's
// column (nested lists among them) and lazy continuation lines.
function list(lines, i, parent) {
  const first = ITEM.exec(lines[i]);
  const ordered = /^\d/.test(first[2]);
  const base = first[1].length;
  const l = el(ordered ? 'ol' : 'ul');
  if (ordered && parseInt(first[2], 10) !== 1) l.start = parseInt(first[2], 10);
  while (i < lines.length) {
    const m = ITEM.exec(lines[i]);
    if (!m || m[3] === undefined || m[1].length < base || m[1].length > base + 1 || /^\d/.test(m[2]) !== ordered) break;
    const contentIndent = m[1].length + m[2].length + 1;
    const body = [m[3]];
    let sawBlank = false;
    for (i++; i < lines.length; i++) {
      const line = lines[i];
      if (blank(line)) {
        sawBlank = true;
        body.push('');
        continue;
      }
      const ind = indentOf(line);
      if (ind >= base + 2) {
        body.push(line.slice(Math.min(ind, contentIndent)));
        sawBlank = false;
        continue;
      }
      if (sawBlank || ITEM.test(line) || startsBlock(line, lines[i + 1])) break;
      body.push(line.trim()); // a lazy continuation of the item's paragraph
    }
    while (body.length && body[body.length - 1] === '') body.pop();
    const li = el('li');
    blocks(body, li);
    const paras = [...li.children].filter((c) => c.tagName === 'P');
    if (paras.length === 1) paras[0].replaceWith(...paras[0].childNodes); // a tight item
    l.append(li);
  }
  parent.append(l);
  return i;
}

// cells splits a table row at the pipes that are neither escaped nor in
// a code span, dropping the outer pipes.
function cells(line) {
  const out = [];
  let cur = '', code = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === '\\' && line[i + 1] === '|') {
      cur += '\\|';
      i++;
    } else if (c === '`') {
      code = !code;
      cur += c;
    } else if (c === '|' && !code) {
      out.push(cur);
      cur = '';
    } else {
      cur += c;
    }
  }
  out.push(cur);
  const trimmed = line.trim();
  if (trimmed.startsWith('|')) out.shift();
  if (trimmed.endsWith('|') && trimmed.length > 1) out.pop();
  return out.map((c) => c.trim());
}

function isTable(line, next) {
  return next !== undefined && line.includes('|') && DELIMITER.test(next) && next.includes('-') &&
    cells(line).length === cells(next).length;
}

// table renders the table whose header is lines[i] and returns the index
// after its last row.
function table(lines, i, parent) {
  const head = cells(lines[i]);
  const align = cells(lines[i + 1]).map((c) =>
    c.startsWith(':') && c.endsWith(':') ? 'center' : c.endsWith(':') ? 'right' : c.startsWith(':') ? 'left' : '');
  const row = (texts, tag) => {
    const tr = el('tr');
    head.forEach((_, k) => {
      const cell = el(tag);
      if (align[k]) cell.className = 'align-' + align[k];
      inline(texts[k] || '', cell);
      tr.append(cell);
    });
    return tr;
  };
  const tbody = el('tbody');
  for (i += 2; i < lines.length && !blank(lines[i]) && lines[i].includes('|'); i++) tbody.append(row(cells(lines[i]), 'td'));
  const t = el('table', el('thead', row(head, 'th')));
  if (tbody.children.length) t.append(tbody);
  const wrap = el('div', t);
  wrap.className = 'table-wrap';
  parent.append(wrap);
  return i;
}

const PUNCT = /[!-/:-@[-`{-~]/;
const BARE_URL = /^https?:\/\/[^\s<>"]*[^\s<>".,:;!?'")\]*_~]/;

// inline renders the inline Markdown of text into parent.
function inline(text, parent) {
  let buf = '';
  const flush = () => {
    if (buf) parent.append(document.createTextNode(buf));
    buf = '';
  };
  const put = (node) => {
    flush();
    parent.append(node);
  };
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '\\' && i + 1 < text.length && PUNCT.test(text[i + 1])) {
      buf += text[i + 1];
      i += 2;
    } else if (c === '\n') {
      put(el('br'));
      i++;
    } else if (c === '`') {
      const run = runOf(text, i, '`');
      const end = closingTicks(text, i + run, run);
      if (end < 0) {
        buf += text.slice(i, i + run);
        i += run;
        continue;
      }
      let s = text.slice(i + run, end).replace(/\n/g, ' ');
      if (s.length > 2 && s.startsWith(' ') && s.endsWith(' ')) s = s.slice(1, -1);
      put(el('code', s));
      i = end + run;
    } else if (c === '*' || c === '_' || c === '~') {
      const n = emphasis(text, i, put);
      if (n > 0) {
        i = n;
      } else {
        const run = runOf(text, i, c);
        buf += text.slice(i, i + run);
        i += run;
      }
    } else if (c === '[' || (c === '!' && text[i + 1] === '[')) {
      const n = link(text, i, put);
      if (n > 0) {
        i = n;
      } else {
        buf += c;
        i++;
      }
    } else if (c === '<') {
      const m = /^<([a-zA-Z][a-zA-Z0-9+.-]{1,31}:[^\s<>]*)>/.exec(text.slice(i));
      const href = m && safeURL(m[1]);
      if (href) {
        put(anchor(href, m[1]));
        i += m[0].length;
      } else {
        buf += c;
        i++;
      }
    } else if (c === 'h' && (i === 0 || !/[\w/]/.test(text[i - 1])) && BARE_URL.test(text.slice(i))) {
      const url = BARE_URL.exec(text.slice(i))[0];
      const href = safeURL(url);
      if (href) put(anchor(href, url));
      else buf += url;
      i += url.length;
    } else {
      buf += c;
      i++;
    }
  }
  flush();
}

function runOf(text, i, c) {
  let n = 0;
  while (text[i + n] === c) n++;
  return n;
}

// closingTicks is the index of the next run of exactly n backticks from
// i, or -1.
function closingTicks(text, i, n) {
  for (let j = i; j < text.length;) {
    if (text[j] !== '`') {
      j++;
      continue;
    }
    const run = runOf(text, j, '`');
    if (run === n) return j;
    j += run;
  }
  return -1;
}

const TAGS = { 1: ['em'], 2: ['strong'], 3: ['strong', 'em'] };

// emphasis renders the emphasis opened by the delimiter run at text[i],
// if it is closed, and returns the index after it; else 0.
function emphasis(text, i, put) {
  const c = text[i];
  const n = runOf(text, i, c);
  if (c === '~' ? n !== 2 : n > 3) return 0;
  const after = text[i + n];
  if (after === undefined || /\s/.test(after)) return 0;
  if (c === '_' && i > 0 && /[\p{L}\p{N}]/u.test(text[i - 1])) return 0; // intraword _
  for (let j = i + n + 1; j < text.length;) {
    if (text[j] === '\\') {
      j += 2;
      continue;
    }
    if (text[j] === '`') {
      const run = runOf(text, j, '`');
      const end = closingTicks(text, j + run, run);
      j = end < 0 ? j + run : end + run;
      continue;
    }
    if (text[j] !== c) {
      j++;
      continue;
    }
    const run = runOf(text, j, c);
    const closes = run === n && !/\s/.test(text[j - 1]) &&
      !(c === '_' && /[\p{L}\p{N}]/u.test(text[j + n] || ''));
    if (!closes) {
      j += run;
      continue;
    }
    const tags = c === '~' ? ['del'] : TAGS[n];
    const outer = el(tags[0]);
    let inner = outer;
    if (tags[1]) {
      inner = el(tags[1]);
      outer.append(inner);
    }
    inline(text.slice(i + n, j), inner);
    put(outer);
    return j + n;
  }
  return 0;
}

// link renders [label](href "title") or ![alt](src) at text[i] and
// returns the index after it, or 0 when none is there. An image is shown
// as a link to it (a reply never makes the page load anything); an unsafe
// href leaves the label as plain text.
function link(text, i, put) {
  const image = text[i] === '!';
  const open = image ? i + 1 : i;
  let depth = 0, close = -1;
  for (let j = open; j < text.length; j++) {
    if (text[j] === '\\') j++;
    else if (text[j] === '[') depth++;
    else if (text[j] === ']' && --depth === 0) {
      close = j;
      break;
    }
  }
  if (close < 0 || text[close + 1] !== '(') return 0;
  const m = /^\(\s*(<[^<>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)(?:\s+("[^"]*"|'[^']*'))?\s*\)/.exec(text.slice(close + 1));
  if (!m) return 0;
  const dest = m[1].startsWith('<') ? m[1].slice(1, -1) : m[1];
  const label = text.slice(open + 1, close);
  const href = safeURL(dest);
  const node = href ? anchor(href) : el('span');
  if (image) node.append(label || dest);
  else inline(label, node);
  if (href && m[2]) node.title = m[2].slice(1, -1);
  put(node);
  return close + 1 + m[0].length;
}

function anchor(href, text) {
  const a = el('a');
  a.href = href;
  a.rel = 'noopener noreferrer nofollow';
  a.target = '_blank';
  if (text !== undefined) a.append(text);
  return a;
}
