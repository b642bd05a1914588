import { api } from '../api.js';
import { append, clear, el, link } from '../dom.js';
import { alive, every, pageGeneration } from '../state.js';
import { notice, zoned } from '../widgets.js';

/* Schedules: each with its job, expression, zone, next firing, paused or not. */
export function pageSchedules(main) {
  const g = pageGeneration();
  const body = el('tbody');
  append(main, [el('h1', {}, 'Schedules'), el('div', { class: 'card' }, el('table', { id: 'schedules' },
    el('thead', {}, el('tr', {}, el('th', {}, 'Schedule'), el('th', {}, 'Job'), el('th', {}, 'Cron'),
      el('th', { class: 'hide-narrow' }, 'Zone'), el('th', {}, 'Next firing (UTC)'), el('th', {}, 'State'),
      el('th', { class: 'hide-narrow' }, 'Overlap'), el('th', { class: 'hide-narrow' }, 'Last firing'))), body))]);
  async function load() {
    const d = await api('/api/v1/schedules');
    if (!alive(g)) return;
    clear(body);
    if (!d.schedules.length) body.appendChild(el('tr', {}, el('td', { colspan: 8, class: 'muted' }, 'no schedules')));
    for (const s of d.schedules) {
      body.appendChild(el('tr', { 'data-schedule': s.name },
        el('td', { class: 'wrap' }, link('#/schedule/' + encodeURIComponent(s.name), s.name)),
        el('td', { class: 'wrap' }, link('#/job/' + encodeURIComponent(s.job), s.job)),
        el('td', { class: 'mono' }, s.cron),
        el('td', { class: 'hide-narrow' }, s.time_zone),
        el('td', {}, s.paused ? '–' : zoned(s.next_fire_time, s.next_fire_time)),
        el('td', {}, s.paused ? el('span', { class: 'badge st-STOPPED' }, 'paused') : el('span', { class: 'badge st-STARTED' }, 'active')),
        el('td', { class: 'hide-narrow' }, s.overlap_policy),
        /* As the CLI's LAST FIRING: its instant (the schedule's zone), status, exit. */
        el('td', { class: 'hide-narrow', 'data-last-firing': s.last_firing ? s.last_firing.status : '' },
          s.last_firing ? [zoned(s.last_firing.last_instant || s.last_firing.fire_time,
            s.last_firing.last_instant || s.last_firing.fire_time), ' ',
            el('span', { class: 'badge st-' + s.last_firing.status }, s.last_firing.status),
            s.last_firing.exit_status ? ' ' + s.last_firing.exit_status : ''] : '–')));
    }
  }
  every(5000, () => load().catch((e) => notice(e.message)));
  return load();
}
