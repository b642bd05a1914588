import { act, api } from '../api.js';
import { append, badge, clear, el, link, statusBadge } from '../dom.js';
import { fmtDuration, fmtNum, fmtTime } from '../format.js';
import { alive, canAct, every, isLive, pageGeneration, readOnly } from '../state.js';
import { actionButton, notice } from '../widgets.js';

/* One execution: parameters, steps, partitions, exit messages; running
 * steps polled every second (items, items/s, progress and ETA where the
 * partitions give a total); the log its launcher kept (read again while it
 * runs; ?log=1 scrolls to it). */
export function pageExecution(main, id, q) {
  const g = pageGeneration();
  const head = el('div');
  const live = el('div', { id: 'live' });
  const acts = el('div', { class: 'actions', id: 'actions' });
  const facts = el('div', { class: 'card' });
  const params = el('div', { class: 'card' });
  const steps = el('div', { class: 'card' });
  const skips = el('div', { id: 'skips' });
  const lineage = el('div', { id: 'lineage' });
  const logHead = el('h2', { id: 'log' }, 'Log');
  const logBox = el('div', { class: 'card', id: 'log-box' }, el('span', { class: 'muted' }, 'loading…'));
  append(main, [head, acts, live, el('h2', {}, 'Execution'), facts, lineage, el('h2', {}, 'Parameters'), params,
    el('h2', {}, 'Steps'), steps, skips, logHead, logBox]);
  let logDone = false, logShown = false;
  const seen = {}; /* step id -> [time, items] of the previous poll, for a measured rate */
  let lastStatus = null;

  function renderActions(e) {
    clear(acts);
    if (!canAct()) {
      if (readOnly()) acts.appendChild(el('span', { class: 'muted' }, 'read-only console: no actions'));
      return;
    }
    const running = isLive(e.status);
    const base = '/api/v1/executions/' + e.job_execution_id;
    const after = async (p, ok) => { const d = await act(base + p); notice(ok(d), true); await load(); };
    if (running && e.status !== 'STOPPING')
      acts.appendChild(actionButton('Stop', 'danger', () => after('/stop', (d) => 'Execution ' + e.job_execution_id + ': ' + d.status)));
    if (!running || e.owner_lost) {
      if (e.status !== 'COMPLETED' && e.status !== 'ABANDONED') {
        /* The answer says what happened: the new execution (the page goes
         * there), or the refusal in the run's own words. */
        acts.appendChild(actionButton('Restart', '', async () => {
          const d = await act(base + '/restart');
          if (d.job_execution_id && d.job_execution_id !== e.job_execution_id) {
            notice('Execution ' + d.job_execution_id + ' restarts ' + e.job_execution_id + ': ' + d.status, true);
            location.hash = '#/execution/' + d.job_execution_id;
          } else {
            notice('Restart of ' + e.job_execution_id + ' is starting (pid ' + d.pid + '); no execution recorded yet', true);
            await load();
          }
        }));
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
      const lease = isLive(x.status) && x.lease_left_seconds !== null && x.lease_left_seconds !== undefined ?
        (x.lease_left_seconds > 0 ? fmtDuration(x.lease_left_seconds) : 'expired') : '–';
      return el('tr', { 'data-partition': x.partition_index, 'data-step': x.step_execution_id },
        el('td', { class: 'num' }, String(x.partition_index)),
        el('td', {}, badge(x.status)),
        el('td', { class: 'mono wrap', 'data-worker': x.worker || '' }, x.worker || '–'),
        el('td', { class: 'num', 'data-claims': x.claim_count }, fmtNum(x.claim_count)),
        el('td', { class: 'wrap', 'data-takeovers': takeovers.length },
          takeovers.length ? takeovers.map((t) => el('div', { title: t.detail || '', 'data-takeover': t.outcome },
            badge('STOPPING', t.reason), ' ', fmtTime(t.event_time), ' → ', el('span', { class: 'mono' }, t.owner_id))) : '–'),
        el('td', { class: 'num' + (x.lease_left_seconds <= 0 && isLive(x.status) ? ' expired' : ''), 'data-lease-left': x.lease_left_seconds === null ? '' : x.lease_left_seconds }, lease),
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
    if (!isLive(e.status)) return;
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

  /* What the run printed, as text (textContent: never markup); read while
   * it runs, and once more after its end. */
  async function loadLog(e) {
    if (logDone) return;
    const d = await api('/api/v1/executions/' + encodeURIComponent(id) + '/log');
    if (!alive(g)) return;
    if (!isLive(e.status)) logDone = true;
    clear(logBox);
    if (!d.captured) {
      logBox.appendChild(el('span', { class: 'muted', id: 'log-none' },
        'no log: this execution was not launched by a scheduler node or the console'));
    } else {
      if (d.bytes_dropped > 0)
        logBox.appendChild(el('div', { class: 'muted', id: 'log-dropped' }, fmtNum(d.bytes_dropped) + ' earlier bytes not kept'));
      const pre = el('pre', { class: 'log', id: 'log-text' }, d.log ? d.log : '(it printed nothing)');
      logBox.appendChild(pre);
      pre.scrollTop = pre.scrollHeight;
    }
    if (!logShown && q && q.get('log')) logHead.scrollIntoView();
    logShown = true;
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
    await loadLog(e);
    return e;
  }
  every(1000, () => load().catch((err) => notice(err.message)));
  return load();
}
