import { act, api } from '../api.js';
import { append, badge, clear, el, link } from '../dom.js';
import { alive, canAct, every, pageGeneration, readOnly } from '../state.js';
import { actionButton, notice, zoned } from '../widgets.js';

/* One schedule: its settings, actions, next firings in its zone, history. */
export function pageSchedule(main, name, q) {
  const g = pageGeneration();
  const before = q.get('before') || '', status = q.get('status') || '';
  const base = '/api/v1/schedules/' + encodeURIComponent(name);
  const head = el('div'), acts = el('div', { class: 'actions', id: 'actions' }), facts = el('div', { class: 'card' });
  const nextBody = el('tbody'), histBody = el('tbody'), pager = el('div', { class: 'pager' });
  /* The firings of one status only (the history of an every-second schedule
   * is mostly skips: the fired ones are one choice away). */
  const statusSel = el('select', { id: 'firing-status', 'aria-label': 'status' }, el('option', { value: '' }, 'every status'),
    ...['FINISHED', 'LAUNCHED', 'CLAIMED', 'QUEUED', 'SKIPPED_OVERLAP', 'MISFIRED', 'ORPHANED', 'FAILED_TO_LAUNCH']
      .map((v) => el('option', { value: v, selected: v === status }, v)));
  statusSel.addEventListener('change', () => {
    location.hash = '#/schedule/' + encodeURIComponent(name) + (statusSel.value ? '?status=' + statusSel.value : '');
  });
  const filter = el('div', { class: 'actions' }, el('label', {}, 'Status ', statusSel));
  append(main, [head, acts, el('h2', {}, 'Schedule'), facts,
    el('h2', {}, 'Next firings'), el('div', { class: 'card' }, el('table', { id: 'next-firings' },
      el('thead', {}, el('tr', {}, el('th', {}, 'In the schedule\'s zone'), el('th', {}, 'UTC'))), nextBody)),
    el('h2', {}, 'Firings'), filter, el('div', { class: 'card' }, el('table', { id: 'firings' },
      el('thead', {}, el('tr', {}, el('th', {}, 'Instant (UTC)'), el('th', {}, 'Kind'), el('th', {}, 'Status'),
        el('th', {}, 'Execution'), el('th', { class: 'hide-narrow' }, 'Node'), el('th', { class: 'num hide-narrow' }, 'Exit'),
        el('th', { class: 'hide-narrow' }, 'Message'))), histBody), pager)]);
  let paused = null;

  function renderActions(s) {
    clear(acts);
    if (!canAct()) {
      if (readOnly()) acts.appendChild(el('span', { class: 'muted' }, 'read-only console: no actions'));
      return;
    }
    const after = async (p, ok) => { const d = await act(base + p); notice(ok(d), true); await load(); };
    if (s.paused) acts.appendChild(actionButton('Resume', '', () => after('/resume', () => 'Schedule ' + name + ' resumed')));
    else {
      acts.appendChild(actionButton('Pause', 'danger', () => after('/pause', () => 'Schedule ' + name + ' paused')));
      acts.appendChild(actionButton('Fire now', '', () => after('/fire', (d) => 'Fired now (firing ' + d.firing_id + ', ' + d.fire_time + '): ' + d.message)));
      /* Backfill: the past instants from..to, each a firing the scheduler
       * nodes run oldest first under the overlap policy. */
      const from = el('input', { type: 'text', id: 'backfill-from', 'aria-label': 'backfill from', placeholder: '2026-11-01', size: 16 });
      const to = el('input', { type: 'text', id: 'backfill-to', 'aria-label': 'backfill to', placeholder: '2026-11-30T23:59', size: 16 });
      acts.appendChild(el('span', { class: 'backfill' }, el('label', {}, 'From ', from), ' ', el('label', {}, 'to ', to), ' ',
        actionButton('Backfill', '', async () => {
          const d = await act(base + '/backfill', { from: from.value.trim(), to: to.value.trim() });
          notice('Backfill of ' + name + ' from ' + d.from + ' to ' + d.to + ': ' + d.created + ' firings queued, ' +
            d.existing + ' instants had one already', true);
          await load();
        }),
        ' ', actionButton('Cancel backfill', 'danger', () => after('/backfill/cancel', (d) =>
          'Backfill of ' + name + ' canceled: ' + d.canceled + ' waiting firings removed'))));
    }
  }

  async function load() {
    const [s, f] = await Promise.all([api(base),
      api(base + '/firings?limit=25' + (before ? '&before=' + encodeURIComponent(before) : '') +
        (status ? '&status=' + encodeURIComponent(status) : ''))]);
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
    const st = status ? 'status=' + encodeURIComponent(status) : '';
    if (before) pager.appendChild(link(here + (st ? '?' + st : ''), 'Newest'));
    if (f.next_before) pager.appendChild(link(here + '?before=' + f.next_before + (st ? '&' + st : ''), 'Older'));
  }
  every(5000, () => load().catch((e) => notice(e.message)));
  return load();
}
