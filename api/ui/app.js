// app.js - the Tradewind web console (docs/console.md).
//
// One page, routed by the URL's fragment.  Every figure comes from the
// public API, called with the user's own token, which is kept in
// sessionStorage (gone with the tab) and sent only in the Authorization
// header, never in a URL.  Pages are built with DOM calls and textContent:
// nothing the API returns is parsed as HTML.  Live views read
// GET /v1/events/stream with fetch (EventSource cannot send a header).
'use strict';

const TOKEN_KEY = 'tradewind.token';
const STATES = ['pending', 'placing', 'provisioning', 'running', 'succeeded',
  'failed', 'cancelled', 'interrupted', 'recovering'];
const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);

let me = null;        // GET /v1/whoami
let pageCtl = null;   // aborts the current page's requests, streams, timers

// ---- small helpers ---------------------------------------------------------

function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of kids.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// Integer micro-USD as dollars with six places, exactly (no float).
function usd(uusd) {
  if (uusd === null || uusd === undefined) return '';
  const v = BigInt(uusd);
  const neg = v < 0n;
  const a = neg ? -v : v;
  const frac = (a % 1000000n).toString().padStart(6, '0');
  return (neg ? '-$' : '$') + (a / 1000000n).toString() + '.' + frac;
}

function money(uusd, attrs) {
  return h('span', Object.assign({ class: 'money', 'data-uusd': String(uusd ?? 0) }, attrs || {}), usd(uusd ?? 0));
}

function when(t) {
  if (!t) return '';
  const d = new Date(t);
  return isNaN(d) ? t : d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

function stateBadge(s) {
  return h('span', { class: 'state state-' + s, 'data-state': s }, s);
}

function qs(obj) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(obj)) if (v !== '' && v !== null && v !== undefined) p.set(k, v);
  const s = p.toString();
  return s ? '?' + s : '';
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    if (signal) signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
  });
}

// ---- the API ---------------------------------------------------------------

class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || ('HTTP ' + status));
    this.status = status;
    this.problem = problem;
  }
}

function token() { return sessionStorage.getItem(TOKEN_KEY); }

async function api(path, opts) {
  opts = opts || {};
  const headers = Object.assign({ Accept: 'application/json' }, opts.headers || {});
  const t = token();
  if (t) headers.Authorization = 'Bearer ' + t;
  const res = await fetch(path, {
    method: opts.method || 'GET', headers, body: opts.body,
    signal: opts.signal || (pageCtl && pageCtl.signal), cache: 'no-store',
  });
  if (opts.raw && res.ok) return res;
  const type = res.headers.get('Content-Type') || '';
  let body = null;
  if (type.includes('json')) body = await res.json();
  else body = await res.text();
  if (!res.ok) {
    const p = body && typeof body === 'object' ? body : { title: res.statusText, detail: String(body || '') };
    if (res.status === 401 && path !== '/v1/whoami') signOut('Your token was refused: ' + (p.detail || p.title));
    throw new ApiError(res.status, p);
  }
  return body;
}

function showAlert(msg, kind) {
  const el = document.getElementById('alert');
  el.textContent = msg;
  el.className = kind || 'error';
  el.hidden = !msg;
}

function problemText(e) {
  if (e instanceof ApiError) {
    const p = e.problem;
    return `${e.status} ${p.title || ''}: ${p.detail || ''}`.trim();
  }
  return String(e && e.message ? e.message : e);
}

// The event stream: calls onEvent(event) for each `job` event; resumes
// from the last id after a drop (Last-Event-ID) until signal aborts.
async function streamEvents(params, onEvent, signal, onState) {
  let last = null;
  while (!signal.aborted) {
    try {
      const headers = { Accept: 'text/event-stream', Authorization: 'Bearer ' + token() };
      if (last !== null) headers['Last-Event-ID'] = last;
      const res = await fetch('/v1/events/stream' + qs(params), { headers, signal, cache: 'no-store' });
      if (!res.ok) {
        onState('refused ' + res.status);
        await sleep(5000, signal);
        continue;
      }
      onState('live');
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          let ev = 'message', data = '';
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) continue;
            const c = line.indexOf(':');
            const k = c < 0 ? line : line.slice(0, c);
            const v = c < 0 ? '' : line.slice(c + 1).replace(/^ /, '');
            if (k === 'id') last = v;
            else if (k === 'event') ev = v;
            else if (k === 'data') data += (data ? '\n' : '') + v;
          }
          if (ev === 'job' && data) onEvent(JSON.parse(data));
        }
      }
    } catch (e) {
      if (signal.aborted) return;
    }
    onState('reconnecting');
    await sleep(2000, signal);
  }
}

function liveBadge() {
  const el = h('span', { class: 'live', id: 'live', 'data-live': 'connecting' }, 'connecting');
  return { el, set: (s) => { el.textContent = s; el.setAttribute('data-live', s); } };
}

// ---- sign in ---------------------------------------------------------------

function signOut(why) {
  sessionStorage.removeItem(TOKEN_KEY);
  me = null;
  location.hash = '#/signin';
  route();
  if (why) showAlert(why);
}

function pageSignIn(main) {
  const input = h('input', { type: 'password', id: 'token', name: 'token', autocomplete: 'off', required: true, size: 48 });
  const form = h('form', { id: 'signin', class: 'card' },
    h('h1', {}, 'Sign in'),
    h('p', {}, 'Paste a Tradewind API token (tradewind token create). It stays in this tab only.'),
    h('label', { for: 'token' }, 'Token '), input, ' ',
    h('button', { type: 'submit' }, 'Sign in'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    try {
      me = await api('/v1/whoami');
      showAlert('');
      location.hash = '#/jobs';
    } catch (e) {
      sessionStorage.removeItem(TOKEN_KEY);
      showAlert('Sign-in refused: ' + problemText(e));
    }
  });
  main.append(form);
  input.focus();
}

// ---- jobs ------------------------------------------------------------------

function jobRow(j) {
  const p = j.placement || {};
  return h('tr', { 'data-job': j.id },
    h('td', {}, h('a', { href: '#/job/' + encodeURIComponent(j.id) }, j.id)),
    h('td', {}, j.name),
    h('td', {}, j.tenant),
    h('td', { class: 'cell-state' }, stateBadge(j.state)),
    h('td', { class: 'cell-provider' }, p.provider || ''),
    h('td', { class: 'cell-region' }, p.region || ''),
    h('td', {}, when(j.created_at)),
    h('td', { class: 'cell-updated' }, when(j.updated_at)));
}

async function pageJobs(main, params, signal) {
  const f = { state: params.get('state') || '', tenant: params.get('tenant') || '',
    provider: params.get('provider') || '', cursor: params.get('cursor') || '' };
  const stateSel = h('select', { name: 'state', id: 'f-state' }, h('option', { value: '' }, 'any state'),
    STATES.map((s) => h('option', { value: s, selected: s === f.state }, s)));
  const tenant = h('input', { name: 'tenant', id: 'f-tenant', value: f.tenant, placeholder: 'tenant' });
  const provider = h('input', { name: 'provider', id: 'f-provider', value: f.provider, placeholder: 'provider' });
  const form = h('form', { class: 'filters', id: 'job-filters' }, stateSel, tenant, provider,
    h('button', { type: 'submit' }, 'Filter'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    location.hash = '#/jobs' + qs({ state: stateSel.value, tenant: tenant.value.trim(), provider: provider.value.trim() });
  });
  const live = liveBadge();
  const tbody = h('tbody', { id: 'jobs-body' });
  const pager = h('div', { class: 'pager' });
  main.append(h('h1', {}, 'Jobs ', live.el), form,
    h('table', { id: 'jobs' }, h('thead', {}, h('tr', {},
      ['Job', 'Name', 'Tenant', 'State', 'Provider', 'Region', 'Created', 'Updated'].map((c) => h('th', {}, c)))), tbody),
    pager);

  async function load() {
    const page = await api('/v1/jobs' + qs({ state: f.state, tenant: f.tenant, provider: f.provider, cursor: f.cursor, limit: 50 }), { signal });
    tbody.replaceChildren(...page.items.map(jobRow));
    if (!page.items.length) tbody.append(h('tr', {}, h('td', { colspan: 8, class: 'empty' }, 'No jobs.')));
    pager.replaceChildren(
      f.cursor ? h('a', { href: '#/jobs' + qs({ state: f.state, tenant: f.tenant, provider: f.provider }) }, 'Newest') : '',
      page.next_cursor ? h('a', { id: 'next-page', href: '#/jobs' + qs({ state: f.state, tenant: f.tenant, provider: f.provider, cursor: page.next_cursor }) }, 'Older →') : '');
  }
  await load();
  // live: a known row changes in place; a job not on the first page
  // reloads it (the server pages, the filters stay the server's)
  let reload = null;
  streamEvents({ tenant: f.tenant }, async (ev) => {
    const row = tbody.querySelector(`tr[data-job="${CSS.escape(ev.job)}"]`);
    if (row) {
      if (f.state && ev.to !== f.state) { row.classList.add('left-filter'); }
      row.querySelector('.cell-state').replaceChildren(stateBadge(ev.to));
      row.querySelector('.cell-updated').textContent = when(ev.at);
      if (f.provider || ev.to === 'provisioning' || ev.to === 'running') {
        try {
          const j = await api('/v1/jobs/' + encodeURIComponent(ev.job), { signal });
          row.querySelector('.cell-provider').textContent = (j.placement || {}).provider || '';
          row.querySelector('.cell-region').textContent = (j.placement || {}).region || '';
        } catch (e) { /* the row keeps what it had */ }
      }
    } else if (!f.cursor && !reload) {
      reload = setTimeout(() => { reload = null; load().catch(() => {}); }, 250);
    }
  }, signal, live.set);
}

// ---- one job ---------------------------------------------------------------

function kv(rows) {
  return h('dl', { class: 'kv' }, rows.filter((r) => r[1] !== undefined && r[1] !== null && r[1] !== '')
    .map(([k, v, id]) => [h('dt', {}, k), h('dd', id ? { id } : {}, v)]));
}

function planView(plan) {
  if (!plan || typeof plan !== 'object') return null;
  const cands = Array.isArray(plan.candidates) ? plan.candidates : [];
  const out = [h('h3', {}, 'The plan'),
    h('p', { class: 'muted' }, `${plan.offers ?? '?'} offers, ${plan.feasible ?? '?'} feasible` +
      (plan.strategy ? `, strategy ${plan.strategy}` : '') + (plan.tie_break ? `; ties: ${plan.tie_break}` : ''))];
  if (cands.length) {
    out.push(h('table', { class: 'plan' }, h('thead', {}, h('tr', {},
      ['Rank', 'Offer', 'Provider', 'Region', 'Type', 'Market', 'Price/h', 'Expected cost', 'Score'].map((c) => h('th', {}, c)))),
    h('tbody', {}, cands.slice(0, 20).map((c, i) => h('tr', {},
      h('td', {}, c.rank ?? i + 1), h('td', {}, c.offer_id || ''), h('td', {}, c.provider || ''),
      h('td', {}, c.region || ''), h('td', {}, c.instance_type || ''), h('td', {}, c.market || ''),
      h('td', {}, c.price_uusd_per_hour !== undefined ? money(c.price_uusd_per_hour) : ''),
      h('td', {}, c.cost && c.cost.total_uusd !== undefined ? money(c.cost.total_uusd) : ''),
      h('td', {}, c.total_score ?? ''))))));
  }
  const rej = (Array.isArray(plan.rejected) ? plan.rejected : []).filter((r) => r.count);
  if (rej.length) {
    out.push(h('h4', {}, 'Offers refused'), h('table', { class: 'plan', id: 'refused' }, h('thead', {}, h('tr', {},
      ['Filter', 'Stage', 'Offers', 'Why'].map((c) => h('th', {}, c)))),
    h('tbody', {}, rej.map((r) => h('tr', {}, h('td', {}, r.filter), h('td', {}, r.stage), h('td', {}, r.count),
      h('td', {}, r.reason || ''))))));
  }
  return h('section', { id: 'plan' }, out);
}

async function pageJob(main, id, signal) {
  const j = await api('/v1/jobs/' + encodeURIComponent(id), { signal });
  const live = liveBadge();
  if (signal.aborted) return;
  const stateEl = h('span', { id: 'job-state' }, stateBadge(j.state));
  const head = h('h1', {}, 'Job ', h('code', {}, j.id), ' ', stateEl, ' ', live.el);
  const cancel = h('button', { id: 'cancel', type: 'button', class: 'danger' }, 'Cancel');
  const cancelMsg = h('p', { id: 'cancel-result', role: 'status' });
  cancel.addEventListener('click', async () => {
    cancelMsg.textContent = '';
    cancelMsg.className = '';
    try {
      const after = await api('/v1/jobs/' + encodeURIComponent(j.id), { method: 'DELETE' });
      cancelMsg.textContent = 'Cancelled: ' + after.state;
      cancelMsg.className = 'ok';
    } catch (e) {
      cancelMsg.textContent = 'Refused: ' + problemText(e);
      cancelMsg.className = 'error';
    }
  });
  const p = j.placement || {};
  const summary = kv([['Name', j.name], ['Tenant', j.tenant], ['Project', j.project], ['Priority', j.priority],
    ['Reason', j.reason, 'job-reason'], ['Created', when(j.created_at)], ['Updated', when(j.updated_at), 'job-updated'],
    ['Exit code', j.exit_code]]);
  const placement = h('section', { id: 'placement' }, h('h2', {}, 'Attempts and placement'),
    j.placement ? [kv([['Attempt', p.attempt], ['Provider', p.provider], ['Account', p.account], ['Region', p.region],
      ['Zone', p.zone], ['Instance type', p.instance_type], ['Market', p.market],
      ['Price per hour', p.price_uusd_per_hour !== undefined ? money(p.price_uusd_per_hour) : ''],
      ['Expected cost', p.expected_cost_uusd !== undefined ? money(p.expected_cost_uusd) : ''],
      ['Instance', (p.instance_ids || []).join(', ') || p.instance_id], ['Offer', p.offer_id],
      ['Why here', p.explain, 'explain']]), planView(p.plan)] : h('p', { class: 'empty' }, 'Not placed yet.'));
  const attempts = h('section', { id: 'attempts' });
  placement.append(attempts);
  const cost = h('section', { id: 'cost' }, h('h2', {}, 'Cost'), h('p', { class: 'empty' }, 'Loading…'));
  const timeline = h('ol', { id: 'timeline', class: 'timeline' });
  const logs = h('pre', { id: 'logs', class: 'logs' });
  const logsState = h('span', { id: 'logs-state', class: 'muted' }, '');
  main.append(head, h('div', { class: 'actions' }, cancel, cancelMsg), summary, placement, cost,
    h('section', {}, h('h2', {}, 'Events'), timeline),
    h('section', {}, h('h2', {}, 'Output ', logsState), logs));

  const seen = new Set();
  function addEvent(ev) {
    if (seen.has(ev.seq)) return;
    seen.add(ev.seq);
    timeline.append(h('li', { 'data-to': ev.to, 'data-seq': ev.seq },
      h('time', {}, when(ev.at)), ' ', ev.from ? stateBadge(ev.from) : h('span', { class: 'muted' }, 'new'),
      ' → ', stateBadge(ev.to), ev.reason ? h('span', { class: 'reason' }, ' ' + ev.reason) : ''));
  }
  const evs = await api('/v1/jobs/' + encodeURIComponent(id) + '/events', { signal });
  if (signal.aborted) return;
  evs.items.forEach(addEvent);

  streamEvents({ job: j.id }, (ev) => {
    addEvent(ev);
    stateEl.replaceChildren(stateBadge(ev.to));
    if (ev.to === 'provisioning' || ev.to === 'running' || TERMINAL.has(ev.to)) {
      // the placement and the cost move with these: draw them again
      if (!j.placement || TERMINAL.has(ev.to)) setTimeout(() => { if (!signal.aborted) route(); }, 300);
    }
  }, signal, live.set);

  // every attempt: where it ran, at what price, from when to when, why it ended
  api('/v1/jobs/' + encodeURIComponent(id) + '/attempts', { signal })
    .then((r) => {
      if (!r.items.length) return;
      attempts.replaceChildren(h('h3', {}, 'Attempts'), h('table', { id: 'attempt-table' }, h('thead', {}, h('tr', {},
        ['#', 'Provider', 'Offer', 'Market', 'Price/h', 'Instance', 'State', 'Started', 'Running', 'Ended', 'Why it ended'].map((c) => h('th', {}, c)))),
      h('tbody', {}, r.items.map((a) => h('tr', { 'data-attempt': a.n },
        h('td', {}, a.n), h('td', {}, a.provider), h('td', {}, a.offer_id), h('td', {}, a.market),
        h('td', {}, money(a.price_uusd_per_hour)), h('td', {}, a.instance_id), h('td', {}, a.state),
        h('td', {}, when(a.started_at)), h('td', {}, when(a.running_at)), h('td', {}, when(a.ended_at)),
        h('td', {}, a.end_reason))))));
    })
    .catch((e) => attempts.replaceChildren(h('p', { class: 'muted' }, problemText(e))));

  // the job's cost from the report API, grouped by job
  api('/v1/reports/spend' + qs({ group_by: 'job', tenant: j.tenant, from: j.created_at.slice(0, 10) }), { signal })
    .then((rep) => {
      const mine = rep.items.filter((it) => it.job === j.id);
      const sum = (k) => mine.reduce((a, it) => a + BigInt(it[k] || 0), 0n);
      cost.replaceChildren(h('h2', {}, 'Cost'), kv([
        ['Effective', money(sum('effective_cost_uusd').toString(), { id: 'job-cost' })],
        ['List', money(sum('list_cost_uusd').toString())],
        ['Of which accrued (running)', money(sum('accrued_effective_cost_uusd').toString())]]));
    })
    .catch((e) => cost.replaceChildren(h('h2', {}, 'Cost'), h('p', { class: 'muted' }, problemText(e))));

  // live output: follow the offset until the output is complete
  (async () => {
    let offset = 0;
    const st = logsState;
    while (!signal.aborted) {
      try {
        const res = await api('/v1/jobs/' + encodeURIComponent(id) + '/logs' + qs({ offset }), { signal, raw: true, headers: { Accept: 'text/plain' } });
        const text = await res.text();
        if (text) logs.append(document.createTextNode(text));
        const next = res.headers.get('Tradewind-Next-Offset');
        if (next !== null) offset = Number(next);
        if (res.headers.get('Tradewind-Output-Complete') === 'true') { st.textContent = 'complete'; return; }
        st.textContent = 'following';
      } catch (e) {
        if (signal.aborted) return;
        st.textContent = problemText(e);
      }
      await sleep(1000, signal);
    }
  })();
}

// ---- workflows -------------------------------------------------------------

const WF_STATES = ['running', 'succeeded', 'failed', 'cancelled'];
const PROGRESS = ['waiting', 'ready', 'pending', 'running', 'succeeded', 'failed', 'cancelled'];

// "12.345678" (the API's decimal dollars) as "$12.345678"
function dollars(s) {
  if (s === null || s === undefined) return '';
  return String(s).startsWith('-') ? '-$' + String(s).slice(1) : '$' + s;
}

function progressText(w) {
  const p = w.progress || {};
  return `${p.succeeded ?? 0}/${w.tasks} succeeded` + (p.running ? `, ${p.running} running` : '') +
    (p.failed ? `, ${p.failed} failed` : '') + (p.cancelled ? `, ${p.cancelled} cancelled` : '');
}

async function pageWorkflows(main, params, signal) {
  const f = { state: params.get('state') || '', tenant: params.get('tenant') || '', cursor: params.get('cursor') || '' };
  const stateSel = h('select', { name: 'state', id: 'wf-state' }, h('option', { value: '' }, 'any state'),
    WF_STATES.map((s) => h('option', { value: s, selected: s === f.state }, s)));
  const tenant = h('input', { name: 'tenant', id: 'wf-tenant', value: f.tenant, placeholder: 'tenant' });
  const form = h('form', { class: 'filters', id: 'workflow-filters' }, stateSel, tenant,
    h('button', { type: 'submit' }, 'Filter'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    location.hash = '#/workflows' + qs({ state: stateSel.value, tenant: tenant.value.trim() });
  });
  const tbody = h('tbody', { id: 'workflows-body' });
  const pager = h('div', { class: 'pager' });
  main.append(h('h1', {}, 'Workflows and arrays'), form,
    h('table', { id: 'workflows' }, h('thead', {}, h('tr', {},
      ['Id', 'Name', 'Kind', 'Tenant', 'State', 'Progress', 'Cost so far', 'Created'].map((c) => h('th', {}, c)))), tbody),
    pager);
  async function load() {
    const page = await api('/v1/workflows' + qs({ state: f.state, tenant: f.tenant, cursor: f.cursor, limit: 50 }), { signal });
    tbody.replaceChildren(...page.items.map((w) => h('tr', { 'data-workflow': w.id },
      h('td', {}, h('a', { href: '#/workflow/' + encodeURIComponent(w.id) }, w.id)),
      h('td', {}, w.name), h('td', {}, w.kind), h('td', {}, w.tenant),
      h('td', { class: 'cell-state' }, stateBadge(w.state)),
      h('td', { class: 'cell-progress' }, progressText(w)),
      h('td', {}, dollars(w.cost_so_far_usd)), h('td', {}, when(w.created_at)))));
    if (!page.items.length) tbody.append(h('tr', {}, h('td', { colspan: 8, class: 'empty' }, 'No workflows.')));
    pager.replaceChildren(
      f.cursor ? h('a', { href: '#/workflows' + qs({ state: f.state, tenant: f.tenant }) }, 'Newest') : '',
      page.next_cursor ? h('a', { id: 'next-page', href: '#/workflows' + qs({ state: f.state, tenant: f.tenant, cursor: page.next_cursor }) }, 'Older →') : '');
  }
  await load();
  // live enough: the list is polled while the page is open
  (async () => {
    while (!signal.aborted) {
      await sleep(3000, signal);
      if (!signal.aborted) await load().catch(() => {});
    }
  })();
}

// Every page of a paged route (items or edges), at most cap rows.
async function allPages(path, key, cap, signal) {
  const out = [];
  let cursor = '';
  for (;;) {
    const page = await api(path + qs({ limit: 5000, cursor }), { signal });
    out.push(...page[key]);
    if (!page.next_cursor || out.length >= cap) return { rows: out, truncated: !!page.next_cursor };
    cursor = page.next_cursor;
  }
}

// A fan-out's state from its tasks': the worst live one first.
function groupState(counts) {
  for (const s of ['failed', 'interrupted', 'recovering', 'running', 'provisioning', 'placing', 'pending', 'ready', 'waiting', 'cancelled'])
    if (counts[s]) return s;
  return 'succeeded';
}

// The graph of templates: a task per node, a fan-out (for_each, an
// array's tasks) as one node with its counts; edges between templates.
function buildGraph(tasks, edges) {
  const nodes = new Map();
  const byIdx = new Map();
  for (const t of tasks) {
    let n = nodes.get(t.task);
    if (!n) nodes.set(t.task, (n = { key: t.task, label: t.task, tasks: [], counts: {}, external: false }));
    n.tasks.push(t);
    n.counts[t.state] = (n.counts[t.state] || 0) + 1;
    byIdx.set(t.idx, n);
  }
  for (const n of nodes.values()) n.state = n.tasks.length === 1 ? n.tasks[0].state : groupState(n.counts);
  const links = new Map();
  for (const e of edges) {
    const to = byIdx.get(e.to);
    if (!to) continue;
    let from;
    if (typeof e.from === 'number') from = byIdx.get(e.from);
    else {
      // a job or group outside this workflow
      const label = e.from + (e.from_task !== undefined ? `[${e.from_task}]` : '');
      const k = 'ext:' + label;
      from = nodes.get(k);
      if (!from) nodes.set(k, (from = { key: k, label, tasks: [], counts: {}, external: true, state: 'external' }));
    }
    if (!from || from === to) continue; // a sequential array's chain stays inside its node
    const k = from.key + '\u0000' + to.key;
    const l = links.get(k) || { from, to, n: 0, states: new Set() };
    l.n++;
    l.states.add(e.state);
    links.set(k, l);
  }
  for (const l of links.values()) l.state = l.states.has('never') ? 'never' : l.states.has('open') || l.states.has('delayed') ? 'open' : 'met';
  return { nodes: [...nodes.values()], links: [...links.values()] };
}

// A layered layout: each node's layer is its longest path from a source
// (topological order), nodes in a layer ordered by their predecessors'
// mean row.
function layout(g) {
  const preds = new Map(g.nodes.map((n) => [n, []]));
  const succs = new Map(g.nodes.map((n) => [n, []]));
  for (const l of g.links) { preds.get(l.to).push(l.from); succs.get(l.from).push(l.to); }
  const indeg = new Map(g.nodes.map((n) => [n, preds.get(n).length]));
  const depth = new Map();
  const queue = g.nodes.filter((n) => !indeg.get(n));
  for (const n of queue) depth.set(n, 0);
  for (let i = 0; i < queue.length; i++) {
    const n = queue[i];
    for (const s of succs.get(n)) {
      depth.set(s, Math.max(depth.get(s) || 0, depth.get(n) + 1));
      indeg.set(s, indeg.get(s) - 1);
      if (!indeg.get(s)) queue.push(s);
    }
  }
  for (const n of g.nodes) if (!depth.has(n)) depth.set(n, 0); // a cycle cannot be stored; be safe
  const layers = [];
  for (const n of g.nodes) (layers[depth.get(n)] ||= []).push(n);
  const row = new Map();
  layers.forEach((layer, d) => {
    if (d) {
      const bary = (n) => { const p = preds.get(n); return p.length ? p.reduce((a, q) => a + row.get(q), 0) / p.length : 0; };
      layer.sort((a, b) => bary(a) - bary(b));
    }
    layer.forEach((n, i) => row.set(n, i));
  });
  const NW = 168, NH = 46, GX = 72, GY = 22, P = 16;
  const tallest = Math.max(1, ...layers.map((l) => l.length));
  for (const n of g.nodes) {
    const layer = layers[depth.get(n)];
    const off = ((tallest - layer.length) * (NH + GY)) / 2; // centre short layers
    n.x = P + depth.get(n) * (NW + GX);
    n.y = P + off + row.get(n) * (NH + GY);
    n.w = NW;
    n.h = NH;
  }
  return { width: 2 * P + layers.length * NW + Math.max(0, layers.length - 1) * GX, height: 2 * P + tallest * NH + (tallest - 1) * GY };
}

function nodeSub(n) {
  if (n.external) return 'outside this workflow';
  if (n.tasks.length === 1) return n.state;
  // the counts, live states first: "×8: 3 running, 5 succeeded"
  const order = ['running', 'provisioning', 'placing', 'pending', 'ready', 'waiting', 'recovering', 'interrupted',
    'failed', 'cancelled', 'succeeded'];
  const parts = Object.keys(n.counts).sort((a, b) => order.indexOf(a) - order.indexOf(b))
    .map((s) => `${n.counts[s]} ${s}`);
  return `×${n.tasks.length}: ` + parts.join(', ');
}

function clip(s, n) { return s.length > n ? s.slice(0, n - 1) + '…' : s; }

function drawGraph(g, onNode) {
  const box = layout(g);
  const root = svg('svg', { id: 'wf-graph', class: 'graph', viewBox: `0 0 ${box.width} ${box.height}`,
    width: box.width, height: box.height, role: 'img', 'aria-label': 'workflow graph' });
  const defs = svg('defs', {});
  const marker = svg('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' });
  marker.append(svg('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'arrow' }));
  defs.append(marker);
  root.append(defs);
  const edges = svg('g', { class: 'edges' });
  for (const l of g.links) {
    const x1 = l.from.x + l.from.w, y1 = l.from.y + l.from.h / 2, x2 = l.to.x, y2 = l.to.y + l.to.h / 2;
    const mx = (x1 + x2) / 2;
    const p = svg('path', { d: `M ${x1} ${y1} C ${mx} ${y1}, ${mx} ${y2}, ${x2} ${y2}`, class: 'edge edge-' + l.state,
      'data-from': l.from.key, 'data-to': l.to.key, 'data-state': l.state, 'marker-end': 'url(#arrow)' });
    const t = svg('title', {});
    t.textContent = `${l.from.label} → ${l.to.label}` + (l.n > 1 ? ` (${l.n} edges)` : '') + `: ${l.state}`;
    p.append(t);
    edges.append(p);
  }
  root.append(edges);
  const nodes = svg('g', { class: 'nodes' });
  const els = new Map();
  for (const n of g.nodes) {
    const el = svg('g', { class: 'node s-' + n.state + (n.tasks.length > 1 ? ' fanout' : ''), 'data-node': n.key,
      'data-state': n.state, 'data-tasks': n.tasks.length, transform: `translate(${n.x},${n.y})`, tabindex: 0 });
    if (n.tasks.length === 1 && n.tasks[0].job_id) el.setAttribute('data-job', n.tasks[0].job_id);
    if (n.tasks.length > 1) el.append(svg('rect', { x: 4, y: 4, width: n.w, height: n.h, rx: 6, class: 'stack' }));
    el.append(svg('rect', { width: n.w, height: n.h, rx: 6, class: 'box' }));
    const name = svg('text', { x: 10, y: 19, class: 'name' });
    name.textContent = clip(n.label, 22);
    const sub = svg('text', { x: 10, y: 36, class: 'sub' });
    sub.textContent = clip(nodeSub(n), 28);
    const title = svg('title', {});
    title.textContent = `${n.label}: ${nodeSub(n)}`;
    el.append(name, sub, title);
    if (!n.external) {
      el.addEventListener('click', () => onNode(n));
      el.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') onNode(n); });
    }
    nodes.append(el);
    els.set(n.key, { el, sub, title });
  }
  root.append(nodes);
  return { root, els };
}

// The structure of a graph (what a redraw depends on): nodes and links.
function graphShape(g) {
  return g.nodes.map((n) => n.key + ':' + n.tasks.length + ':' + (n.tasks.length === 1 ? n.tasks[0].job_id || '' : '')).join('|') +
    '#' + g.links.map((l) => l.from.key + '>' + l.to.key).join('|');
}

async function pageWorkflow(main, id, signal) {
  const path = '/v1/workflows/' + encodeURIComponent(id);
  let w = await api(path, { signal });
  if (signal.aborted) return;
  const stateEl = h('span', { id: 'wf-state-now' }, stateBadge(w.state));
  const live = h('span', { class: 'live', id: 'live', 'data-live': 'live' }, 'live');
  const cancel = h('button', { id: 'wf-cancel', type: 'button', class: 'danger' }, 'Cancel all');
  const cancelMsg = h('p', { id: 'wf-cancel-result', role: 'status' });
  const summary = h('div', { id: 'wf-summary' });
  const counts = h('div', { class: 'counts', id: 'wf-progress' });
  const graphBox = h('div', { class: 'graph-box', id: 'wf-graph-box' });
  const graphNote = h('p', { class: 'muted', id: 'wf-graph-note' });
  const taskHead = h('h2', {}, 'Tasks');
  const taskBody = h('tbody', { id: 'wf-tasks' });
  main.append(h('h1', {}, w.kind === 'array' ? 'Array ' : 'Workflow ', h('code', {}, w.id), ' ', stateEl, ' ', live),
    h('div', { class: 'actions' }, cancel, cancelMsg), summary, h('h2', {}, 'Progress'), counts,
    h('section', { id: 'wf-graph-section' }, h('h2', {}, 'Graph'), graphBox, graphNote),
    h('section', {}, taskHead, h('table', { id: 'wf-task-table' }, h('thead', {}, h('tr', {},
      ['Task', 'Index', 'Item', 'State', 'Job', 'Reason'].map((c) => h('th', {}, c)))), taskBody)));

  cancel.addEventListener('click', async () => {
    cancelMsg.textContent = '';
    cancelMsg.className = '';
    try {
      const after = await api(path, { method: 'DELETE' });
      cancelMsg.textContent = `Cancelled: ${after.progress.cancelled} tasks cancelled, the workflow is ${after.state}`;
      cancelMsg.className = 'ok';
      refresh().catch(() => {});
    } catch (e) {
      cancelMsg.textContent = 'Refused: ' + problemText(e);
      cancelMsg.className = 'error';
    }
  });

  let filter = null; // a fan-out node's name: the task table shows its tasks
  let shape = null, drawn = null, tasks = [];
  function showSummary() {
    stateEl.replaceChildren(stateBadge(w.state));
    summary.replaceChildren(kv([['Name', w.name], ['Kind', w.kind], ['Tenant', w.tenant], ['Project', w.project],
      ['Tasks', w.tasks], ['Fail fast', w.fail_fast ? 'yes' : 'no'], ['At most running', w.max_running || 'no limit'],
      ['Reason', w.reason, 'wf-reason'], ['Projected cost', dollars(w.projected_cost_usd)],
      ['Cost so far', h('span', { id: 'wf-cost', class: 'money' }, dollars(w.cost_so_far_usd))],
      ['Created', when(w.created_at)], ['Updated', when(w.updated_at)]]));
    const p = w.progress || {};
    counts.replaceChildren(...PROGRESS.map((s) => h('span', { class: 'count', 'data-state': s },
      h('span', { class: 'state state-' + s }, s), ' ', h('b', { id: 'wf-count-' + s }, p[s] ?? 0))));
  }
  function showTasks() {
    const rows = (filter ? tasks.filter((t) => t.task === filter) : tasks).slice(0, 500);
    taskHead.replaceChildren('Tasks', filter ? [' of ', h('code', {}, filter), ' ',
      h('a', { href: '#', id: 'wf-all-tasks', onclick: (ev) => { ev.preventDefault(); filter = null; showTasks(); } }, 'show all')] : '');
    taskBody.replaceChildren(...rows.map((t) => h('tr', { 'data-idx': t.idx },
      h('td', {}, t.task), h('td', {}, t.index), h('td', {}, t.param ?? ''), h('td', {}, stateBadge(t.state)),
      h('td', {}, t.job_id ? h('a', { href: '#/job/' + encodeURIComponent(t.job_id) }, t.job_id) : h('span', { class: 'muted' }, 'not released')),
      h('td', {}, t.reason || ''))));
  }
  function onNode(n) {
    if (n.tasks.length === 1) {
      if (n.tasks[0].job_id) location.hash = '#/job/' + encodeURIComponent(n.tasks[0].job_id);
      else cancelMsg.textContent = `${n.label} is ${n.state}: it has no job yet.`;
      return;
    }
    filter = n.key;
    showTasks();
    taskHead.scrollIntoView();
  }
  async function refresh() {
    const [wf, tk, ed] = await Promise.all([api(path, { signal }),
      allPages(path + '/tasks', 'items', 20000, signal), allPages(path + '/graph', 'edges', 50000, signal)]);
    if (signal.aborted) return;
    w = wf;
    tasks = tk.rows;
    showSummary();
    showTasks();
    const g = buildGraph(tk.rows, ed.rows);
    const s = graphShape(g);
    if (s !== shape) {
      shape = s;
      drawn = drawGraph(g, onNode);
      graphBox.replaceChildren(drawn.root);
    } else {
      // the same graph: states and counts change in place
      for (const n of g.nodes) {
        const d = drawn.els.get(n.key);
        d.el.setAttribute('class', 'node s-' + n.state + (n.tasks.length > 1 ? ' fanout' : ''));
        d.el.setAttribute('data-state', n.state);
        d.sub.textContent = clip(nodeSub(n), 28);
        d.title.textContent = `${n.label}: ${nodeSub(n)}`;
      }
      for (const l of g.links) {
        const p = drawn.root.querySelector(`path.edge[data-from="${CSS.escape(l.from.key)}"][data-to="${CSS.escape(l.to.key)}"]`);
        if (p) { p.setAttribute('class', 'edge edge-' + l.state); p.setAttribute('data-state', l.state); }
      }
    }
    const plural = (k, w) => `${k} ${w}${k === 1 ? '' : 's'}`;
    graphNote.textContent = `${plural(g.nodes.length, 'node')}, ${plural(g.links.length, 'edge')}` +
      (tk.truncated || ed.truncated ? '; the graph shows the first 20,000 tasks only' : '') +
      '. A fan-out is one node with its counts; click a task to open its job.';
  }
  await refresh();
  // live: the graph route and the tasks are polled until everything ended
  // (a large group less often: each round reads every page)
  (async () => {
    let quiet = 0;
    while (!signal.aborted) {
      await sleep(tasks.length > 5000 ? 10000 : 2000, signal);
      if (signal.aborted) return;
      try {
        await refresh();
        live.textContent = 'live';
        live.setAttribute('data-live', 'live');
      } catch (e) {
        if (signal.aborted) return;
        live.textContent = 'reconnecting';
        live.setAttribute('data-live', 'reconnecting');
      }
      const ended = w.state !== 'running' && tasks.every((t) => TERMINAL.has(t.state));
      if (ended && ++quiet >= 2) {
        live.textContent = 'ended';
        live.setAttribute('data-live', 'ended');
        return;
      }
    }
  })();
}

// ---- offers ----------------------------------------------------------------

const OFFER_FILTERS = [['accelerator', 'A100:8'], ['cpus', 'cpus ≥'], ['memory_gib', 'memory GiB ≥'],
  ['arch', 'x86_64|arm64'], ['market', 'spot|on-demand|private|any'], ['provider', 'aws,azure'],
  ['region', 'aws:us-*'], ['jurisdiction', 'EU'], ['zone', 'zone'], ['max_price_uusd', 'max µUSD/h'],
  ['sort', 'price|-price|vcpus|memory|risk'], ['limit', '50']];

async function pageOffers(main, params, signal) {
  const inputs = {};
  const form = h('form', { class: 'filters', id: 'offer-filters' },
    OFFER_FILTERS.map(([k, ph]) => (inputs[k] = h('input', { name: k, id: 'o-' + k, placeholder: ph, title: k, value: params.get(k) || '' }))),
    h('button', { type: 'submit' }, 'Search'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const q = {};
    for (const [k] of OFFER_FILTERS) q[k] = inputs[k].value.trim();
    location.hash = '#/offers' + qs(q);
  });
  main.append(h('h1', {}, 'Offers'), form);
  const q = {};
  for (const [k] of OFFER_FILTERS) q[k] = params.get(k) || '';
  q.cursor = params.get('cursor') || '';
  const page = await api('/v1/offers' + qs(q), { signal });
  const c = page.catalog || {};
  main.append(h('p', { class: 'muted' }, `Catalog version ${c.version ?? '?'}, ${c.offers ?? '?'} offers${c.stale ? ', STALE' : ''}.`),
    h('table', { id: 'offers' }, h('thead', {}, h('tr', {},
      ['Offer', 'Provider', 'Region', 'Zone', 'Type', 'vCPUs', 'Memory GiB', 'Accelerators', 'Market', 'Price/h'].map((x) => h('th', {}, x)))),
    h('tbody', {}, page.items.map((o) => h('tr', {},
      h('td', {}, o.id), h('td', {}, o.provider), h('td', {}, o.region), h('td', {}, o.zone || ''),
      h('td', {}, o.instance_type), h('td', {}, o.vcpus), h('td', {}, o.memory_gib ?? o.memory_mib),
      h('td', {}, o.accelerator ? `${o.accelerator}${o.accelerator_count ? ':' + o.accelerator_count : ''}` : (o.accelerators ? JSON.stringify(o.accelerators) : '')),
      h('td', {}, o.market), h('td', {}, money(o.price_uusd_per_hour)))))),
    page.next_cursor ? h('a', { href: '#/offers' + qs(Object.assign({}, q, { cursor: page.next_cursor })) }, 'More →') : '');
}

// ---- spend -----------------------------------------------------------------

function sumBy(items, key) {
  const m = new Map();
  for (const it of items) {
    const k = it[key] ?? '';
    const cur = m.get(k) || { eff: 0n, list: 0n, acc: 0n };
    cur.eff += BigInt(it.effective_cost_uusd || 0);
    cur.list += BigInt(it.list_cost_uusd || 0);
    cur.acc += BigInt(it.accrued_effective_cost_uusd || 0);
    m.set(k, cur);
  }
  return [...m.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1));
}

function sumTable(id, title, rows) {
  return h('section', {}, h('h2', {}, title), h('table', { id }, h('thead', {}, h('tr', {},
    [title.replace(/^By /, ''), 'Effective', 'List', 'Accrued'].map((x) => h('th', {}, x)))),
  h('tbody', {}, rows.map(([k, v]) => h('tr', { 'data-key': k }, h('td', {}, k || '—'),
    h('td', {}, money(v.eff.toString())), h('td', {}, money(v.list.toString())), h('td', {}, money(v.acc.toString())))))));
}

const SVGNS = 'http://www.w3.org/2000/svg';
function svg(tag, attrs) {
  const el = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

// Budget burn-down: the month's cumulative spend by day against each
// budget's limit, with the forecast to the end of the range.
function burnDown(rep) {
  const days = sumBy(rep.items, 'day');
  const budgets = (rep.budgets && rep.budgets.items) || [];
  const limit = budgets.reduce((a, b) => a + Number(b.limit_uusd || 0), 0);
  const fc = Number((rep.forecast && rep.forecast.effective_cost_uusd) || 0);
  let cum = 0;
  const pts = days.map(([d, v]) => { cum += Number(v.eff); return [d, cum]; });
  const W = 640, H = 200, P = 30;
  const from = new Date(rep.from), to = new Date(rep.to);
  const span = Math.max(1, to - from);
  const top = Math.max(limit, fc, cum, 1);
  const x = (d) => P + ((new Date(d) - from) / span) * (W - 2 * P);
  const y = (v) => H - P - (v / top) * (H - 2 * P);
  const g = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': 'budget burn-down' });
  g.append(svg('line', { x1: P, y1: H - P, x2: W - P, y2: H - P, class: 'axis' }));
  if (limit) g.append(svg('line', { x1: P, y1: y(limit), x2: W - P, y2: y(limit), class: 'limit' }));
  if (pts.length) {
    g.append(svg('polyline', { points: pts.map(([d, v]) => `${x(d)},${y(v)}`).join(' '), class: 'spent' }));
    for (const [d, v] of pts) g.append(svg('circle', { cx: x(d), cy: y(v), r: 3.5, class: 'spent-dot' }));
    const [ld, lv] = pts[pts.length - 1];
    g.append(svg('line', { x1: x(ld), y1: y(lv), x2: W - P, y2: y(fc), class: 'forecast' }));
  }
  const legend = h('p', { class: 'legend' }, h('span', { class: 'k-spent' }, 'spent'), ' ',
    h('span', { class: 'k-forecast' }, 'forecast ' + usd(fc)), ' ', limit ? h('span', { class: 'k-limit' }, 'budgets ' + usd(limit)) : '');
  const table = budgets.length ? h('table', { id: 'budget-burn' }, h('thead', {}, h('tr', {},
    ['Tenant', 'Project', 'Limit', 'Spent', 'Accrued', 'Forecast', ''].map((c) => h('th', {}, c)))),
  h('tbody', {}, budgets.map((b) => h('tr', {}, h('td', {}, b.tenant || 'all'), h('td', {}, b.project || ''),
    h('td', {}, money(b.limit_uusd)), h('td', {}, money(b.spent_uusd)), h('td', {}, money(b.accrued_uusd)),
    h('td', {}, money(b.forecast_uusd)),
    h('td', {}, h('meter', { min: 0, max: b.limit_uusd || 1, high: (b.limit_uusd || 1) * 0.8, value: b.spent_uusd || 0 })))))) : h('p', { class: 'muted' }, 'No budgets.');
  return h('section', { id: 'burn' }, h('h2', {}, 'Budget burn-down'), g, legend, table);
}

async function pageSpend(main, params, signal) {
  const f = { from: params.get('from') || '', to: params.get('to') || '', tenant: params.get('tenant') || '' };
  const ins = {};
  const form = h('form', { class: 'filters', id: 'spend-filters' },
    (ins.from = h('input', { name: 'from', placeholder: 'from (2026-11-01)', value: f.from })),
    (ins.to = h('input', { name: 'to', placeholder: 'to (exclusive)', value: f.to })),
    (ins.tenant = h('input', { name: 'tenant', placeholder: 'tenant', value: f.tenant })),
    h('button', { type: 'submit' }, 'Show'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    location.hash = '#/spend' + qs({ from: ins.from.value.trim(), to: ins.to.value.trim(), tenant: ins.tenant.value.trim() });
  });
  main.append(h('h1', {}, 'Spend'), form);
  const rep = await api('/v1/reports/spend' + qs(Object.assign({ group_by: 'tenant,provider,day' }, f)), { signal });
  const t = rep.total || {};
  main.append(h('p', { class: 'muted' }, `${when(rep.from)} to ${when(rep.to)}, ${rep.currency}`),
    h('div', { class: 'totals', id: 'spend-totals' },
      h('div', {}, h('span', { class: 'label' }, 'Effective'), money(t.effective_cost_uusd, { id: 'total-effective' })),
      h('div', {}, h('span', { class: 'label' }, 'List'), money(t.list_cost_uusd, { id: 'total-list' })),
      h('div', {}, h('span', { class: 'label' }, 'Accrued (running)'), money(t.accrued_effective_cost_uusd, { id: 'total-accrued' })),
      h('div', {}, h('span', { class: 'label' }, 'Forecast'), money((rep.forecast || {}).effective_cost_uusd, { id: 'total-forecast' }))),
    h('div', { class: 'grid' },
      sumTable('by-tenant', 'By tenant', sumBy(rep.items, 'tenant')),
      sumTable('by-provider', 'By provider', sumBy(rep.items, 'provider')),
      sumTable('by-day', 'By day', sumBy(rep.items, 'day'))),
    burnDown(rep));
}

// ---- quotas and budgets ----------------------------------------------------

async function pageTenancy(main, params, signal) {
  main.append(h('h1', {}, 'Quotas and budgets'));
  let tenants = [];
  try {
    const r = await api('/v1/tenants', { signal });
    tenants = (r.items || []).map((t) => t.name || t);
  } catch (e) {
    if (me && me.tenant !== '*') tenants = [me.tenant];
  }
  const pick = params.get('tenant') || (me && me.tenant !== '*' ? me.tenant : tenants[0]) || '';
  const sel = h('select', { id: 'tenant-pick' }, tenants.map((t) => h('option', { value: t, selected: t === pick }, t)));
  sel.addEventListener('change', () => { location.hash = '#/tenancy' + qs({ tenant: sel.value }); });
  main.append(h('p', {}, h('label', { for: 'tenant-pick' }, 'Tenant '), sel));
  if (!pick) { main.append(h('p', { class: 'muted' }, 'No tenant.')); return; }
  const qbox = h('section', { id: 'quota' }, h('h2', {}, 'Quota'));
  const bbox = h('section', { id: 'budgets' }, h('h2', {}, 'Budgets'));
  main.append(qbox, bbox);
  try {
    const q = await api('/v1/tenants/' + encodeURIComponent(pick) + '/quota', { signal });
    const lim = Object.entries(q.limits || {}).map(([k, v]) => [k, `${v.limit ?? '∞'} (borrow ${v.borrow ?? 0})`]);
    const gpus = Object.entries(q.gpus || {}).map(([k, v]) => ['GPUs ' + k, `${v.limit ?? '∞'} (borrow ${v.borrow ?? 0})`]);
    qbox.append(kv([['Cohort', q.cohort], ['Spot share', q.spot_share_pct !== undefined ? q.spot_share_pct + ' %' : ''], ...lim, ...gpus, ['Version', q.version]]));
    if (!lim.length && !gpus.length) qbox.append(h('p', { class: 'muted' }, 'No limits: unlimited.'));
  } catch (e) { qbox.append(h('p', { class: 'error' }, problemText(e))); }
  try {
    const b = await api('/v1/tenants/' + encodeURIComponent(pick) + '/budgets', { signal });
    const items = b.items || [];
    bbox.append(items.length ? h('table', { id: 'budget-table' }, h('thead', {}, h('tr', {},
      ['Project', 'Period', 'Mode', 'Limit', 'Spent', 'Committed', 'Forecast', 'Remaining', ''].map((c) => h('th', {}, c)))),
    h('tbody', {}, items.map((x) => {
      const s = x.status || {};
      return h('tr', {}, h('td', {}, x.project || '(tenant)'), h('td', {}, x.period), h('td', {}, x.mode),
        h('td', {}, money(x.limit_uusd)), h('td', {}, money(s.spent_uusd)), h('td', {}, money(s.committed_uusd)),
        h('td', {}, money(s.forecast_uusd)), h('td', {}, money(s.remaining_uusd)),
        h('td', {}, h('meter', { min: 0, max: x.limit_uusd || 1, high: (x.limit_uusd || 1) * 0.8, value: s.spent_uusd || 0 })));
    }))) : h('p', { class: 'muted' }, 'No budgets.'));
  } catch (e) { bbox.append(h('p', { class: 'error' }, problemText(e))); }
}

// ---- audit -----------------------------------------------------------------

async function pageAudit(main, params, signal) {
  const after = params.get('after') || '';
  const verify = h('button', { type: 'button', id: 'verify' }, 'Verify the chain');
  const verdict = h('p', { id: 'verdict', role: 'status' });
  verify.addEventListener('click', async () => {
    verdict.textContent = 'Walking the chain…';
    verdict.className = '';
    try {
      const v = await api('/v1/audit/verify', { signal });
      verdict.textContent = v.ok ? `Intact: ${v.entries} entries, head ${v.head}` : `BROKEN: ${v.problem}`;
      verdict.className = v.ok ? 'ok' : 'error';
    } catch (e) {
      verdict.textContent = 'Refused: ' + problemText(e);
      verdict.className = 'error';
    }
  });
  main.append(h('h1', {}, 'Audit log'), h('div', { class: 'actions' }, verify, verdict));
  const page = await api('/v1/audit' + qs({ after, limit: 100 }), { signal });
  const items = page.items || [];
  main.append(h('table', { id: 'audit' }, h('thead', {}, h('tr', {},
    ['#', 'At', 'Principal', 'Tenant', 'Action', 'Object', 'Outcome', 'Detail'].map((c) => h('th', {}, c)))),
  h('tbody', {}, items.map((e) => h('tr', { class: 'outcome-' + e.outcome },
    h('td', {}, e.seq), h('td', {}, when(e.at)), h('td', {}, e.principal), h('td', {}, e.tenant),
    h('td', {}, e.action), h('td', {}, e.object), h('td', {}, e.outcome), h('td', {}, e.detail || ''))))),
  items.length ? h('a', { href: '#/audit' + qs({ after: items[items.length - 1].seq }) }, 'Later →') : h('p', { class: 'muted' }, 'No entries.'));
}

// ---- providers' health -----------------------------------------------------

async function pageProviders(main, params, signal) {
  main.append(h('h1', {}, "Providers' health"));
  const ready = h('p', { id: 'readyz' });
  main.append(ready);
  try {
    await api('/readyz', { signal });
    ready.textContent = 'Broker ready.';
    ready.className = 'ok';
  } catch (e) {
    ready.textContent = 'Broker not ready: ' + problemText(e);
    ready.className = 'error';
  }
  let page;
  try {
    page = await api('/v1/offers' + qs({ limit: 1 }), { signal });
  } catch (e) {
    main.append(h('p', { class: 'error' }, problemText(e)));
    return;
  }
  const src = (page.catalog && page.catalog.sources) || [];
  main.append(h('table', { id: 'sources' }, h('thead', {}, h('tr', {},
    ['Source', 'Provider', 'Account', 'Kind', 'Fetched', 'Age', 'Refresh', 'Refreshes', 'Failures', 'Health', 'Last error'].map((c) => h('th', {}, c)))),
  h('tbody', {}, src.map((s) => {
    const bad = s.stale || (s.last_error && s.failures);
    return h('tr', { class: bad ? 'unhealthy' : 'healthy' },
      h('td', {}, s.name), h('td', {}, s.provider), h('td', {}, s.account || ''), h('td', {}, s.kind || ''),
      h('td', {}, when(s.fetched_at)), h('td', {}, s.age_s !== null && s.age_s !== undefined ? s.age_s + ' s' : ''),
      h('td', {}, s.refresh_s + ' s'), h('td', {}, s.refreshes), h('td', {}, s.failures),
      h('td', {}, h('span', { class: bad ? 'state state-failed' : 'state state-succeeded' }, s.stale ? 'stale' : bad ? 'failing' : 'ok')),
      h('td', {}, s.last_error || ''));
  }))));
}

// ---- the router ------------------------------------------------------------

const PAGES = { jobs: pageJobs, workflows: pageWorkflows, offers: pageOffers, spend: pageSpend, tenancy: pageTenancy, audit: pageAudit, providers: pageProviders };

async function route() {
  if (pageCtl) pageCtl.abort();
  pageCtl = new AbortController();
  const signal = pageCtl.signal;
  const main = document.getElementById('main');
  main.replaceChildren();
  showAlert('');
  const hash = location.hash.replace(/^#\/?/, '');
  const [path, query] = hash.split('?');
  const params = new URLSearchParams(query || '');
  const parts = path.split('/');
  const signedIn = !!token();
  document.getElementById('nav').hidden = !signedIn;
  document.getElementById('signout').hidden = !signedIn;
  if (!signedIn) {
    document.getElementById('who').textContent = '';
    pageSignIn(main);
    return;
  }
  try {
    if (!me) me = await api('/v1/whoami', { signal });
    document.getElementById('who').textContent = `${me.name} (${me.role}, tenant ${me.tenant})`;
    for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('current', a.dataset.page === parts[0]);
    if (parts[0] === 'job' && parts[1]) await pageJob(main, decodeURIComponent(parts[1]), signal);
    else if (parts[0] === 'workflow' && parts[1]) await pageWorkflow(main, decodeURIComponent(parts[1]), signal);
    else await (PAGES[parts[0]] || pageJobs)(main, params, signal);
    main.setAttribute('data-ready', parts[0] || 'jobs');
  } catch (e) {
    if (signal.aborted) return;
    showAlert(problemText(e));
  }
}

document.addEventListener('DOMContentLoaded', () => {
  document.getElementById('signout').addEventListener('click', () => signOut(''));
  window.addEventListener('hashchange', route);
  route();
});
