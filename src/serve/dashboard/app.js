// The faucet dashboard: plain JavaScript over the /v1/ API of `faucet
// serve`.  The DOM is built with createElement/textContent only (never
// innerHTML), the token is kept in sessionStorage and sent as
// "Authorization: Bearer", never in a URL.
'use strict';

const TOKEN_KEY = 'faucet-token';
let modal = false;        // an undo confirmation is open: no refresh under it
let pending = null;       // the debounced refresh
let pollTimer = null;
let streamAbort = null;
let notice = null;        // the last undo's outcome, kept over refreshes

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
  }
  return e;
}

class AuthNeeded extends Error {}

function headers(extra) {
  const h = Object.assign({}, extra || {});
  const t = sessionStorage.getItem(TOKEN_KEY);
  if (t) h['Authorization'] = 'Bearer ' + t;
  return h;
}

// A request to the API: {status, body}; a 401 shows the token form.
async function api(method, path, body) {
  const init = { method, headers: headers(body !== undefined ? { 'Content-Type': 'application/json' } : {}) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const r = await fetch(path, init);
  if (r.status === 401) {
    askToken(sessionStorage.getItem(TOKEN_KEY) ? 'The token was refused.' : '');
    throw new AuthNeeded();
  }
  const text = await r.text();
  let doc = null;
  try { doc = text ? JSON.parse(text) : null; } catch (e) { doc = null; }
  return { status: r.status, body: doc };
}

async function getJSON(path) {
  const r = await api('GET', path);
  if (r.status !== 200) {
    const msg = r.body && r.body.error ? r.body.error.message : 'HTTP ' + r.status;
    throw new Error(path + ': ' + msg);
  }
  return r.body;
}

function askToken(message) {
  document.getElementById('auth').hidden = false;
  document.getElementById('main').hidden = true;
  document.getElementById('auth-error').textContent = message;
  document.getElementById('token').focus();
}

function enc(s) { return encodeURIComponent(s); }

function setLive(text) { document.getElementById('live').textContent = text; }

// ---- views ---------------------------------------------------------------

function route() {
  const m = /^#\/p\/(.+)$/.exec(location.hash);
  return m ? { view: 'pipeline', name: decodeURIComponent(m[1]) } : { view: 'pipelines' };
}

async function render() {
  if (modal) return;
  const main = document.getElementById('main');
  const r = route();
  try {
    const view = r.view === 'pipeline' ? await pipelineView(r.name) : await pipelinesView();
    if (modal) return;
    document.getElementById('auth').hidden = true;
    main.hidden = false;
    const old = main.querySelector('[data-view]');
    // keep the filter text and focus of the pipelines view over a refresh
    const filter = old ? old.querySelector('#filter') : null;
    if (filter && view.querySelector('#filter') && old.dataset.view === view.dataset.view) {
      const fresh = view.querySelector('#filter');
      fresh.value = filter.value;
      applyFilter(view, filter.value);
      const had = document.activeElement === filter;
      main.replaceChildren(view);
      if (had) { fresh.focus(); fresh.setSelectionRange(fresh.value.length, fresh.value.length); }
    } else {
      main.replaceChildren(view);
    }
  } catch (e) {
    if (e instanceof AuthNeeded) return;
    main.replaceChildren(el('p', { class: 'error', role: 'alert', text: String(e.message || e) }));
  }
}

function applyFilter(view, text) {
  const t = text.trim().toLowerCase();
  for (const tr of view.querySelectorAll('tbody tr')) tr.hidden = t !== '' && !tr.dataset.pipeline.toLowerCase().includes(t);
}

async function pipelinesView() {
  const list = await getJSON('/v1/pipelines');
  const view = el('section', { 'data-view': 'pipelines', 'aria-labelledby': 'pl-title' });
  const filter = el('input', { id: 'filter', type: 'search', placeholder: 'name contains…' });
  filter.addEventListener('input', () => applyFilter(view, filter.value));
  view.append(el('h2', { id: 'pl-title', text: 'Pipelines' }),
    el('p', {}, el('label', { for: 'filter', text: 'Filter pipelines' }), filter));
  const tbody = el('tbody');
  for (const p of list) {
    tbody.append(el('tr', { 'data-pipeline': p.pipeline },
      el('td', { 'data-label': 'Pipeline' }, el('a', { href: '#/p/' + enc(p.pipeline), text: p.pipeline })),
      el('td', { 'data-label': 'Keys', text: String(p.keys) }),
      el('td', { 'data-label': 'Last change', text: p.last_change || '—' }),
      el('td', { 'data-label': 'Live lease', text: p.leases > 0 ? 'yes (' + p.leases + ')' : 'no' }),
      el('td', { 'data-label': 'Backfill running', text: p.backfill_running ? 'yes' : 'no' })));
  }
  view.append(el('table', { id: 'pipelines', class: 'stack' },
    el('thead', {}, el('tr', {}, ...['Pipeline', 'Keys', 'Last change', 'Live lease', 'Backfill running']
      .map(h => el('th', { scope: 'col', text: h })))), tbody));
  if (list.length === 0) view.append(el('p', { text: 'No pipelines yet.' }));
  return view;
}

async function pipelineView(name) {
  const base = '/v1/pipelines/' + enc(name);
  const [exp, runs, locks, bfs] = await Promise.all([
    getJSON(base + '/export'), getJSON(base + '/runs'), getJSON('/v1/locks'), getJSON(base + '/backfills')]);
  const details = await Promise.all(bfs.backfills.map(b => getJSON(base + '/backfills/' + b.range_hash)));
  const view = el('section', { 'data-view': 'pipeline:' + name, 'aria-labelledby': 'p-title' });
  view.append(el('p', {}, el('a', { href: '#/', text: '← all pipelines' })),
    el('h2', { id: 'p-title', text: 'Pipeline ' + name }));
  view.append(bookmarksSection(exp.keys || {}), runsSection(name, runs),
    locksSection(name, locks), backfillsSection(details));
  return view;
}

function bookmarksSection(all) {
  // the pipeline's own keys: not the run and backfill bookkeeping (::__x__)
  const keys = {};
  for (const [k, v] of Object.entries(all)) if (!/::__[a-z_]+__(::|$)/.test(k)) keys[k] = v;
  const text = JSON.stringify(keys, null, 2);
  const pre = el('pre', { id: 'bookmarks', tabindex: '0', text });
  const status = el('span', { role: 'status' });
  const copy = el('button', { type: 'button', text: 'Copy bookmarks' });
  copy.addEventListener('click', async () => {
    try { await navigator.clipboard.writeText(text); status.textContent = ' copied'; }
    catch (e) { status.textContent = ' copy failed: select the text instead'; }
  });
  return el('div', {}, el('h3', { text: 'Bookmarks' }), copy, status, pre);
}

function runsSection(name, scopes) {
  const box = el('div', { id: 'runs' }, el('h3', { text: 'Run history' }));
  const panel = el('div', { id: 'undo-area' });
  if (notice) panel.append(notice);
  box.append(panel);
  let any = false;
  for (const scope of scopes) {
    const tbody = el('tbody');
    for (const r of scope.runs) {
      any = true;
      const outcome = r.outcome || (r.ended_at ? 'unknown' : 'running');
      const undo = el('button', { type: 'button', class: 'undo', 'data-run': r.run,
        'aria-label': 'Undo run ' + r.run, text: 'Undo' });
      undo.addEventListener('click', () => startUndo(name, scope.row, r.run, panel));
      tbody.append(el('tr', { 'data-run': r.run },
        el('td', { 'data-label': 'Run', class: 'keys', text: r.run }),
        el('td', { 'data-label': 'Started', text: r.started_at || '' }),
        el('td', { 'data-label': 'Outcome', class: 'outcome outcome-' + outcome, text: outcome + (r.undoes ? ' (undoes ' + r.undoes + ')' : '') }),
        el('td', { 'data-label': 'Keys changed', class: 'keys', text: (r.keys || []).length + ': ' + (r.keys || []).join(', ') }),
        el('td', { 'data-label': 'By', text: r.by ? (r.by.command || '') + ' @' + (r.by.host || '') : '' }),
        el('td', {}, undo)));
    }
    box.append(el('h4', { text: 'Row ' + scope.row }),
      el('table', { class: 'stack' }, el('thead', {}, el('tr', {},
        ...['Run', 'Started', 'Outcome', 'Keys changed', 'By', ''].map(h => el('th', { scope: 'col', text: h })))), tbody));
  }
  if (!any) box.append(el('p', { text: 'No runs.' }));
  return box;
}

function valueText(v) { return v === null || v === undefined ? '(absent)' : JSON.stringify(v); }

function conflictPanel(doc) {
  const ul = el('ul', { id: 'undo-conflicts' });
  for (const c of doc.conflicts || []) {
    ul.append(el('li', { text: c.key + ': now ' + valueText(c.current) + (c.changed_by ? ', changed by run ' + c.changed_by : '') }));
  }
  return el('div', { class: 'panel conflict', role: 'alert' },
    el('p', { text: 'Undo refused: ' + (doc.error ? doc.error.message : 'a conflict') }), ul);
}

function closePanel(panel, keep) {
  modal = false;
  notice = keep || null;
  panel.replaceChildren(...(keep ? [keep] : []));
}

async function startUndo(name, row, run, panel) {
  modal = true;
  const path = '/v1/pipelines/' + enc(name) + '/runs/' + enc(run) + '/undo?row=' + enc(row);
  let r;
  try { r = await api('POST', path + '&dry_run=true', {}); }
  catch (e) { closePanel(panel); if (!(e instanceof AuthNeeded)) panel.append(el('p', { class: 'error', role: 'alert', text: String(e) })); return; }
  if (r.status === 409) { closePanel(panel, conflictPanel(r.body)); return; }
  if (r.status !== 200) { closePanel(panel, el('p', { class: 'error', role: 'alert', text: 'Dry run failed: ' + (r.body && r.body.error ? r.body.error.message : 'HTTP ' + r.status) })); return; }
  const ul = el('ul', { id: 'undo-restore' });
  for (const x of r.body.restored) ul.append(el('li', { text: x.key + ': ' + valueText(x.from) + ' → ' + valueText(x.to) }));
  const confirm = el('button', { type: 'button', id: 'undo-confirm', text: 'Confirm undo' });
  const cancel = el('button', { type: 'button', id: 'undo-cancel', text: 'Cancel' });
  cancel.addEventListener('click', () => { closePanel(panel); render(); });
  notice = null;
  confirm.addEventListener('click', async () => {
    confirm.disabled = true;
    let res;
    try { res = await api('POST', path, {}); } catch (e) { closePanel(panel); return; }
    if (res.status === 409) { closePanel(panel, conflictPanel(res.body)); return; }
    if (res.status !== 200) { closePanel(panel, el('p', { class: 'error', role: 'alert', text: 'Undo failed: ' + (res.body && res.body.error ? res.body.error.message : 'HTTP ' + res.status) })); return; }
    notice = el('p', { id: 'undo-done', role: 'status',
      text: 'Restored ' + res.body.restored.length + ' key(s); undo run ' + (res.body.undo_run || 'none') + '.' });
    modal = false;
    await render();
  });
  panel.replaceChildren(el('div', { class: 'panel', id: 'undo-panel', role: 'dialog', 'aria-labelledby': 'undo-title' },
    el('p', { id: 'undo-title', text: 'Undo run ' + run + ' restores:' }), ul,
    r.body.restored.length === 0 ? el('p', { text: 'nothing (the run changed no key)' }) : null,
    confirm, ' ', cancel));
  confirm.focus();
}

function locksSection(name, locks) {
  const mine = locks.filter(l => l.key.startsWith(name + '::'));
  const box = el('div', { id: 'locks' }, el('h3', { text: 'Locks' }));
  if (mine.length === 0) { box.append(el('p', { text: 'No lease held.' })); return box; }
  const tbody = el('tbody');
  for (const l of mine) {
    const brk = el('button', { type: 'button', class: 'break', 'aria-label': 'Break lease ' + l.key, text: 'Break' });
    brk.addEventListener('click', async () => {
      if (!window.confirm('Break the lease ' + l.key + ' held by ' + l.holder + '?')) return;
      const r = await api('DELETE', '/v1/locks/' + enc(l.key)).catch(() => null);
      if (r && r.status !== 200) box.append(el('p', { class: 'error', role: 'alert', text: 'Break failed: ' + (r.body && r.body.error ? r.body.error.message : r.status) }));
      render();
    });
    tbody.append(el('tr', { 'data-lock': l.key },
      el('td', { 'data-label': 'Key', class: 'keys', text: l.key }),
      el('td', { 'data-label': 'Holder', text: l.holder }),
      el('td', { 'data-label': 'Run', class: 'keys', text: l.run || '' }),
      el('td', { 'data-label': 'Expires', text: l.expires + ' (' + l.state + ')' }),
      el('td', {}, brk)));
  }
  box.append(el('table', { class: 'stack' }, el('thead', {}, el('tr', {},
    ...['Key', 'Holder', 'Run', 'Expires', ''].map(h => el('th', { scope: 'col', text: h })))), tbody));
  return box;
}

function backfillsSection(details) {
  const box = el('div', { id: 'backfills' }, el('h3', { text: 'Backfills' }));
  if (details.length === 0) { box.append(el('p', { text: 'No backfill.' })); return box; }
  for (const b of details) {
    const grid = el('div', { class: 'grid', role: 'list', 'data-hash': b.range_hash,
      'aria-label': 'Units of backfill ' + b.range_hash });
    for (const u of b.units) {
      const title = u.unit + ' ' + u.start + ' – ' + u.end + ': ' + u.status + ', attempts ' + u.attempts +
        (u.error ? ', error: ' + u.error : '') + (u.holder ? ', held by ' + u.holder : '');
      grid.append(el('div', { class: 'unit status-' + u.status, role: 'listitem', 'data-unit': u.unit,
        'data-status': u.status, title, 'aria-label': title, tabindex: '0' }));
    }
    box.append(el('h4', { class: 'keys', text: b.range_hash + ' ' + b.from + ' → ' + b.to + ' / ' + b.window }),
      el('p', { class: 'legend', text: b.done + ' done, ' + b.running + ' running, ' + b.failed + ' failed, ' + b.pending + ' pending of ' + b.total }),
      grid);
  }
  return box;
}

// ---- live ----------------------------------------------------------------

function refreshSoon() {
  if (pending) return;
  pending = setTimeout(() => { pending = null; render(); }, 150);
}

function startPolling() {
  if (pollTimer) return;
  setLive('live: polling every 2 s');
  pollTimer = setInterval(refreshSoon, 2000);
}

async function startStream() {
  if (streamAbort) streamAbort.abort();
  const ctl = new AbortController();
  streamAbort = ctl;
  try {
    const r = await fetch('/v1/events', { headers: headers(), signal: ctl.signal });
    if (r.status !== 200 || !r.body) throw new Error('HTTP ' + r.status);
    if (pollTimer) { clearInterval(pollTimer); pollTimer = null; }
    setLive('live: streaming events');
    const reader = r.body.getReader();
    const dec = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        if (/^data: /m.test(block)) refreshSoon();
      }
    }
    throw new Error('the stream ended');
  } catch (e) {
    if (ctl.signal.aborted) return;
    startPolling();
  }
}

function init() {
  document.getElementById('token-form').addEventListener('submit', ev => {
    ev.preventDefault();
    const input = document.getElementById('token');
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    input.value = '';
    document.getElementById('auth').hidden = true;
    render();
    startStream();
  });
  window.addEventListener('hashchange', () => { modal = false; notice = null; render(); });
  render();
  startStream();
}

document.addEventListener('DOMContentLoaded', init);
