/*
 * The cbatch console: a single page over the JSON API (/api/v1/...), hash
 * routes, no framework and no build step. Every value from the repository
 * (job parameters, messages, lock names are user input) goes into the page
 * as text: elements are made with createElement / createElementNS and
 * filled with textContent, never with innerHTML.
 *
 * Routes: #/ jobs, #/executions?job=&status=&before=, #/execution/ID,
 * #/job/NAME (parameters, launch form, history chart),
 * #/locks?show=held|recent|all&after=&lock=&execution=&before= (locks and the
 * audit trail), #/schedules, #/schedule/NAME?before= (next firings, history).
 */
'use strict';

(function () {
  const RUNNING = ['STARTING', 'STARTED', 'STOPPING'];
  const STATUSES = ['STARTING', 'STARTED', 'STOPPING', 'STOPPED', 'COMPLETED', 'FAILED',
    'ABANDONED', 'UNKNOWN'];
  const SVG = 'http://www.w3.org/2000/svg';
  const TOKEN_KEY = 'cbatch.adminToken';

  let info = null;       /* /api/v1/info: read_only decides whether actions show */
  let timers = [];       /* the current page's polls, cleared on navigation */
  let generation = 0;    /* a page's late answers are dropped once it is left */

  /* ---- DOM helpers (text only) ------------------------------------------ */

  /* el('td', {class: 'num'}, 'text', childNode, ...): strings become text nodes. */
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else if (k === 'text') e.textContent = String(v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    append(e, kids);
    return e;
  }

  function append(parent, kids) {
    for (const k of kids.flat()) {
      if (k === null || k === undefined || k === false) continue;
      parent.appendChild(typeof k === 'object' ? k : document.createTextNode(String(k)));
    }
    return parent;
  }

  function svg(tag, attrs, ...kids) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    for (const k of kids) e.appendChild(typeof k === 'object' ? k : document.createTextNode(String(k)));
    return e;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }

  function link(href, text, attrs) {
    return el('a', Object.assign({ href: href }, attrs || {}), text);
  }

  function badge(status, extra) {
    return el('span', { class: 'badge st-' + status, 'data-status': status }, extra || status);
  }

  function statusBadge(e) {
    if (e.owner_lost) return el('span', {}, badge(e.status), ' ', badge('LOST', 'owner lost'));
    return badge(e.status);
  }

  /* ---- formatting ---------------------------------------------------------- */

  function fmtTime(s) {
    if (!s) return '–';
    const d = new Date(s);
    if (isNaN(d)) return String(s);
    const p = (n) => String(n).padStart(2, '0');
    return d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + ' ' +
      p(d.getHours()) + ':' + p(d.getMinutes()) + ':' + p(d.getSeconds());
  }

  function fmtDuration(sec) {
    if (sec === null || sec === undefined || isNaN(sec)) return '–';
    sec = Number(sec);
    if (sec < 0) return '-' + fmtDuration(-sec);
    if (sec < 10) return sec.toFixed(2) + ' s';
    if (sec < 60) return sec.toFixed(1) + ' s';
    const h = Math.floor(sec / 3600), m = Math.floor((sec % 3600) / 60), s = Math.floor(sec % 60);
    return h ? h + ' h ' + m + ' min' : m + ' min ' + s + ' s';
  }

  function fmtNum(n) {
    if (n === null || n === undefined) return '–';
    return Number(n).toLocaleString('en-US', { maximumFractionDigits: 1 });
  }

  /* ---- the API --------------------------------------------------------------- */

  async function api(path) {
    const r = await fetch(path, { headers: { Accept: 'application/json' }, cache: 'no-store' });
    let doc = null;
    try { doc = await r.json(); } catch (e) { doc = null; }
    if (!r.ok) {
      const msg = doc && doc.error ? doc.error.message : r.status + ' ' + r.statusText;
      throw new Error(msg);
    }
    return doc;
  }

  function token() {
    try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch (e) { return ''; }
  }

  /* An action: POST with the token; its answer or an Error with the server's message. */
  async function act(path, body) {
    const r = await fetch(path, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + token() },
      body: JSON.stringify(body || {}),
      cache: 'no-store',
    });
    let doc = null;
    try { doc = await r.json(); } catch (e) { doc = null; }
    if (!r.ok) throw new Error(doc && doc.error ? doc.error.message : String(r.status));
    return doc;
  }

  function notice(text, ok) {
    const n = document.getElementById('notice');
    n.textContent = text || '';
    n.className = ok ? 'notice ok' : 'notice';
    n.hidden = !text;
  }

  function canAct() {
    return info && info.read_only === false;
  }

  /* A button that acts on the second click (the first arms it for 4 s):
   * no confirm() dialog, and no stop by a stray click. */
  function actionButton(label, cls, run) {
    let armed = null;
    const b = el('button', { class: cls || '', type: 'button', 'data-action': label.toLowerCase() }, label);
    b.addEventListener('click', async () => {
      if (!armed) {
        b.classList.add('armed');
        b.textContent = 'Confirm ' + label.toLowerCase();
        armed = setTimeout(() => { armed = null; b.classList.remove('armed'); b.textContent = label; }, 4000);
        return;
      }
      clearTimeout(armed);
      armed = null;
      b.classList.remove('armed');
      b.textContent = label;
      if (!token()) { notice('Type the admin token in the field at the top first.'); return; }
      b.disabled = true;
      try {
        await run();
      } catch (e) {
        notice(label + ' refused: ' + e.message);
      } finally {
        b.disabled = false;
      }
    });
    return b;
  }

  /* ---- the header: read-only, or the token field ---------------------------- */

  function renderMode() {
    const m = clear(document.getElementById('mode'));
    if (!info) return;
    if (info.read_only) {
      m.appendChild(el('span', { class: 'badge', id: 'read-only' }, 'read-only'));
      m.appendChild(el('span', { class: 'muted-on-accent' }, 'actions need serve --admin-token-file'));
      return;
    }
    const input = el('input', {
      id: 'token', type: 'password', placeholder: 'admin token', autocomplete: 'off',
      'aria-label': 'admin token',
    });
    input.value = token();
    input.addEventListener('change', () => {
      try { sessionStorage.setItem(TOKEN_KEY, input.value.trim()); } catch (e) { /* private mode */ }
    });
    m.appendChild(el('span', { class: 'badge' }, 'actions enabled'));
    /* In a form of its own (a password field wants one); it never submits. */
    m.appendChild(el('form', { onsubmit: (ev) => { ev.preventDefault(); input.dispatchEvent(new Event('change')); } },
      el('input', { type: 'text', name: 'username', autocomplete: 'username', value: 'admin', hidden: true }), input));
  }

  function renderFooter() {
    const f = clear(document.getElementById('footer'));
    if (!info) return;
    append(f, ['cbatch ' + info.version + ' · schema ' + (info.schema_version === null ? '?' : info.schema_version) +
      ' (expects ' + info.schema_expected + ')' +
      (info.database_error ? ' · database: ' + info.database_error : '')]);
  }

  /* ---- pages ------------------------------------------------------------------ */

  function every(ms, fn) {
    const g = generation;
    const t = setInterval(() => { if (g === generation) fn(); }, ms);
    timers.push(t);
  }

  function alive(g) { return g === generation; }

  /* Jobs: last status, duration, next scheduled firing; refreshed every 5 s. */
  function pageJobs(main) {
    const g = generation;
    const body = el('tbody');
    append(main, [el('h1', {}, 'Jobs'), el('div', { class: 'card' }, el('table', { id: 'jobs' },
      el('thead', {}, el('tr', {}, el('th', {}, 'Job'), el('th', {}, 'Last status'),
        el('th', { class: 'hide-narrow' }, 'Last start'), el('th', { class: 'num' }, 'Duration'),
        el('th', {}, 'Next firing'), el('th', { class: 'num hide-narrow' }, 'Executions'))),
      body))]);
    async function load() {
      const d = await api('/api/v1/jobs');
      if (!alive(g)) return;
      clear(body);
      for (const j of d.jobs) {
        const last = j.last_execution;
        body.appendChild(el('tr', { 'data-job': j.job_name },
          el('td', { class: 'wrap' }, link('#/job/' + encodeURIComponent(j.job_name), j.job_name)),
          el('td', {}, last ? link('#/execution/' + last.job_execution_id, statusBadge(last)) : el('span', { class: 'muted' }, 'never ran')),
          el('td', { class: 'hide-narrow' }, last ? fmtTime(last.start_time) : '–'),
          el('td', { class: 'num' }, last ? fmtDuration(last.duration_seconds) : '–'),
          el('td', { 'data-next': j.schedules_paused ? 'paused' : '' }, j.next_fire_time ? fmtTime(j.next_fire_time) :
            j.schedules_paused ? el('span', { class: 'badge' }, 'paused') : '–'),
          el('td', { class: 'num hide-narrow' }, link('#/executions?job=' + encodeURIComponent(j.job_name), fmtNum(j.execution_count)))));
      }
    }
    every(5000, () => load().catch((e) => notice(e.message)));
    return load();
  }

  /* Executions: filters (job, status), keyset paging; the first page refreshes every 2 s. */
  function pageExecutions(main, q) {
    const g = generation;
    const job = q.get('job') || '', status = q.get('status') || '', before = q.get('before') || '';
    const jobSel = el('select', { id: 'filter-job', 'aria-label': 'job' }, el('option', { value: '' }, 'all jobs'));
    const stSel = el('select', { id: 'filter-status', 'aria-label': 'status' }, el('option', { value: '' }, 'any status'));
    for (const s of STATUSES) stSel.appendChild(el('option', { value: s, selected: s === status }, s));
    const go = (extra) => {
      const p = new URLSearchParams();
      if (jobSel.value) p.set('job', jobSel.value);
      if (stSel.value) p.set('status', stSel.value);
      for (const [k, v] of Object.entries(extra || {})) p.set(k, v);
      location.hash = '#/executions' + (p.toString() ? '?' + p.toString() : '');
    };
    jobSel.addEventListener('change', () => go());
    stSel.addEventListener('change', () => go());
    const body = el('tbody');
    const pager = el('div', { class: 'pager' });
    append(main, [el('h1', {}, 'Executions'),
      el('div', { class: 'filters' }, el('label', {}, 'Job', jobSel), el('label', {}, 'Status', stSel)),
      el('div', { class: 'card' }, el('table', { id: 'executions' },
        el('thead', {}, el('tr', {}, el('th', { class: 'num' }, 'ID'), el('th', {}, 'Job'),
          el('th', {}, 'Status'), el('th', { class: 'hide-narrow' }, 'Parameters'),
          el('th', { class: 'hide-narrow' }, 'Start'), el('th', { class: 'num' }, 'Duration'),
          el('th', { class: 'num' }, 'Items'), el('th', { class: 'hide-narrow' }, 'Exit message'))),
        body), pager)]);
    api('/api/v1/jobs').then((d) => {
      if (!alive(g)) return;
      const names = d.jobs.map((j) => j.job_name);
      if (job && !names.includes(job)) names.push(job);
      for (const n of names) jobSel.appendChild(el('option', { value: n, selected: n === job }, n));
    }).catch((e) => notice(e.message));
    async function load() {
      const p = new URLSearchParams({ limit: '25' });
      if (job) p.set('job', job);
      if (status) p.set('status', status);
      if (before) p.set('before', before);
      const d = await api('/api/v1/executions?' + p.toString());
      if (!alive(g)) return;
      clear(body);
      if (!d.executions.length)
        body.appendChild(el('tr', {}, el('td', { colspan: 8, class: 'muted' }, 'no executions')));
      for (const e of d.executions) {
        const params = Object.entries(e.parameters || {}).map(([k, v]) => k + '=' + v.value).join(', ');
        const parts = e.partitions ? ' (' + e.partitions.completed + '/' + e.partitions.total + ' partitions done)' : '';
        body.appendChild(el('tr', { 'data-execution': e.job_execution_id },
          el('td', { class: 'num' }, link('#/execution/' + e.job_execution_id, String(e.job_execution_id))),
          el('td', { class: 'wrap' }, link('#/job/' + encodeURIComponent(e.job_name), e.job_name)),
          el('td', {}, statusBadge(e), parts),
          el('td', { class: 'wrap hide-narrow mono' }, params),
          el('td', { class: 'hide-narrow' }, fmtTime(e.start_time)),
          el('td', { class: 'num' }, fmtDuration(e.duration_seconds)),
          el('td', { class: 'num', 'data-items': e.items_read }, fmtNum(e.items_read)),
          el('td', { class: 'wrap hide-narrow' }, e.exit_message || '')));
      }
      clear(pager);
      if (before) pager.appendChild(el('button', { type: 'button', onclick: () => go() }, 'Newest'));
      if (d.next_before)
        pager.appendChild(el('button', { type: 'button', id: 'older', onclick: () => go({ before: d.next_before }) }, 'Older'));
    }
    if (!before) every(2000, () => load().catch((e) => notice(e.message)));
    return load();
  }

  /* One execution: parameters, steps, partitions, exit messages; running
   * steps polled every second (items, items/s, progress and ETA where the
   * partitions give a total). */
  function pageExecution(main, id) {
    const g = generation;
    const head = el('div');
    const live = el('div', { id: 'live' });
    const acts = el('div', { class: 'actions', id: 'actions' });
    const facts = el('div', { class: 'card' });
    const params = el('div', { class: 'card' });
    const steps = el('div', { class: 'card' });
    const skips = el('div', { id: 'skips' });
    const lineage = el('div', { id: 'lineage' });
    append(main, [head, acts, live, el('h2', {}, 'Execution'), facts, lineage, el('h2', {}, 'Parameters'), params,
      el('h2', {}, 'Steps'), steps, skips]);
    const seen = {}; /* step id -> [time, items] of the previous poll, for a measured rate */
    let lastStatus = null;

    function renderActions(e) {
      clear(acts);
      if (!canAct()) {
        if (info && info.read_only) acts.appendChild(el('span', { class: 'muted' }, 'read-only console: no actions'));
        return;
      }
      const running = RUNNING.includes(e.status);
      const base = '/api/v1/executions/' + e.job_execution_id;
      const after = async (p, ok) => { const d = await act(base + p); notice(ok(d), true); await load(); };
      if (running && e.status !== 'STOPPING')
        acts.appendChild(actionButton('Stop', 'danger', () => after('/stop', (d) => 'Execution ' + e.job_execution_id + ': ' + d.status)));
      if (!running || e.owner_lost) {
        if (e.status !== 'COMPLETED' && e.status !== 'ABANDONED') {
          acts.appendChild(actionButton('Restart', '', () => after('/restart', (d) => 'Restart started (pid ' + d.pid + ')')));
          acts.appendChild(actionButton('Abandon', 'danger', () => after('/abandon', () => 'Execution ' + e.job_execution_id + ' abandoned')));
        }
      }
    }

    function stepRows(list, now) {
      const rows = [];
      for (const s of list) {
        const p = s.progress;
        let rate = p && p.items_per_second !== null ? p.items_per_second : null;
        const prev = seen[s.step_execution_id];
        if (p && prev && now > prev[0] && p.items >= prev[1]) {
          const r = (p.items - prev[1]) / ((now - prev[0]) / 1000);
          if (r > 0) rate = r;
        }
        if (p) seen[s.step_execution_id] = [now, p.items];
        const items = p ? p.items : s.read_count;
        rows.push(el('tr', { 'data-step': s.step_execution_id },
          el('td', { class: 'wrap' }, s.step_name),
          el('td', {}, badge(s.status)),
          el('td', { class: 'num', 'data-items': items }, fmtNum(items)),
          el('td', { class: 'num' }, fmtNum(s.write_count)),
          el('td', { class: 'num hide-narrow' }, fmtNum(s.commit_count)),
          el('td', { class: 'num hide-narrow' }, fmtNum((s.read_skip_count || 0) + (s.process_skip_count || 0) + (s.write_skip_count || 0))),
          el('td', { class: 'num' }, rate !== null ? fmtNum(rate) + '/s' : '–'),
          el('td', { class: 'num' }, fmtDuration(s.duration_seconds)),
          el('td', { class: 'wrap hide-narrow' }, s.exit_message || '')));
      }
      return rows;
    }

    /* A partition: its worker, claims and takeovers in columns of their own. */
    function partRows(list, now) {
      return list.map((x) => {
        const p = x.progress;
        let rate = p && p.items_per_second !== null ? p.items_per_second :
          x.items_per_second !== undefined ? x.items_per_second : null;
        const prev = seen[x.step_execution_id];
        if (p && prev && now > prev[0] && p.items >= prev[1]) {
          const r = (p.items - prev[1]) / ((now - prev[0]) / 1000);
          if (r > 0) rate = r;
        }
        if (p) seen[x.step_execution_id] = [now, p.items];
        const items = p ? p.items : x.read_count;
        const takeovers = x.takeovers || [];
        const lease = RUNNING.includes(x.status) && x.lease_left_seconds !== null && x.lease_left_seconds !== undefined ?
          (x.lease_left_seconds > 0 ? fmtDuration(x.lease_left_seconds) : 'expired') : '–';
        return el('tr', { 'data-partition': x.partition_index, 'data-step': x.step_execution_id },
          el('td', { class: 'num' }, String(x.partition_index)),
          el('td', {}, badge(x.status)),
          el('td', { class: 'mono wrap', 'data-worker': x.worker || '' }, x.worker || '–'),
          el('td', { class: 'num', 'data-claims': x.claim_count }, fmtNum(x.claim_count)),
          el('td', { class: 'wrap', 'data-takeovers': takeovers.length },
            takeovers.length ? takeovers.map((t) => el('div', { title: t.detail || '', 'data-takeover': t.outcome },
              badge('STOPPING', t.reason), ' ', fmtTime(t.event_time), ' → ', el('span', { class: 'mono' }, t.owner_id))) : '–'),
          el('td', { class: 'num' + (x.lease_left_seconds <= 0 && RUNNING.includes(x.status) ? ' expired' : ''), 'data-lease-left': x.lease_left_seconds === null ? '' : x.lease_left_seconds }, lease),
          el('td', { class: 'num', 'data-items': items }, fmtNum(items)),
          el('td', { class: 'num' }, fmtNum(x.write_count)),
          el('td', { class: 'num' }, rate !== null ? fmtNum(rate) + '/s' : '–'),
          el('td', { class: 'num' }, fmtDuration(x.duration_seconds)),
          el('td', { class: 'wrap hide-narrow' }, x.exit_message || ''));
      });
    }

    function partTable(rows) {
      return el('table', { class: 'partitions' }, el('thead', {}, el('tr', {}, el('th', { class: 'num' }, 'Partition'),
        el('th', {}, 'Status'), el('th', {}, 'Worker'), el('th', { class: 'num' }, 'Claims'), el('th', {}, 'Takeovers'),
        el('th', { class: 'num' }, 'Lease left'), el('th', { class: 'num' }, 'Read'), el('th', { class: 'num' }, 'Written'),
        el('th', { class: 'num' }, 'Items/s'), el('th', { class: 'num' }, 'Duration'),
        el('th', { class: 'hide-narrow' }, 'Exit message'))), el('tbody', {}, rows));
    }

    /* A restart: the earlier executions of its instance and their counts. */
    function renderLineage(e) {
      clear(lineage);
      const l = e.lineage;
      if (!l || l.execution_count < 2) return;
      const rows = l.executions.map((x) => el('tr', { 'data-lineage': x.job_execution_id, class: x.current ? 'current' : '' },
        el('td', { class: 'num' }, x.current ? String(x.job_execution_id) + ' (this)' : link('#/execution/' + x.job_execution_id, String(x.job_execution_id))),
        el('td', {}, badge(x.status)),
        el('td', { class: 'hide-narrow' }, fmtTime(x.start_time)),
        el('td', { class: 'num' }, fmtNum(x.items_read)),
        el('td', { class: 'num' }, fmtNum(x.items_written)),
        el('td', { class: 'num', 'data-cumulative': x.cumulative_items_read }, fmtNum(x.cumulative_items_read))));
      append(lineage, [el('h2', {}, 'Lineage of instance ' + l.job_instance_id),
        el('div', { class: 'card' },
          el('p', { id: 'continued-from', 'data-items': l.continued_from_items }, l.continued_from_items > 0 ?
            'This execution continued from ' + fmtNum(l.continued_from_items) + ' items read by earlier executions; ' +
            fmtNum(l.cumulative_items_read) + ' in all with this one.' :
            'The earlier executions of this instance read no items; this one read ' + fmtNum(l.cumulative_items_read) + '.'),
          el('table', { id: 'lineage-table' }, el('thead', {}, el('tr', {}, el('th', { class: 'num' }, 'Execution'),
            el('th', {}, 'Status'), el('th', { class: 'hide-narrow' }, 'Start'), el('th', { class: 'num' }, 'Read'),
            el('th', { class: 'num' }, 'Written'), el('th', { class: 'num' }, 'Cumulative read'))), el('tbody', {}, rows)))]);
    }

    function table(rows) {
      return el('table', {}, el('thead', {}, el('tr', {}, el('th', {}, 'Step'), el('th', {}, 'Status'),
        el('th', { class: 'num' }, 'Read'), el('th', { class: 'num' }, 'Written'),
        el('th', { class: 'num hide-narrow' }, 'Commits'), el('th', { class: 'num hide-narrow' }, 'Skips'),
        el('th', { class: 'num' }, 'Items/s'), el('th', { class: 'num' }, 'Duration'),
        el('th', { class: 'hide-narrow' }, 'Exit message'))), el('tbody', {}, rows));
    }

    function renderLive(e, now) {
      clear(live);
      if (!RUNNING.includes(e.status)) return;
      for (const s of e.steps || []) {
        if (!s.progress && !(s.partitions || []).some((x) => x.progress)) continue;
        const parts = s.partitions || [];
        let items = s.progress ? s.progress.items : 0, rate = null;
        const prev = seen['live' + s.step_execution_id];
        if (prev && now > prev[0] && items >= prev[1]) rate = (items - prev[1]) / ((now - prev[0]) / 1000);
        if (rate === null && s.progress) rate = s.progress.items_per_second;
        seen['live' + s.step_execution_id] = [now, items];
        const box = el('div', { class: 'card live', 'data-live-step': s.step_execution_id },
          el('div', {}, el('div', { class: 'muted' }, s.step_name), badge(s.status)),
          el('div', {}, el('div', { class: 'muted' }, 'items'), el('span', { class: 'big', id: 'live-items' }, fmtNum(items))),
          el('div', {}, el('div', { class: 'muted' }, 'items/s'), el('span', { class: 'big', id: 'live-rate' }, rate !== null ? fmtNum(rate) : '–')),
          el('div', {}, el('div', { class: 'muted' }, 'elapsed'), el('span', { class: 'big' }, fmtDuration(s.duration_seconds))));
        /* A total is known for a partitioned step: its partitions. */
        if (parts.length) {
          const done = parts.filter((x) => x.status === 'COMPLETED').length;
          const f = done / parts.length;
          const eta = f > 0 && f < 1 ? s.duration_seconds * (1 - f) / f : null;
          box.appendChild(el('div', {}, el('div', { class: 'muted' }, done + ' / ' + parts.length + ' partitions'),
            el('progress', { max: parts.length, value: done })));
          box.appendChild(el('div', {}, el('div', { class: 'muted' }, 'ETA'), el('span', { class: 'big' }, eta !== null ? fmtDuration(eta) : '–')));
        }
        live.appendChild(box);
      }
    }

    async function load() {
      const e = await api('/api/v1/executions/' + encodeURIComponent(id));
      if (!alive(g)) return;
      const now = Date.now();
      clear(head).appendChild(el('h1', {}, 'Execution ' + e.job_execution_id + ' · ', link('#/job/' + encodeURIComponent(e.job_name), e.job_name), ' ', statusBadge(e)));
      if (e.status !== lastStatus) renderActions(e);
      lastStatus = e.status;
      renderLive(e, now);
      clear(facts).appendChild(el('dl', { class: 'kv' },
        el('dt', {}, 'Status'), el('dd', { id: 'exec-status' }, e.status + ' (exit ' + e.exit_code + ')'),
        el('dt', {}, 'Exit message'), el('dd', { class: 'wrap' }, e.exit_message || '–'),
        el('dt', {}, 'Started'), el('dd', {}, fmtTime(e.start_time)),
        el('dt', {}, 'Ended'), el('dd', {}, fmtTime(e.end_time)),
        el('dt', {}, 'Duration'), el('dd', {}, fmtDuration(e.duration_seconds)),
        el('dt', {}, 'Instance'), el('dd', { class: 'mono' }, e.job_instance_id + ' · key ' + e.job_key),
        el('dt', {}, 'Restart of'), el('dd', {}, e.restart_of ? link('#/execution/' + e.restart_of, String(e.restart_of)) : '–'),
        el('dt', {}, 'Owner'), el('dd', { class: 'mono wrap' }, (e.owner_id || '–') + (e.owner_lost ? ' (lost)' : '')),
        el('dt', {}, 'Lock'), el('dd', { class: 'mono wrap' }, (e.lock_name || '–') + ' · token ' + e.fencing_token + ' · ',
          link('#/locks?execution=' + e.job_execution_id, 'lock audit of this execution', { id: 'lock-audit-link' }))));
      renderLineage(e);
      const prow = Object.entries(e.parameters || {}).map(([k, v]) => el('tr', {},
        el('td', { class: 'mono wrap' }, k), el('td', { class: 'muted' }, v.type + (v.identifying ? '' : ' (non-identifying)')),
        el('td', { class: 'mono wrap', 'data-param': k }, v.value)));
      clear(params).appendChild(prow.length ? el('table', { class: 'params' }, el('tbody', {}, prow)) : el('span', { class: 'muted' }, 'none'));
      clear(steps);
      const list = e.steps || [];
      if (!list.length) steps.appendChild(el('span', { class: 'muted' }, 'no steps yet'));
      else steps.appendChild(table(stepRows(list, now)));
      for (const s of list) {
        if (!s.partitions) continue;
        steps.appendChild(el('h2', {}, 'Partitions of ' + s.step_name));
        steps.appendChild(partTable(partRows(s.partitions, now)));
      }
      /* The skip messages the steps kept (the newest few per step). */
      const skipped = [];
      for (const s of list)
        for (const k of (s.context && Array.isArray(s.context.skipped) ? s.context.skipped : []))
          skipped.push(el('tr', {}, el('td', { class: 'wrap' }, s.step_name), el('td', {}, String(k.fault || '')),
            el('td', { class: 'wrap', 'data-skip': '' }, String(k.message || ''))));
      clear(skips);
      if (skipped.length)
        append(skips, [el('h2', {}, 'Skipped items'), el('div', { class: 'card' }, el('table', {},
          el('thead', {}, el('tr', {}, el('th', {}, 'Step'), el('th', {}, 'Fault'), el('th', {}, 'Message'))),
          el('tbody', {}, skipped)))]);
      return e;
    }
    every(1000, () => load().catch((err) => notice(err.message)));
    return load();
  }

  /* A job's history: duration and items/s of its last executions, as SVG. */
  function pageJob(main, name) {
    const g = generation;
    const n = 30;
    const charts = el('div');
    const declared = el('div', { class: 'card', id: 'job-params' }, el('span', { class: 'muted' }, 'Loading…'));
    append(main, [el('h1', {}, 'Job ', name), el('p', {}, link('#/executions?job=' + encodeURIComponent(name), 'all executions of this job')),
      el('h2', {}, 'Parameters'), declared, charts]);

    /* The declared parameters, and a form that launches a run with them
     * (the CLI's PARAM words: name:type=value; checked by the server as
     * `run` checks them). */
    api('/api/v1/jobs/' + encodeURIComponent(name)).then((d) => {
      if (!alive(g)) return;
      clear(declared);
      const inputs = [];
      const rows = d.parameters.map((p) => {
        const input = el('input', { type: 'text', class: 'param-input', 'data-param-input': p.name,
          'aria-label': p.name, placeholder: p.type + (p.required ? ' (required)' : '') });
        inputs.push([p, input]);
        return el('tr', { 'data-declared': p.name }, el('td', { class: 'mono wrap' }, p.name),
          el('td', {}, p.type), el('td', {}, p.identifying ? 'identifying' : 'non-identifying'),
          el('td', {}, p.required ? 'required' : 'optional'), canAct() ? el('td', {}, input) : null);
      });
      if (rows.length)
        declared.appendChild(el('table', { class: 'params' }, el('thead', {}, el('tr', {}, el('th', {}, 'Name'),
          el('th', {}, 'Type'), el('th', {}, 'Identifying'), el('th', {}, 'Required'), canAct() ? el('th', {}, 'Value') : null)),
        el('tbody', {}, rows)));
      else declared.appendChild(el('p', { class: 'muted' }, 'declares no parameters (any are accepted)'));
      if (!canAct()) return;
      const extra = el('input', { type: 'text', id: 'launch-extra', 'aria-label': 'more parameters',
        placeholder: 'more: name:type=value -other=value' });
      const form = el('form', { id: 'launch', class: 'actions' }, el('label', {}, 'More parameters ', extra),
        el('button', { type: 'submit', 'data-action': 'launch' }, 'Launch'));
      form.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        if (!token()) { notice('Type the admin token in the field at the top first.'); return; }
        const params = [];
        for (const [p, input] of inputs)
          if (input.value.trim() !== '') params.push(p.name + ':' + p.type + '=' + input.value.trim());
        for (const w of extra.value.trim().split(/\s+/)) if (w) params.push(w);
        try {
          const r = await act('/api/v1/jobs/' + encodeURIComponent(name) + '/executions', { params: params });
          notice('Run of ' + name + ' started (pid ' + r.pid + ')', true);
          await load();
        } catch (e) {
          notice('Launch refused: ' + e.message);
        }
      });
      declared.appendChild(form);
    }).catch((e) => { clear(declared).appendChild(el('span', { class: 'muted' }, e.message)); });

    function chart(title, points, unit, id) {
      const W = 720, H = 220, L = 56, R = 12, T = 14, B = 34;
      const box = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, class: 'chart', id: id, role: 'img' });
      box.appendChild(svg('title', {}, title));
      const max = Math.max(1e-9, ...points.map((p) => p.v || 0));
      const step = (W - L - R) / Math.max(1, points.length);
      box.appendChild(svg('line', { x1: L, y1: H - B, x2: W - R, y2: H - B, class: 'axis' }));
      box.appendChild(svg('line', { x1: L, y1: T, x2: L, y2: H - B, class: 'axis' }));
      for (const f of [0, 0.5, 1]) {
        const y = H - B - f * (H - B - T);
        box.appendChild(svg('text', { x: L - 6, y: y + 4, 'text-anchor': 'end' }, fmtNum(max * f)));
      }
      points.forEach((p, i) => {
        const h = (p.v || 0) / max * (H - B - T);
        const r = svg('rect', { x: L + i * step + step * 0.15, y: H - B - h, width: Math.max(1, step * 0.7), height: Math.max(0, h),
          class: 'bar' + (p.failed ? ' failed' : '') });
        r.appendChild(svg('title', {}, '#' + p.id + ': ' + fmtNum(p.v) + ' ' + unit + ' (' + p.status + ')'));
        box.appendChild(r);
        if (points.length <= 15 || i % Math.ceil(points.length / 15) === 0)
          box.appendChild(svg('text', { x: L + i * step + step / 2, y: H - B + 14, 'text-anchor': 'middle' }, '#' + p.id));
      });
      box.appendChild(svg('text', { x: L, y: H - 4 }, unit + ' · oldest left, newest right'));
      return el('div', { class: 'card' }, el('h2', {}, title), box);
    }

    async function load() {
      const d = await api('/api/v1/executions?job=' + encodeURIComponent(name) + '&limit=' + n);
      if (!alive(g)) return;
      const ex = d.executions.slice().reverse();
      clear(charts);
      if (!ex.length) { charts.appendChild(el('p', { class: 'muted' }, 'no executions yet')); return; }
      const bad = (e) => ['FAILED', 'ABANDONED', 'UNKNOWN', 'STOPPED'].includes(e.status);
      charts.appendChild(chart('Duration of the last ' + ex.length + ' executions',
        ex.map((e) => ({ id: e.job_execution_id, v: e.duration_seconds, status: e.status, failed: bad(e) })), 'seconds', 'chart-duration'));
      charts.appendChild(chart('Items per second',
        ex.map((e) => ({ id: e.job_execution_id, v: e.duration_seconds > 0 ? (e.items_read || 0) / e.duration_seconds : 0,
          status: e.status, failed: bad(e) })), 'items/s', 'chart-rate'));
    }
    every(10000, () => load().catch((e) => notice(e.message)));
    return load();
  }

  /* Locks with the lease counting down (every second, from the last fetch);
   * the audit trail with paging. */
  function pageLocks(main, q) {
    const g = generation;
    const before = q.get('before') || '', after = q.get('after') || '';
    const alock = q.get('lock') || '', aexec = q.get('execution') || '';
    const show = ['recent', 'all'].includes(q.get('show')) ? q.get('show') : 'held';
    const lbody = el('tbody'), abody = el('tbody'), pager = el('div', { class: 'pager' });
    const lpager = el('div', { class: 'pager' }), hidden = el('p', { class: 'muted', id: 'locks-hidden', hidden: true });
    /* This page with some of its parameters changed ('' drops one). */
    const here = (changes) => {
      const p = new URLSearchParams(q);
      for (const [k, v] of Object.entries(changes)) {
        if (v === '' || v === null || v === undefined) p.delete(k);
        else p.set(k, v);
      }
      return '#/locks' + (p.toString() ? '?' + p.toString() : '');
    };
    /* Held locks by default; the released ones (recent, or the whole history) behind this filter. */
    const showSel = el('select', { id: 'locks-show', 'aria-label': 'which locks' },
      el('option', { value: 'held', selected: show === 'held' }, 'held'),
      el('option', { value: 'recent', selected: show === 'recent' }, 'held and recently released'),
      el('option', { value: 'all', selected: show === 'all' }, 'all, with released ones (history)'));
    showSel.addEventListener('change', () => { location.hash = here({ show: showSel.value === 'held' ? '' : showSel.value, after: '' }); });
    /* The audit trail's filters: one lock, one execution (its own lock and its partitions'). */
    const lockIn = el('input', { id: 'audit-lock', type: 'text', value: alock, placeholder: 'lock name', 'aria-label': 'lock name' });
    const execIn = el('input', { id: 'audit-execution', type: 'text', inputmode: 'numeric', value: aexec, placeholder: 'execution id', 'aria-label': 'execution id' });
    const filters = el('form', { class: 'filters', id: 'audit-filters', onsubmit: (ev) => {
      ev.preventDefault();
      location.hash = here({ lock: lockIn.value.trim(), execution: execIn.value.trim(), before: '' });
    } },
    el('label', {}, 'Lock', lockIn), el('label', {}, 'Execution', execIn),
    el('button', { type: 'submit' }, 'Filter'),
    (alock || aexec) ? link(here({ lock: '', execution: '', before: '' }), 'all locks', { id: 'audit-unfilter' }) : null);
    append(main, [el('h1', {}, 'Locks'),
      el('div', { class: 'filters' }, el('label', {}, 'Show', showSel)),
      el('div', { class: 'card' }, el('table', { id: 'locks' }, el('thead', {}, el('tr', {},
        el('th', {}, 'Lock'), el('th', {}, 'State'), el('th', { class: 'num' }, 'Lease left'),
        el('th', { class: 'hide-narrow' }, 'Owner'), el('th', { class: 'num hide-narrow' }, 'Token'),
        el('th', {}, 'Execution'), el('th', {}, ''))), lbody), hidden, lpager),
      el('h2', {}, 'Audit trail' + (aexec ? ' of execution ' + aexec : '') + (alock ? ' of lock ' + alock : '')), filters,
      el('div', { class: 'card' }, el('table', { id: 'audit' }, el('thead', {}, el('tr', {},
        el('th', {}, 'Time'), el('th', {}, 'Lock'), el('th', {}, 'Outcome'),
        el('th', { class: 'hide-narrow' }, 'Owner'), el('th', { class: 'hide-narrow' }, 'Detail'))), abody), pager)]);
    let fetched = 0, leases = [];

    function tick() {
      const gone = (Date.now() - fetched) / 1000;
      for (const [cell, left] of leases) {
        const v = left - gone;
        cell.textContent = v > 0 ? fmtDuration(v) : 'expired';
        cell.classList.toggle('expired', v <= 0);
      }
    }

    /* A lock's name; a partition's lock also says what it runs (job, step, execution). */
    function lockName(l) {
      const x = l.partition;
      if (!x) return el('td', { class: 'mono wrap' }, l.lock_name);
      return el('td', { class: 'mono wrap' }, l.lock_name, el('div', { class: 'muted', 'data-partition-of': x.job_execution_id },
        link('#/job/' + encodeURIComponent(x.job_name), x.job_name), ' · ', x.step_name + ' partition ' + x.partition_index,
        ' · ', link('#/execution/' + x.job_execution_id, 'execution ' + x.job_execution_id)));
    }

    function unlockCell(l) {
      if (!canAct() || l.released) return el('td');
      const reason = el('input', { class: 'reason', type: 'text', placeholder: 'reason (required)', maxlength: 500, 'aria-label': 'reason' });
      const b = actionButton('Unlock', 'danger', async () => {
        if (!reason.value.trim()) throw new Error('a reason is required');
        await act('/api/v1/locks/' + encodeURIComponent(l.lock_name) + '/unlock', { reason: reason.value.trim() });
        notice('Lock "' + l.lock_name + '" released by force', true);
        await load();
      });
      return el('td', {}, el('div', { class: 'actions' }, reason, b));
    }

    async function load() {
      const lp = new URLSearchParams(show === 'all' ? { all: '1', limit: '100' } : { limit: '500' });
      if (after) lp.set('after', after);
      const [d, a] = await Promise.all([api('/api/v1/locks?' + lp.toString()),
        api('/api/v1/locks/audit?limit=50' + (before ? '&before=' + encodeURIComponent(before) : '') +
          (alock ? '&lock=' + encodeURIComponent(alock) : '') + (aexec ? '&execution=' + encodeURIComponent(aexec) : ''))]);
      if (!alive(g)) return;
      fetched = Date.now();
      leases = [];
      clear(lbody);
      /* The server lists them in natural order (ledger:2 before ledger:10). */
      const shown = show === 'held' ? d.locks.filter((l) => !l.released) : d.locks;
      if (!shown.length) lbody.appendChild(el('tr', {}, el('td', { colspan: 7, class: 'muted' }, show === 'held' ? 'no held locks' : 'no locks')));
      const nreleased = d.locks.length - shown.length;
      hidden.textContent = nreleased ? nreleased + ' recently released not shown (Show: held and recently released)' : '';
      hidden.hidden = !nreleased;
      clear(lpager);
      if (after) lpager.appendChild(link(here({ after: '' }), 'First'));
      if (d.next_after) lpager.appendChild(link(here({ after: d.next_after }), 'More', { id: 'locks-more' }));
      for (const l of shown) {
        const cell = el('td', { class: 'num', 'data-lease': l.lease_left_seconds }, '');
        if (!l.released) leases.push([cell, l.lease_left_seconds]);
        else cell.textContent = '–';
        lbody.appendChild(el('tr', { 'data-lock': l.lock_name },
          lockName(l),
          el('td', {}, l.released ? el('span', { class: 'badge' }, 'released') : el('span', { class: 'badge st-STARTED' }, 'held')),
          cell,
          el('td', { class: 'mono wrap hide-narrow' }, l.owner_id),
          el('td', { class: 'num hide-narrow' }, String(l.fencing_token)),
          el('td', {}, l.job_execution_id ? link('#/execution/' + l.job_execution_id, String(l.job_execution_id)) : '–'),
          unlockCell(l)));
      }
      tick();
      clear(abody);
      if (!a.audit.length) abody.appendChild(el('tr', {}, el('td', { colspan: 5, class: 'muted' }, 'no audit rows')));
      for (const x of a.audit) {
        abody.appendChild(el('tr', { 'data-audit': x.audit_id },
          el('td', {}, fmtTime(x.event_time)),
          lockName(x),
          el('td', {}, el('span', { class: 'badge' + (x.outcome === 'FORCE_UNLOCKED' || x.outcome === 'FENCED' ? ' st-FAILED' : '') }, x.outcome)),
          el('td', { class: 'mono wrap hide-narrow' }, x.owner_id),
          el('td', { class: 'wrap hide-narrow' }, x.detail || '')));
      }
      clear(pager);
      if (before) pager.appendChild(link(here({ before: '' }), 'Newest'));
      if (a.next_before) pager.appendChild(link(here({ before: a.next_before }), 'Older'));
    }
    every(1000, tick);
    every(5000, () => load().catch((e) => notice(e.message)));
    return load();
  }

  /* A time the API gave as ISO 8601 with its offset: shown as it is (the
   * schedule's own zone), its UTC on hover. */
  function zoned(local, utc) {
    if (!local) return el('span', {}, '–');
    return el('time', { datetime: utc || local, title: utc ? 'UTC ' + utc : '' }, local);
  }

  /* Schedules: each with its job, expression, zone, next firing, paused or not. */
  function pageSchedules(main) {
    const g = generation;
    const body = el('tbody');
    append(main, [el('h1', {}, 'Schedules'), el('div', { class: 'card' }, el('table', { id: 'schedules' },
      el('thead', {}, el('tr', {}, el('th', {}, 'Schedule'), el('th', {}, 'Job'), el('th', {}, 'Cron'),
        el('th', { class: 'hide-narrow' }, 'Zone'), el('th', {}, 'Next firing (UTC)'), el('th', {}, 'State'),
        el('th', { class: 'hide-narrow' }, 'Overlap'))), body))]);
    async function load() {
      const d = await api('/api/v1/schedules');
      if (!alive(g)) return;
      clear(body);
      if (!d.schedules.length) body.appendChild(el('tr', {}, el('td', { colspan: 7, class: 'muted' }, 'no schedules')));
      for (const s of d.schedules) {
        body.appendChild(el('tr', { 'data-schedule': s.name },
          el('td', { class: 'wrap' }, link('#/schedule/' + encodeURIComponent(s.name), s.name)),
          el('td', { class: 'wrap' }, link('#/job/' + encodeURIComponent(s.job), s.job)),
          el('td', { class: 'mono' }, s.cron),
          el('td', { class: 'hide-narrow' }, s.time_zone),
          el('td', {}, s.paused ? '–' : zoned(s.next_fire_time, s.next_fire_time)),
          el('td', {}, s.paused ? el('span', { class: 'badge st-STOPPED' }, 'paused') : el('span', { class: 'badge st-STARTED' }, 'active')),
          el('td', { class: 'hide-narrow' }, s.overlap_policy)));
      }
    }
    every(5000, () => load().catch((e) => notice(e.message)));
    return load();
  }

  /* One schedule: its settings, actions, next firings in its zone, history. */
  function pageSchedule(main, name, q) {
    const g = generation;
    const before = q.get('before') || '';
    const base = '/api/v1/schedules/' + encodeURIComponent(name);
    const head = el('div'), acts = el('div', { class: 'actions', id: 'actions' }), facts = el('div', { class: 'card' });
    const nextBody = el('tbody'), histBody = el('tbody'), pager = el('div', { class: 'pager' });
    append(main, [head, acts, el('h2', {}, 'Schedule'), facts,
      el('h2', {}, 'Next firings'), el('div', { class: 'card' }, el('table', { id: 'next-firings' },
        el('thead', {}, el('tr', {}, el('th', {}, 'In the schedule\'s zone'), el('th', {}, 'UTC'))), nextBody)),
      el('h2', {}, 'Firings'), el('div', { class: 'card' }, el('table', { id: 'firings' },
        el('thead', {}, el('tr', {}, el('th', {}, 'Instant (UTC)'), el('th', {}, 'Kind'), el('th', {}, 'Status'),
          el('th', {}, 'Execution'), el('th', { class: 'hide-narrow' }, 'Node'), el('th', { class: 'num hide-narrow' }, 'Exit'),
          el('th', { class: 'hide-narrow' }, 'Message'))), histBody), pager)]);
    let paused = null;

    function renderActions(s) {
      clear(acts);
      if (!canAct()) {
        if (info && info.read_only) acts.appendChild(el('span', { class: 'muted' }, 'read-only console: no actions'));
        return;
      }
      const after = async (p, ok) => { const d = await act(base + p); notice(ok(d), true); await load(); };
      if (s.paused) acts.appendChild(actionButton('Resume', '', () => after('/resume', () => 'Schedule ' + name + ' resumed')));
      else {
        acts.appendChild(actionButton('Pause', 'danger', () => after('/pause', () => 'Schedule ' + name + ' paused')));
        acts.appendChild(actionButton('Fire now', '', () => after('/fire', (d) => 'Fired now (firing ' + d.firing_id + ', ' + d.fire_time + '): ' + d.message)));
      }
    }

    async function load() {
      const [s, f] = await Promise.all([api(base),
        api(base + '/firings?limit=25' + (before ? '&before=' + encodeURIComponent(before) : ''))]);
      if (!alive(g)) return;
      clear(head).appendChild(el('h1', {}, 'Schedule ' + s.name + ' ', s.paused ? badge('STOPPED', 'paused') : badge('STARTED', 'active')));
      if (s.paused !== paused) renderActions(s);
      paused = s.paused;
      const counts = Object.entries(s.firings || {}).map(([k, v]) => k + ' ' + v).join(', ');
      clear(facts).appendChild(el('dl', { class: 'kv' },
        el('dt', {}, 'Job'), el('dd', {}, link('#/job/' + encodeURIComponent(s.job), s.job)),
        el('dt', {}, 'Cron'), el('dd', { class: 'mono' }, s.cron),
        el('dt', {}, 'Zone'), el('dd', { id: 'schedule-zone' }, s.time_zone),
        el('dt', {}, 'Parameters'), el('dd', { class: 'mono wrap' }, (s.parameters || []).join(' ') || '–'),
        el('dt', {}, 'Misfires'), el('dd', {}, s.misfire_policy + ', grace ' + s.misfire_grace_seconds + ' s'),
        el('dt', {}, 'Overlap'), el('dd', {}, s.overlap_policy),
        el('dt', {}, 'Recovery'), el('dd', {}, s.recover_policy + (s.recover_policy === 'RESTART' ?
          ', ' + s.recover_attempts + ' attempts, ' + s.recover_delay_seconds + ' s apart' : '')),
        el('dt', {}, 'Firings'), el('dd', {}, counts || 'none yet')));
      clear(nextBody);
      if (s.paused) nextBody.appendChild(el('tr', {}, el('td', { colspan: 2, class: 'muted' }, 'paused: none until resumed')));
      else if (!(s.next_firings || []).length) nextBody.appendChild(el('tr', {}, el('td', { colspan: 2, class: 'muted' }, 'never fires again')));
      else for (const n of s.next_firings)
        nextBody.appendChild(el('tr', { 'data-next-firing': n.epoch }, el('td', { class: 'mono' }, zoned(n.local, n.utc)), el('td', { class: 'mono' }, n.utc)));
      clear(histBody);
      if (!f.firings.length) histBody.appendChild(el('tr', {}, el('td', { colspan: 7, class: 'muted' }, 'no firings yet')));
      for (const x of f.firings) {
        const kind = x.kind + (x.missed_count ? ' (' + (x.missed_count < 0 ? '10000+' : x.missed_count) + ' missed)' : '') +
          (x.attempt ? ' · restart ' + x.attempt : '');
        histBody.appendChild(el('tr', { 'data-firing': x.firing_id },
          el('td', {}, el('time', { datetime: x.fire_time, title: 'UTC ' + x.fire_time }, x.fire_time)),
          el('td', {}, kind),
          el('td', {}, badge(x.status === 'FINISHED' && x.execution_status ? x.execution_status : x.status, x.status)),
          el('td', {}, x.job_execution_id ? link('#/execution/' + x.job_execution_id, String(x.job_execution_id)) : '–'),
          el('td', { class: 'mono wrap hide-narrow' }, x.node_id),
          el('td', { class: 'num hide-narrow' }, x.exit_code === null || x.exit_code === undefined ? '–' : String(x.exit_code)),
          el('td', { class: 'wrap hide-narrow' }, x.message || '')));
      }
      clear(pager);
      const here = '#/schedule/' + encodeURIComponent(name);
      if (before) pager.appendChild(link(here, 'Newest'));
      if (f.next_before) pager.appendChild(link(here + '?before=' + f.next_before, 'Older'));
    }
    every(5000, () => load().catch((e) => notice(e.message)));
    return load();
  }

  /* ---- the router --------------------------------------------------------------- */

  function route() {
    for (const t of timers) clearInterval(t);
    timers = [];
    generation++;
    notice('');
    const hash = location.hash.replace(/^#/, '') || '/';
    const qi = hash.indexOf('?');
    const path = qi < 0 ? hash : hash.slice(0, qi);
    const q = new URLSearchParams(qi < 0 ? '' : hash.slice(qi + 1));
    const main = clear(document.getElementById('main'));
    const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
    let section = 'jobs', p;
    if (parts[0] === 'executions') { section = 'executions'; p = pageExecutions(main, q); }
    else if (parts[0] === 'execution' && /^[0-9]+$/.test(parts[1] || '')) { section = 'executions'; p = pageExecution(main, parts[1]); }
    else if (parts[0] === 'job' && parts[1]) { p = pageJob(main, parts[1]); }
    else if (parts[0] === 'locks') { section = 'locks'; p = pageLocks(main, q); }
    else if (parts[0] === 'schedules') { section = 'schedules'; p = pageSchedules(main); }
    else if (parts[0] === 'schedule' && parts[1]) { section = 'schedules'; p = pageSchedule(main, parts[1], q); }
    else p = pageJobs(main);
    for (const a of document.querySelectorAll('nav a'))
      a.classList.toggle('active', a.getAttribute('data-nav') === section);
    Promise.resolve(p).catch((e) => notice(e.message));
  }

  async function start() {
    try {
      info = await api('/api/v1/info');
    } catch (e) {
      notice('Cannot reach the server: ' + e.message);
    }
    renderMode();
    renderFooter();
    window.addEventListener('hashchange', route);
    route();
  }

  document.addEventListener('DOMContentLoaded', start);
})();
