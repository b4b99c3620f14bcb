// models.js: the installed models (/api/tags, with each one's context
// length from /api/show) in the header's picker and the Models dialog,
// and pulling a model by name with a progress bar fed by /api/pull's
// stream.

import * as api from './api.js';

const $ = (id) => document.getElementById(id);

// formatBytes is n bytes in B, KB, MB or GB (powers of 1000, as Ollama's
// list prints them).
export function formatBytes(n) {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let u = 0;
  while (n >= 1000 && u < units.length - 1) {
    n /= 1000;
    u++;
  }
  return `${u === 0 ? n : n.toFixed(n < 10 ? 1 : 0)} ${units[u]}`;
}

// contextOf is the model's trained context length from /api/show's
// model_info ("<architecture>.context_length"), or 0.
function contextOf(show) {
  const info = (show && show.model_info) || {};
  const arch = info['general.architecture'];
  return (arch && info[arch + '.context_length']) || 0;
}

export class Models {
  // onError shows an error; onPulled runs after a pull succeeds.
  constructor(onError, onPulled) {
    this.onError = onError;
    this.onPulled = onPulled;
    this.list = []; // /api/tags's models, each with .context once known
    this.select = $('model');
    this.dialog = $('models-dialog');
    this.pullController = null;
    $('open-models').addEventListener('click', () => this.open());
    $('close-models').addEventListener('click', () => this.dialog.close());
    $('pull-form').addEventListener('submit', (e) => {
      e.preventDefault();
      this.pull($('pull-name').value.trim(), $('pull-insecure').checked);
    });
    $('pull-cancel').addEventListener('click', () => this.pullController && this.pullController.abort());
  }

  open() {
    this.dialog.showModal();
    this.refresh();
  }

  // refresh reloads the list and redraws the picker (keeping selected,
  // or its current choice) and the table.
  async refresh(selected) {
    const keep = selected || this.select.value;
    try {
      this.list = await api.listModels();
    } catch (e) {
      this.onError('Listing models: ' + e.message);
      return;
    }
    this.list.sort((a, b) => a.name.localeCompare(b.name));
    await Promise.all(this.list.map(async (m) => {
      try {
        m.context = contextOf(await api.showModel(m.name));
      } catch {
        m.context = 0; // shown as unknown; the list itself loaded
      }
    }));
    this.drawSelect(keep);
    this.drawTable();
  }

  // find is the installed model named name (with or without ":latest";
  // names match whatever their case, as the server's do).
  find(name) {
    if (!name) return undefined;
    const want = (name.includes(':') ? name : name + ':latest').toLowerCase();
    return this.list.find((m) => m.name.toLowerCase() === want);
  }

  // choose selects the model named name in the picker, adding it (as not
  // installed) when the list lacks it.
  choose(name) {
    this.drawSelect(name);
  }

  drawSelect(want) {
    this.select.replaceChildren();
    for (const m of this.list) {
      const o = new Option(label(m), m.name);
      this.select.append(o);
    }
    const found = this.find(want);
    if (found) {
      this.select.value = found.name;
    } else if (want) {
      const o = new Option(`${want} (not installed)`, want);
      this.select.append(o);
      this.select.value = want;
    }
    this.select.disabled = this.select.options.length === 0;
    $('no-models').hidden = this.list.length > 0;
  }

  drawTable() {
    const rows = $('model-rows');
    rows.replaceChildren();
    if (!this.list.length) {
      const td = document.createElement('td');
      td.colSpan = 6;
      td.className = 'muted';
      td.textContent = 'No models installed yet. Pull one below.';
      rows.append(row([td]));
      return;
    }
    for (const m of this.list) {
      const d = m.details || {};
      const cells = [m.name, formatBytes(m.size || 0), d.family || '', d.parameter_size || '', d.quantization_level || '',
        m.context ? m.context.toLocaleString('en-US') : 'unknown'].map((text, k) => {
        const td = document.createElement(k === 0 ? 'th' : 'td');
        if (k === 0) td.scope = 'row';
        if (k === 1 || k === 5) td.className = 'num';
        td.textContent = text;
        return td;
      });
      const tr = row(cells);
      tr.dataset.model = m.name;
      rows.append(tr);
    }
  }

  // pull pulls name, showing its progress: the bar is the bytes of every
  // layer seen so far over their total; "success" fills it.
  async pull(name, insecure) {
    if (!name || this.pullController) return;
    const bar = $('pull-progress'), status = $('pull-status');
    const layers = new Map(); // digest → {total, completed}
    this.pullController = new AbortController();
    bar.hidden = false;
    bar.value = 0;
    status.textContent = `Pulling ${name}…`;
    $('pull-start').disabled = true;
    $('pull-cancel').hidden = false;
    let ok = false;
    try {
      await api.pull(name, insecure, this.pullController.signal, (p) => {
        if (p.digest && p.total) layers.set(p.digest, { total: p.total, completed: p.completed || 0 });
        let total = 0, done = 0;
        for (const l of layers.values()) {
          total += l.total;
          done += l.completed;
        }
        if (p.status === 'success') {
          bar.value = 100;
          ok = true;
        } else if (total > 0) {
          bar.value = Math.min(100, (100 * done) / total);
        }
        const pct = total > 0 || ok ? ` (${Math.floor(bar.value)}%)` : '';
        status.textContent = `${p.status}${pct}`;
      });
      if (!ok) throw new Error('the stream ended before "success"');
      status.textContent = `Pulled ${name}.`;
      await this.refresh();
      this.onPulled(name);
    } catch (e) {
      status.textContent = e.name === 'AbortError' ? 'Pull cancelled.' : `Pull failed: ${e.message}`;
    } finally {
      this.pullController = null;
      $('pull-start').disabled = false;
      $('pull-cancel').hidden = true;
    }
  }
}

function label(m) {
  const d = m.details || {};
  const name = m.name.endsWith(':latest') ? m.name.slice(0, -':latest'.length) : m.name;
  return [name, d.parameter_size, d.quantization_level].filter(Boolean).join(' · ');
}

function row(cells) {
  const tr = document.createElement('tr');
  tr.append(...cells);
  return tr;
}
