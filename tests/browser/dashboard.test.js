/*
 * The dashboard in headless Chromium (run by tests/browser/run.sh, which
 * sets up the repository and the two servers and passes them here):
 *
 *   ADMIN_URL, RO_URL   serve with an admin token, and read-only
 *   ADMIN_TOKEN         the token
 *   DONE_ID, RUNNING_ID a completed execution (its parameter `note` is an
 *                       HTML injection attempt) and a running one
 *   LOCK_NAME           a lock another host holds (its name has markup)
 *   PART_ID             the restart of PART_FAILED_ID, a partitioned run
 *                       that failed
 *   ARTIFACTS           where the screenshots go
 *   CBATCH_CHROMIUM     the browser
 *
 * Any dialog (the injected markup's alert), page error, console error or
 * CSP violation fails the test, except the console's own note of the one
 * request the test makes to be refused.
 */
'use strict';

const path = require('path');
const puppeteer = require('puppeteer-core');

const env = (k) => {
  if (!process.env[k]) throw new Error('missing environment variable ' + k);
  return process.env[k];
};
const ADMIN = env('ADMIN_URL'), RO = env('RO_URL'), TOKEN = env('ADMIN_TOKEN');
const DONE = env('DONE_ID'), RUNNING = env('RUNNING_ID'), ART = env('ARTIFACTS');
const LOCK = env('LOCK_NAME');
const PART = env('PART_ID'), PART_FAILED = env('PART_FAILED_ID');
const XSS = '<img src=x onerror=alert(1)>';

const problems = [];
let expectRefused = null; /* a URL whose failed load the console may report */
let checks = 0;

function check(ok, what) {
  checks++;
  if (!ok) throw new Error('check failed: ' + what);
  console.log('ok ' + checks + ' - ' + what);
}

async function newPage(browser, width, height) {
  const page = await browser.newPage();
  await page.setViewport({ width, height });
  /* Before any of the page's own scripts: CSP violations are recorded. */
  await page.evaluateOnNewDocument(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => {
      window.__csp.push(e.violatedDirective + ' ' + e.blockedURI);
    });
  });
  page.on('dialog', async (d) => {
    problems.push('dialog: ' + d.type() + ' ' + d.message());
    await d.dismiss();
  });
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  page.on('console', (m) => {
    if (m.type() !== 'error' && m.type() !== 'warn' && m.type() !== 'warning') return;
    const where = (m.location() && m.location().url) || '';
    if (expectRefused && where.startsWith(expectRefused)) return;
    problems.push('console ' + m.type() + ': ' + m.text() + (where ? ' (' + where + ')' : ''));
  });
  page.on('requestfailed', (r) => problems.push('request failed: ' + r.url()));
  return page;
}

async function cspViolations(page) {
  return page.evaluate(() => window.__csp.slice());
}

const text = (page, sel) => page.$eval(sel, (e) => e.textContent);
const num = (s) => Number(String(s).replace(/[^0-9.]/g, ''));

async function main() {
  const browser = await puppeteer.launch({
    executablePath: process.env.CBATCH_CHROMIUM,
    headless: true,
    args: (process.getuid && process.getuid() === 0 ? ['--no-sandbox'] : [])
      .concat(['--disable-gpu', '--disable-dev-shm-usage', '--no-first-run']),
  });
  try {
    const page = await newPage(browser, 1366, 768);

    /* 1. The executions list has the finished and the running execution. */
    await page.goto(ADMIN + '/#/executions', { waitUntil: 'networkidle0' });
    await page.waitForSelector(`tr[data-execution="${DONE}"]`);
    await page.waitForSelector(`tr[data-execution="${RUNNING}"]`);
    check(await page.$eval(`tr[data-execution="${DONE}"] [data-status]`, (e) => e.dataset.status) === 'COMPLETED',
      'the finished execution is listed as COMPLETED');
    check(await page.$eval(`tr[data-execution="${RUNNING}"] [data-status]`, (e) => e.dataset.status) === 'STARTED',
      'the running execution is listed as STARTED');
    /* Its parameter shows as text in the list too. */
    check((await text(page, `tr[data-execution="${DONE}"]`)).includes('note=' + XSS),
      'the injected parameter shows as text in the list');
    /* The page is ES modules (its pages in modules of their own), loaded
     * under the same CSP; its status filter is the server's vocabulary. */
    check(await page.$eval('script[src="/app.js"]', (e) => e.type) === 'module' &&
      await page.evaluate(() => performance.getEntriesByType('resource')
        .some((r) => new URL(r.name).pathname === '/pages/executions.js')),
      'the dashboard runs as ES modules (app.js, pages/executions.js)');
    const vocabulary = await page.evaluate(async () => {
      const info = await (await fetch('/api/v1/info')).json();
      return { statuses: info.statuses, live: info.live_statuses,
        offered: [...document.querySelectorAll('#filter-status option')].map((o) => o.value).filter(Boolean) };
    });
    check(JSON.stringify(vocabulary.offered) === JSON.stringify(vocabulary.statuses) &&
      vocabulary.statuses.length === 8 && JSON.stringify(vocabulary.live) === '["STARTING","STARTED","STOPPING"]',
      'the status filter offers /api/v1/info\'s statuses (' + vocabulary.offered.join(', ') + ')');

    /* 2. The injected parameter on its execution page: text, no element, no dialog. */
    await page.goto(ADMIN + '/#/execution/' + DONE, { waitUntil: 'networkidle0' });
    await page.waitForSelector('[data-param="note"]');
    check(await text(page, '[data-param="note"]') === XSS, 'the parameter value is shown exactly as text');
    check(await page.$$eval('main img, main [onerror]', (l) => l.length) === 0, 'no element was made from it');
    /* Run from a shell: no log, and the page says so (issue 29 item 2). */
    await page.waitForSelector('#log-none');
    check((await text(page, '#log-none')).startsWith('no log:'), 'a run started from a shell has no log, and its page says so');

    /* 2b. A partitioned restart: each partition's worker in a column of its
     * own, its claims; the instance's lineage; the link to its lock audit. */
    await page.goto(ADMIN + '/#/execution/' + PART, { waitUntil: 'networkidle0' });
    await page.waitForSelector('table.partitions td[data-worker]');
    const heads = await page.$$eval('table.partitions th', (l) => l.map((h) => h.textContent));
    check(heads.includes('Worker') && heads.includes('Claims') && heads.includes('Takeovers') && heads.includes('Lease left'),
      'the partitions table has worker, claims, takeovers and lease columns (' + heads.join(', ') + ')');
    const workers = await page.$$eval('table.partitions td[data-worker]', (l) => l.map((c) => c.textContent));
    check(workers.length > 0 && workers.every((w) => w.length > 1 && w !== '–'), 'each partition shows its worker (' + workers.join(', ') + ')');
    check(await page.$$eval('table.partitions tbody tr', (l) => l.every((r) =>
      !r.cells[r.cells.length - 1].textContent.includes('worker '))), 'and not under the exit message');
    await page.waitForSelector('#lineage-table tr[data-lineage="' + PART_FAILED + '"]');
    check((await text(page, '#continued-from')).startsWith('This execution continued from '),
      'the restart says what it continued from: ' + await text(page, '#continued-from'));
    check(await page.$eval('#continued-from', (e) => Number(e.dataset.items)) > 0, 'a positive number of items');
    check((await text(page, '#lineage-table tr[data-lineage="' + PART_FAILED + '"]')).includes('FAILED'),
      'the lineage lists the failed execution with its status');
    check(await page.$eval('#lineage-table tr[data-lineage="' + PART + '"] td[data-cumulative]', (c) => c.dataset.cumulative) === '50',
      'and the cumulative items of the two: every account once');
    await page.click('#lock-audit-link');
    await page.waitForSelector('#audit tbody tr[data-audit]');
    const auditLocks = await page.$$eval('#audit tbody tr[data-audit]', (l) => l.map((r) => r.cells[1].textContent));
    check(auditLocks.length > 0 && auditLocks.some((n) => n.startsWith('cbatch.partition:')) &&
      await page.$eval('#audit-execution', (e) => e.value) === PART,
    'the lock audit link opens the audit filtered by this execution (' + auditLocks.length + ' rows)');
    check(await page.$(`#audit [data-partition-of="${PART}"] a[href="#/execution/${PART}"]`) !== null,
      'a partition lock\'s audit row names its job, step and execution (linked)');

    /* 3. The jobs overview and the history chart. */
    await page.goto(ADMIN + '/#/', { waitUntil: 'networkidle0' });
    await page.waitForSelector('tr[data-job="ledger"] [data-status]');
    check(await page.$eval('tr[data-job="ledger"] [data-status]', (e) => e.dataset.status) === 'STARTED',
      'the jobs overview shows the last status of ledger');
    check(await page.$('tr[data-job="ledger"] td[data-next="paused"]') !== null,
      'a job whose schedules are all paused shows "paused" as its next firing');
    await page.goto(ADMIN + '/#/job/ledger', { waitUntil: 'networkidle0' });
    await page.waitForSelector('#chart-duration rect.bar');
    check(await page.$$eval('#chart-duration rect.bar', (l) => l.length) === 2, 'the duration chart has a bar per execution');
    check(await page.$$eval('#chart-rate rect.bar', (l) => l.length) === 2, 'the items/s chart has a bar per execution');

    /* 4. Locks: the running job's lease counts down between refreshes. */
    await page.goto(ADMIN + '/#/locks', { waitUntil: 'networkidle0' });
    await page.waitForSelector('tr[data-lock="ledger"] td[data-lease]');
    check(await page.$$eval('#locks tr[data-lock]', (l) => l.every((r) => !r.textContent.includes('released'))),
      'held locks only by default (the partitioned runs\' released job lock is not listed)');
    const lease1 = await text(page, 'tr[data-lock="ledger"] td[data-lease]');
    await new Promise((r) => setTimeout(r, 1500));
    const lease2 = await text(page, 'tr[data-lock="ledger"] td[data-lease]');
    check(/[0-9]/.test(lease1) && lease1 !== lease2, `the lease counts down (${lease1} -> ${lease2})`);
    check(await page.$('tr[data-lock="ledger"] button[data-action="unlock"]') !== null, 'an admin console offers unlock');

    /* 5. The running execution: its counts advance without a reload. */
    await page.goto(ADMIN + '/#/execution/' + RUNNING, { waitUntil: 'networkidle0' });
    await page.waitForSelector('#live-items');
    const navs = [];
    page.on('framenavigated', (f) => { if (f === page.mainFrame()) navs.push(f.url()); });
    const items1 = num(await text(page, '#live-items'));
    await page.waitForFunction((n) => {
      const e = document.querySelector('#live-items');
      return e && Number(e.textContent.replace(/[^0-9.]/g, '')) > n;
    }, { timeout: 10000 }, items1);
    await new Promise((r) => setTimeout(r, 1200));
    const items2 = num(await text(page, '#live-items'));
    check(items2 > items1, `the running step's items advance live (${items1} -> ${items2})`);
    check(navs.length === 0, 'without a reload');
    check(/[0-9]/.test(await text(page, '#live-rate')), 'items/s is shown');
    await page.screenshot({ path: path.join(ART, 'dashboard-1366.png') });

    /* 6. The read-only server: no buttons, "read-only", and the API refuses a POST from the page. */
    const ro = await newPage(browser, 1366, 768);
    await ro.goto(RO + '/#/execution/' + RUNNING, { waitUntil: 'networkidle0' });
    await ro.waitForSelector('#live-items');
    check(await ro.$('#read-only') !== null && (await text(ro, '#read-only')) === 'read-only', 'the read-only console says so');
    check(await ro.$$eval('button[data-action]', (l) => l.length) === 0, 'without a token there is no action button');
    check(await ro.$('#token') === null, 'and no token field');
    expectRefused = RO + '/api/v1/executions/' + RUNNING + '/stop';
    const refused = await ro.evaluate(async (id, tok) => {
      const r = await fetch('/api/v1/executions/' + id + '/stop', {
        method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + tok }, body: '{}',
      });
      return { status: r.status, body: await r.json() };
    }, RUNNING, TOKEN);
    check(refused.status === 403 && /read-only/.test(refused.body.error.message),
      'a POST from the read-only page is refused (' + refused.status + ')');
    /* And with the admin server, a POST without the token from its own page: 401. */
    expectRefused = ADMIN + '/api/v1/executions/' + RUNNING + '/stop';
    const noToken = await page.evaluate(async (id) => {
      const r = await fetch('/api/v1/executions/' + id + '/stop', { method: 'POST', body: '{}' });
      return r.status;
    }, RUNNING);
    check(noToken === 401, 'a POST without the token is refused (401)');
    check((await text(page, '#exec-status')).startsWith('STARTED'), 'and the execution still runs');
    expectRefused = null;

    /* 7. Phone width: the page fits, the tables scroll inside their cards. */
    const narrow = await newPage(browser, 390, 844);
    await narrow.goto(ADMIN + '/#/execution/' + RUNNING, { waitUntil: 'networkidle0' });
    await narrow.waitForSelector('#live-items');
    const width = await narrow.evaluate(() => document.documentElement.scrollWidth);
    check(width <= 391, `at 390 px wide the page does not overflow (${width} px)`);
    await narrow.screenshot({ path: path.join(ART, 'dashboard-390.png'), fullPage: true });
    await narrow.goto(ADMIN + '/#/execution/' + PART, { waitUntil: 'networkidle0' });
    await narrow.waitForSelector('#lineage-table');
    const pwidth = await narrow.evaluate(() => document.documentElement.scrollWidth);
    check(pwidth <= 391, `at 390 px wide the partitioned execution page does not overflow (${pwidth} px)`);

    /* 8. Stop with the token: the execution turns STOPPED. */
    await page.bringToFront();
    await page.waitForSelector('#token');
    await page.type('#token', TOKEN);
    await page.keyboard.press('Tab'); /* "change": kept in sessionStorage */
    check(await page.evaluate(() => sessionStorage.getItem('cbatch.adminToken')) === TOKEN,
      'the token is kept in sessionStorage');
    await page.waitForSelector('button[data-action="stop"]');
    await page.click('button[data-action="stop"]'); /* arms */
    await page.click('button[data-action="stop"]'); /* acts */
    await page.waitForFunction(() => {
      const s = document.querySelector('#exec-status');
      return s && s.textContent.startsWith('STOPPED');
    }, { timeout: 60000 });
    check(true, 'stop with the token turns the execution STOPPED');
    check(await page.$('button[data-action="restart"]') !== null, 'a stopped execution offers restart');
    check(await page.$('button[data-action="stop"]') === null, 'and no more stop');

    /* 10. Schedules: the list, one schedule's next firings in its zone with
     * the offset (UTC on hover), its actions; the job page's launch form. */
    await page.goto(ADMIN + '/#/schedules', { waitUntil: 'networkidle0' });
    await page.waitForSelector('tr[data-schedule="nightly-berlin"]');
    check((await text(page, 'tr[data-schedule="nightly-berlin"]')).includes('Europe/Berlin'),
      'the Schedules page lists the schedule with its zone');
    check((await text(page, 'table#schedules thead')).includes('Last firing') &&
      await page.$('tr[data-schedule="nightly-berlin"] td[data-last-firing]') !== null,
      'and a last-firing column, as the CLI\'s');
    await page.goto(ADMIN + '/#/schedule/nightly-berlin', { waitUntil: 'networkidle0' });
    await page.waitForSelector('#next-firings tr[data-next-firing]');
    check(await page.$$eval('#next-firings tr[data-next-firing]', (l) => l.length) === 5, 'the schedule page shows 5 next firings');
    const first = await text(page, '#next-firings tr[data-next-firing] td');
    check(/T0[23]:[03]0:00\+0[12]:00$/.test(first), `a next firing is local time in Berlin with its offset (${first})`);
    check((await page.$eval('#next-firings time', (e) => e.title)).startsWith('UTC '), 'its UTC time is on hover');
    check(await page.$('button[data-action="fire now"]') !== null && await page.$('button[data-action="pause"]') !== null,
      'an admin console offers pause and fire now');
    check(await page.$('select#firing-status option[value="SKIPPED_OVERLAP"]') !== null,
      'the firings can be filtered by status');
    /* Backfill (issue 28.11): a range and two clicks; the notice says what
     * was queued, and the firings list shows them as BACKFILL. */
    await page.type('#backfill-from', '2025-03-01');
    await page.type('#backfill-to', '2025-03-02T23:00');
    await page.click('button[data-action="backfill"]');
    check((await text(page, 'button[data-action="backfill"]')) === 'Confirm backfill',
      'the first click on Backfill only arms it');
    await page.click('button[data-action="backfill"]');
    await page.waitForFunction(() => (document.getElementById('notice').textContent || '').includes('firings queued'),
      { timeout: 30000 });
    check((await text(page, '#notice')).includes(': 2 firings queued, 0 instants had one already'),
      'a backfill queues one firing per past instant, and says so');
    await page.waitForFunction(() => [...document.querySelectorAll('#firings tr[data-firing] td')]
      .some((td) => td.textContent === 'BACKFILL'), { timeout: 30000 });
    check(true, 'the firings list shows them as BACKFILL');
    /* A run of skipped instants is one row: its count and its range, in
     * times with their zone (issue 28.5). */
    await page.goto(ADMIN + '/#/schedule/skips', { waitUntil: 'networkidle0' });
    await page.waitForSelector('tr[data-firing] span.run');
    const run = await text(page, 'tr[data-firing] span.run');
    check(/^6 instants \d{2}:\d{2}:25[+-]\d{2}:\d{2}\u2013\d{2}:\d{2}:30[+-]\d{2}:\d{2}$/.test(run),
      `six skipped instants read as one row with their range (${run})`);
    check(await page.$$eval('tr[data-firing]', (l) => l.length) === 2, 'the skips and the firing they waited for: two rows');
    /* At 1366 px an instant never wraps mid-value (issue 28.5): each time
     * of the firings list is one line box. */
    const wrapped = await page.$$eval('#firings time', (l) => l.filter((t) => t.getClientRects().length !== 1).length);
    const times = await page.$$eval('#firings time', (l) => l.length);
    check(times > 0 && wrapped === 0, `at 1366 px no instant of the firings wraps (${wrapped} of ${times})`);
    await page.goto(ADMIN + '/#/job/tick', { waitUntil: 'networkidle0' });
    await page.waitForSelector('tr[data-declared="at"] input[data-param-input="at"]');
    check((await text(page, 'tr[data-declared="at"]')).includes('required'), 'the job page lists its declared parameters');
    check((await text(page, 'tr[data-declared="sleepMs"]')).includes('non-identifying') &&
      !(await text(page, 'tr[data-declared="at"]')).includes('non-identifying'),
    'a parameter the job declares non-identifying is shown so');
    check(await page.$('form#launch button[data-action="launch"]') !== null, 'and a form that launches a run');
    /* Launch takes two clicks, and the page follows the run it made (the
     * answer names the execution: 201), never "started" for a run that did not run. */
    await page.type('input[data-param-input="at"]', 'browser-launch');
    await page.click('form#launch button[data-action="launch"]');
    check((await text(page, 'form#launch button[data-action="launch"]')) === 'Confirm launch',
      'the first click on Launch only arms it');
    await page.click('form#launch button[data-action="launch"]');
    await page.waitForFunction(() => /^#\/execution\/\d+$/.test(location.hash), { timeout: 60000 });
    check(true, 'the second click launches the run and the page goes to its execution');
    await page.waitForFunction(() => {
      const dd = [...document.querySelectorAll('dt')].find((d) => d.textContent === 'Started');
      return dd && dd.nextElementSibling && dd.nextElementSibling.textContent !== '–';
    }, { timeout: 60000 });
    const started = await page.evaluate(() =>
      [...document.querySelectorAll('dt')].find((d) => d.textContent === 'Started').nextElementSibling.textContent);
    check(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} [+-]\d{2}:\d{2}$/.test(started),
      `the execution page shows its times with their zone's offset (${started})`);
    await narrow.goto(ADMIN + '/#/schedule/nightly-berlin', { waitUntil: 'networkidle0' });
    await narrow.waitForSelector('#next-firings tr[data-next-firing]');
    const swidth = await narrow.evaluate(() => document.documentElement.scrollWidth);
    check(swidth <= 391, `at 390 px wide the schedule page does not overflow (${swidth} px)`);

    /* 9. Force unlock from the locks page, with a reason. */
    await page.goto(ADMIN + '/#/locks', { waitUntil: 'networkidle0' });
    /* (The name has no quote or backslash: it goes into the selector as it is.) */
    const row = await page.waitForSelector(`tr[data-lock="${LOCK}"]`);
    check(row !== null, 'the held lock is listed, its name as text');
    check(await page.$$eval('main b', (l) => l.length) === 0, 'no element made from the lock name');
    const sel = await page.evaluateHandle((name) =>
      [...document.querySelectorAll('tr[data-lock]')].find((r) => r.dataset.lock === name), LOCK);
    const reason = await sel.$('input.reason');
    await reason.type('host ops-3 is gone');
    const unlock = await sel.$('button[data-action="unlock"]');
    await unlock.click();
    await unlock.click();
    await page.waitForFunction((name) => {
      const r = [...document.querySelectorAll('#audit tbody tr')].find((t) => t.cells[1].textContent === name);
      return r && r.cells[2].textContent === 'FORCE_UNLOCKED' && r.cells[4].textContent.includes('host ops-3 is gone');
    }, { timeout: 10000 }, LOCK);
    check(true, 'unlock with a reason: the audit trail shows FORCE_UNLOCKED with the reason');
    /* Held locks by default: the released one leaves the list... */
    await page.waitForFunction((name) => ![...document.querySelectorAll('tr[data-lock]')].some((t) => t.dataset.lock === name),
      { timeout: 10000 }, LOCK);
    check(await page.$$eval('#locks tr[data-lock]', (l) => l.every((r) => !r.textContent.includes('released'))),
      'the locks page shows held locks only by default');
    check((await text(page, '#locks-hidden')).includes('recently released not shown'), 'and says how many released ones it hides');
    /* ...and shows, released, behind the filter. */
    await page.select('#locks-show', 'recent');
    await page.waitForFunction((name) => {
      const r = [...document.querySelectorAll('tr[data-lock]')].find((t) => t.dataset.lock === name);
      return r && r.textContent.includes('released');
    }, { timeout: 10000 }, LOCK);
    check(true, 'the released lock shows, released, behind the filter');
    await page.select('#locks-show', 'all');
    await page.waitForFunction(() => location.hash.includes('show=all') &&
      [...document.querySelectorAll('tr[data-lock]')].some((t) => t.textContent.includes('released')), { timeout: 10000 });
    check(true, 'the whole history is behind the filter too');

    for (const p of [page, ro, narrow]) {
      const v = await cspViolations(p);
      if (v.length) problems.push('CSP violations: ' + v.join('; '));
    }
  } finally {
    await browser.close();
  }
  check(problems.length === 0, 'no dialog, page error, console error or CSP violation' +
    (problems.length ? ':\n  ' + problems.join('\n  ') : ''));
  console.log('1..' + checks);
}

main().catch((e) => {
  console.error('not ok - ' + (e && e.stack ? e.stack : e));
  if (problems.length) console.error('problems seen:\n  ' + problems.join('\n  '));
  process.exit(1);
});
