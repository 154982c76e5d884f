// console.test.mjs - the web console at /ui in headless chromium
// (puppeteer-core), against a real tradewindd with tokens required and
// the local provider (run.sh starts it).  Each check names what failed.
//
//   sign in with the admin's token (kept in sessionStorage, in no URL)
//   a job submitted through the API reaches running on the jobs page
//     without a reload (the event stream)
//   its page shows the timeline (through running, then succeeded, live)
//     and its output
//   the spend page's totals and per-provider sums equal the report API's
//   a workflow (a -> b, a -> c): the list, its page's graph (3 nodes, 2
//     edges, layered), its nodes turning succeeded without a reload, a
//     node opening its job
//   a viewer's token gets the API's refusal shown when it cancels a job
//     or a workflow
//   every other page renders; no script error, no CSP violation
// Screenshots go to $TW_ARTIFACTS.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import puppeteer from 'puppeteer-core';

const URL_ = process.env.TW_URL;
const ADMIN = readFileSync(process.env.TW_ADMIN_TOKEN_FILE, 'utf8').trim();
const ART = process.env.TW_ARTIFACTS;
const T = 60000; // generous: CI runs this on loaded machines

async function api(token, method, path, body) {
  const res = await fetch(URL_ + path, {
    method,
    headers: Object.assign({ Authorization: 'Bearer ' + token },
      body ? { 'Content-Type': 'application/json' } : {}),
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, json, text, headers: res.headers };
}

function step(name) { console.log('# ' + name); }

const problems = [];
function watch(page, who) {
  page.on('pageerror', (e) => problems.push(`${who}: page error: ${e.message}`));
  page.on('console', (m) => {
    const t = m.text();
    // a refused API call is logged by chromium as a failed resource; the
    // pages show those themselves, and the test checks what they show
    if (m.type() === 'error' && !/status of (4|5)\d\d/.test(t)) problems.push(`${who}: console: ${t}`);
    if (/Content Security Policy/i.test(t)) problems.push(`${who}: CSP: ${t}`);
  });
}

async function signIn(page, token) {
  await page.goto(URL_ + '/ui', { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('#signin #token', { timeout: T });
  await page.type('#token', token);
  await Promise.all([
    page.waitForSelector('main[data-ready="jobs"]', { timeout: T }),
    page.click('#signin button[type=submit]'),
  ]);
  assert.ok(!page.url().includes(token), 'the token is in the URL: ' + page.url());
  const kept = await page.evaluate(() => sessionStorage.getItem('tradewind.token'));
  assert.equal(kept, token, 'the token is kept in sessionStorage');
  const local = await page.evaluate(() => JSON.stringify(localStorage));
  assert.ok(!local.includes(token), 'the token is in localStorage');
}

async function waitJobDone(id) {
  for (let i = 0; i < 240; i++) {
    const j = await api(ADMIN, 'GET', '/v1/jobs/' + id);
    if (['succeeded', 'failed', 'cancelled'].includes(j.json.state)) return j.json;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error('job ' + id + ' never ended');
}

const browser = await puppeteer.launch({
  executablePath: process.env.TW_CHROMIUM,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--hide-scrollbars'],
  defaultViewport: { width: 1280, height: 900 },
});
try {
  step('the console is served with a strict Content-Security-Policy');
  const ui = await api(ADMIN, 'GET', '/ui');
  assert.equal(ui.status, 200);
  const csp = ui.headers.get('content-security-policy') || '';
  assert.match(csp, /script-src 'self'/);
  assert.match(csp, /style-src 'self'/);
  assert.match(csp, /default-src 'none'/);
  assert.ok(!/unsafe-inline/.test(csp), 'CSP allows inline code');
  assert.ok(!/<script>|style=/.test(ui.text), 'the page has inline script or style');

  step('sign in with a token');
  const ctx = await browser.createBrowserContext();
  const page = await ctx.newPage();
  watch(page, 'admin');
  await signIn(page, ADMIN);
  const who = await page.$eval('#who', (e) => e.textContent);
  assert.match(who, /admin/);

  step('a job submitted through the API reaches running on the jobs page, no reload');
  await page.waitForSelector('#live[data-live="live"]', { timeout: T });
  await page.evaluate(() => { window.__noReload = 'still here'; });
  const sub = await api(ADMIN, 'POST', '/v1/jobs', {
    name: 'console-test', resources: { cpus: '1' },
    run: 'echo hello-console; sleep 6; echo bye-console',
  });
  assert.equal(sub.status, 201, sub.text);
  const id = sub.json.id;
  await page.waitForSelector(`tr[data-job="${id}"]`, { timeout: T });
  await page.waitForSelector(`tr[data-job="${id}"] .cell-state [data-state="running"]`, { timeout: T });
  assert.equal(await page.evaluate(() => window.__noReload), 'still here', 'the page reloaded');
  await page.waitForFunction((id) => document.querySelector(`tr[data-job="${id}"] .cell-provider`)?.textContent === 'local',
    { timeout: T }, id);
  await page.screenshot({ path: ART + '/jobs.png', fullPage: true });

  step('its page: the timeline and the output, live');
  await Promise.all([
    page.waitForSelector('main[data-ready="job"]', { timeout: T }),
    page.click(`tr[data-job="${id}"] a`),
  ]);
  await page.waitForSelector('#timeline li[data-to="running"]', { timeout: T });
  const tl = await page.$$eval('#timeline li', (l) => l.map((e) => e.getAttribute('data-to')));
  for (const s of ['pending', 'placing', 'provisioning', 'running'])
    assert.ok(tl.includes(s), `the timeline lacks ${s}: ${tl}`);
  await page.waitForFunction(() => document.querySelector('#logs')?.textContent.includes('hello-console'), { timeout: T });
  await page.waitForSelector('#explain', { timeout: T });
  const placed = (await api(ADMIN, 'GET', '/v1/jobs/' + id)).json.placement;
  assert.equal(await page.$eval('#explain', (e) => e.textContent), placed.explain, "the plan's explanation");
  await page.waitForSelector('#plan table.plan tbody tr', { timeout: T });
  await page.waitForSelector('#attempt-table tr[data-attempt="1"]', { timeout: T });
  const att = (await api(ADMIN, 'GET', `/v1/jobs/${id}/attempts`)).json.items;
  assert.equal(att.length, 1);
  assert.equal(await page.$eval('#attempt-table tr[data-attempt="1"] td:nth-child(2)', (e) => e.textContent), att[0].provider);
  await page.waitForSelector('#timeline li[data-to="succeeded"]', { timeout: T });
  await page.waitForFunction(() => document.querySelector('#logs')?.textContent.includes('bye-console'), { timeout: T });
  await page.screenshot({ path: ART + '/job.png', fullPage: true });
  await waitJobDone(id);

  step("the spend page's totals equal the report API's");
  // the finished job's cost is in the ledger; nothing accrues any more
  let rep;
  for (let i = 0; i < 120; i++) {
    rep = (await api(ADMIN, 'GET', '/v1/reports/spend?group_by=tenant,provider,day')).json;
    if (rep.total.effective_cost_uusd > 0 && rep.total.accrued_effective_cost_uusd === 0) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  assert.ok(rep.total.effective_cost_uusd > 0, 'no spend recorded: ' + JSON.stringify(rep.total));
  await page.goto(URL_ + '/ui#/spend', { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('main[data-ready="spend"]', { timeout: T });
  const shown = await page.evaluate(() => ({
    effective: document.querySelector('#total-effective').dataset.uusd,
    list: document.querySelector('#total-list').dataset.uusd,
    accrued: document.querySelector('#total-accrued').dataset.uusd,
    effectiveText: document.querySelector('#total-effective').textContent,
    providers: [...document.querySelectorAll('#by-provider tbody tr')].map((r) =>
      [r.dataset.key, r.querySelector('.money').dataset.uusd]),
  }));
  const again = (await api(ADMIN, 'GET', '/v1/reports/spend?group_by=tenant,provider,day')).json;
  assert.deepEqual(again.total, rep.total, 'the report moved while the page loaded');
  assert.equal(shown.effective, String(rep.total.effective_cost_uusd), 'effective total');
  assert.equal(shown.list, String(rep.total.list_cost_uusd), 'list total');
  assert.equal(shown.accrued, String(rep.total.accrued_effective_cost_uusd), 'accrued total');
  const e = BigInt(rep.total.effective_cost_uusd);
  assert.equal(shown.effectiveText, `$${e / 1000000n}.${(e % 1000000n).toString().padStart(6, '0')}`);
  const byProv = new Map();
  for (const it of rep.items) byProv.set(it.provider, (byProv.get(it.provider) || 0) + it.effective_cost_uusd);
  assert.deepEqual(new Map(shown.providers.map(([k, v]) => [k, Number(v)])), byProv, 'by provider');
  await page.screenshot({ path: ART + '/spend.png', fullPage: true });

  step('every other page renders');
  for (const [hash, ready, sel] of [['#/offers', 'offers', '#offers tbody tr'],
    ['#/providers', 'providers', '#sources tbody tr'], ['#/tenancy', 'tenancy', '#quota'],
    ['#/audit', 'audit', '#audit tbody tr'], ['#/jobs?state=succeeded', 'jobs', `tr[data-job="${id}"]`],
    ['#/jobs?provider=local', 'jobs', `tr[data-job="${id}"]`]]) {
    await page.goto(URL_ + '/ui' + hash, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector(`main[data-ready="${ready}"]`, { timeout: T });
    await page.waitForSelector(sel, { timeout: T });
  }
  await page.goto(URL_ + '/ui#/jobs?provider=nowhere', { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('main[data-ready="jobs"]', { timeout: T });
  assert.equal(await page.$(`tr[data-job="${id}"]`), null, 'the provider filter let a local job through');
  await page.goto(URL_ + '/ui#/audit', { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('main[data-ready="audit"]', { timeout: T });
  await page.click('#verify');
  await page.waitForFunction(() => /Intact/.test(document.querySelector('#verdict')?.textContent), { timeout: T });

  step('a workflow (a -> b, a -> c): its page draws the graph, nodes turn succeeded live');
  // a holds until the test has seen the graph drawn with b and c not yet
  // run, then lets go: the page must show them turn succeeded by itself
  const go = ART + '/wf-go';
  const wfDoc = {
    name: 'console-flow',
    tasks: [
      { name: 'a', job: { resources: { cpus: '1' },
        run: `i=0; while [ ! -e '${go}' ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done; echo a-done` } },
      { name: 'b', depends: ['a'], job: { resources: { cpus: '1' }, run: 'echo b-done' } },
      { name: 'c', depends: ['a'], job: { resources: { cpus: '1' }, run: 'echo c-done' } },
    ],
  };
  const wf = await api(ADMIN, 'POST', '/v1/workflows', wfDoc);
  assert.equal(wf.status, 201, wf.text);
  const wid = wf.json.id;
  const listed = await api(ADMIN, 'GET', '/v1/workflows?state=running');
  assert.equal(listed.status, 200, listed.text);
  assert.ok(listed.json.items.some((w) => w.id === wid), 'GET /v1/workflows?state=running lacks the new workflow');
  assert.equal((await api(ADMIN, 'GET', '/v1/workflows?state=sleepy')).status, 400, 'a bad state filter is refused');
  await page.goto(URL_ + '/ui#/workflows', { waitUntil: 'domcontentloaded' });
  await page.waitForSelector(`tr[data-workflow="${wid}"]`, { timeout: T });
  await Promise.all([
    page.waitForSelector('main[data-ready="workflow"]', { timeout: T }),
    page.click(`tr[data-workflow="${wid}"] a`),
  ]);
  await page.evaluate(() => { window.__noReload = 'still here'; });
  await page.waitForSelector('#wf-graph', { timeout: T });
  const nodes = await page.$$eval('#wf-graph g.node', (l) => l.map((e) => e.dataset.node).sort());
  assert.deepEqual(nodes, ['a', 'b', 'c'], 'the graph nodes');
  const edges = await page.$$eval('#wf-graph path.edge', (l) => l.map((e) => e.dataset.from + '>' + e.dataset.to).sort());
  assert.deepEqual(edges, ['a>b', 'a>c'], 'the graph edges');
  // the layered layout: a in the first layer, b and c in the second
  const xs = await page.$$eval('#wf-graph g.node', (l) => Object.fromEntries(l.map((e) =>
    [e.dataset.node, Number(/translate\(([-\d.]+)/.exec(e.getAttribute('transform'))[1])])));
  assert.ok(xs.a < xs.b && xs.b === xs.c, 'layers: ' + JSON.stringify(xs));
  const before = await page.$$eval('#wf-graph g.node', (l) => Object.fromEntries(l.map((e) => [e.dataset.node, e.dataset.state])));
  assert.ok(!['succeeded', 'failed', 'cancelled'].includes(before.a), 'a ended before it was let go: ' + JSON.stringify(before));
  assert.equal(before.b, 'waiting', 'b before a ended');
  assert.equal(before.c, 'waiting', 'c before a ended');
  writeFileSync(go, '');
  await page.waitForFunction(() => [...document.querySelectorAll('#wf-graph g.node')].length === 3 &&
    [...document.querySelectorAll('#wf-graph g.node')].every((e) => e.dataset.state === 'succeeded'), { timeout: T });
  assert.equal(await page.evaluate(() => window.__noReload), 'still here', 'the workflow page reloaded');
  await page.waitForFunction(() => document.querySelector('#wf-count-succeeded')?.textContent === '3', { timeout: T });
  await page.waitForSelector('#wf-state-now [data-state="succeeded"]', { timeout: T });
  const edgeStates = await page.$$eval('#wf-graph path.edge', (l) => l.map((e) => e.dataset.state));
  assert.deepEqual(edgeStates, ['met', 'met'], 'the edges are met');
  const wfNow = (await api(ADMIN, 'GET', '/v1/workflows/' + wid)).json;
  assert.equal(await page.$eval('#wf-cost', (e) => e.textContent), '$' + wfNow.cost_so_far_usd, 'cost so far');
  await page.screenshot({ path: ART + '/workflow.png', fullPage: true });
  // a node opens its task's job
  const bJob = await page.$eval('#wf-graph g.node[data-node="b"]', (e) => e.dataset.job);
  assert.ok(bJob, 'node b has no job');
  await Promise.all([
    page.waitForSelector('main[data-ready="job"]', { timeout: T }),
    page.click('#wf-graph g.node[data-node="b"]'),
  ]);
  assert.ok(page.url().endsWith('#/job/' + bJob), 'clicking b opened ' + page.url());
  // a long one, for the viewer's bulk cancel below
  const wlong = await api(ADMIN, 'POST', '/v1/workflows', { name: 'console-long-flow',
    tasks: [{ name: 'wait', for_each: ['1', '2'], job: { resources: { cpus: '1' }, run: 'sleep 120' } },
      { name: 'after', depends: ['wait'], job: { resources: { cpus: '1' }, run: 'true' } }] });
  assert.equal(wlong.status, 201, wlong.text);

  step("a viewer's token: the API's refusal shown on cancel");
  assert.equal((await api(ADMIN, 'POST', '/v1/users', { name: 'ui-viewer', tenant: 'default', role: 'viewer' })).status, 201);
  const vt = await api(ADMIN, 'POST', '/v1/tokens', { principal: 'ui-viewer', name: 'console test' });
  assert.equal(vt.status, 201, vt.text);
  const long = await api(ADMIN, 'POST', '/v1/jobs', { name: 'console-long', resources: { cpus: '1' }, run: 'sleep 120' });
  assert.equal(long.status, 201, long.text);
  const vctx = await browser.createBrowserContext();
  const vpage = await vctx.newPage();
  watch(vpage, 'viewer');
  await signIn(vpage, vt.json.token);
  await vpage.goto(URL_ + '/ui#/job/' + long.json.id, { waitUntil: 'domcontentloaded' });
  await vpage.waitForSelector('main[data-ready="job"]', { timeout: T });
  await vpage.click('#cancel');
  await vpage.waitForSelector('#cancel-result.error', { timeout: T });
  const refusal = await vpage.$eval('#cancel-result', (el) => el.textContent);
  const direct = await api(vt.json.token, 'DELETE', '/v1/jobs/' + long.json.id);
  assert.equal(direct.status, 403);
  assert.ok(refusal.includes('403') && refusal.includes(direct.json.detail),
    `the refusal shown "${refusal}" is not the API's "${direct.json.detail}"`);
  const still = await api(ADMIN, 'GET', '/v1/jobs/' + long.json.id);
  assert.notEqual(still.json.state, 'cancelled', "the viewer's cancel went through");
  await vpage.screenshot({ path: ART + '/viewer-refused.png', fullPage: true });
  // and on a workflow's bulk cancel; its fan-out is one node with counts
  await vpage.goto(URL_ + '/ui#/workflow/' + wlong.json.id, { waitUntil: 'domcontentloaded' });
  await vpage.waitForSelector('main[data-ready="workflow"]', { timeout: T });
  await vpage.waitForSelector('#wf-graph g.node[data-node="wait"][data-tasks="2"]', { timeout: T });
  assert.deepEqual(await vpage.$$eval('#wf-graph g.node', (l) => l.map((e) => e.dataset.node).sort()), ['after', 'wait'],
    'a fan-out is one node');
  assert.deepEqual(await vpage.$$eval('#wf-graph path.edge', (l) => l.map((e) => e.dataset.from + '>' + e.dataset.to)),
    ['wait>after'], "the fan-out's two edges are one path");
  const fanSub = await vpage.$eval('#wf-graph g.node[data-node="wait"] .sub', (e) => e.textContent);
  assert.match(fanSub, /^×2: /, "the fan-out node's counts");
  await vpage.screenshot({ path: ART + '/workflow-fanout.png', fullPage: true });
  await vpage.click('#wf-cancel');
  await vpage.waitForSelector('#wf-cancel-result.error', { timeout: T });
  const wrefusal = await vpage.$eval('#wf-cancel-result', (el) => el.textContent);
  const wdirect = await api(vt.json.token, 'DELETE', '/v1/workflows/' + wlong.json.id);
  assert.equal(wdirect.status, 403);
  assert.ok(wrefusal.includes('403') && wrefusal.includes(wdirect.json.detail),
    `the refusal shown "${wrefusal}" is not the API's "${wdirect.json.detail}"`);
  assert.equal((await api(ADMIN, 'GET', '/v1/workflows/' + wlong.json.id)).json.state, 'running', "the viewer's bulk cancel went through");
  await api(ADMIN, 'DELETE', '/v1/workflows/' + wlong.json.id);
  // the viewer's sign-out forgets the token
  await vpage.click('#signout');
  await vpage.waitForSelector('#signin #token', { timeout: T });
  assert.equal(await vpage.evaluate(() => sessionStorage.getItem('tradewind.token')), null);
  await api(ADMIN, 'DELETE', '/v1/jobs/' + long.json.id);

  step("the event stream: a tenant's principal sees its own jobs only");
  assert.equal((await api(ADMIN, 'POST', '/v1/tenants', { name: 'other' })).status, 201);
  assert.equal((await api(ADMIN, 'POST', '/v1/users', { name: 'other-member', tenant: 'other', role: 'member' })).status, 201);
  const ot = (await api(ADMIN, 'POST', '/v1/tokens', { principal: 'other-member' })).json.token;
  const ctl = new AbortController();
  const res = await fetch(URL_ + '/v1/events/stream', { headers: { Authorization: 'Bearer ' + ot }, signal: ctl.signal });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /text\/event-stream/);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let got = '';
  const theirs = await api(ADMIN, 'POST', '/v1/jobs', { name: 'not-yours', resources: { cpus: '1' }, run: 'true' });
  const mine = await api(ot, 'POST', '/v1/jobs', { name: 'yours', resources: { cpus: '1' }, run: 'true' });
  assert.equal(mine.status, 201, mine.text);
  const until = Date.now() + T;
  while (!got.includes(`"job":"${mine.json.id}"`) && Date.now() < until) {
    const { value, done } = await reader.read();
    if (done) break;
    got += value;
  }
  ctl.abort();
  assert.ok(got.includes(`"job":"${mine.json.id}"`), "the tenant's own job's events did not arrive");
  assert.ok(!got.includes(theirs.json.id), "another tenant's job reached the stream");
  await api(ADMIN, 'DELETE', '/v1/jobs/' + mine.json.id);

  assert.deepEqual(problems, [], 'script errors or CSP violations');
  console.log('ok: console checks passed');
} catch (e) {
  // what the browser showed when it failed, for the artifacts
  for (const [i, p] of (await browser.pages()).entries()) {
    try {
      await p.screenshot({ path: `${ART}/failure-${i}.png`, fullPage: true });
      console.error(`--- page ${i} ${p.url()}\n` + await p.evaluate(() => document.body.innerText));
    } catch { /* a page already gone */ }
  }
  if (problems.length) console.error(problems.join('\n'));
  throw e;
} finally {
  await browser.close();
}
