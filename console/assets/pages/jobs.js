import { api } from '../api.js';
import { append, clear, el, link, statusBadge } from '../dom.js';
import { fmtDuration, fmtNum, fmtTime } from '../format.js';
import { alive, every, pageGeneration } from '../state.js';
import { notice } from '../widgets.js';

/* Jobs: last status (a failed one with a link to its log), duration, next
 * scheduled firing; refreshed every 5 s. */
export function pageJobs(main) {
  const g = pageGeneration();
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
        el('td', {}, last ? link('#/execution/' + last.job_execution_id, statusBadge(last)) : el('span', { class: 'muted' }, 'never ran'),
          /* A failed run's last lines: one click away. */
          last && last.status === 'FAILED' ?
            [' ', link('#/execution/' + last.job_execution_id + '?log=1', 'log', { class: 'log-link' })] : null),
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
