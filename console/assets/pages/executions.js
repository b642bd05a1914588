import { api } from '../api.js';
import { append, clear, el, link, statusBadge } from '../dom.js';
import { fmtDuration, fmtNum, fmtTime } from '../format.js';
import { alive, every, pageGeneration, statuses } from '../state.js';
import { notice } from '../widgets.js';

/* Executions: filters (job, status), keyset paging; the first page refreshes every 2 s. */
export function pageExecutions(main, q) {
  const g = pageGeneration();
  const job = q.get('job') || '', status = q.get('status') || '', before = q.get('before') || '';
  const jobSel = el('select', { id: 'filter-job', 'aria-label': 'job' }, el('option', { value: '' }, 'all jobs'));
  const stSel = el('select', { id: 'filter-status', 'aria-label': 'status' }, el('option', { value: '' }, 'any status'));
  for (const s of statuses()) stSel.appendChild(el('option', { value: s, selected: s === status }, s));
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
        el('td', {}, statusBadge(e), parts, e.status === 'FAILED' ?
          [' ', link('#/execution/' + e.job_execution_id + '?log=1', 'log', { class: 'log-link' })] : null),
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
