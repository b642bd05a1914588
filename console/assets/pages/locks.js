import { act, api } from '../api.js';
import { append, clear, el, link } from '../dom.js';
import { fmtDuration, fmtTime } from '../format.js';
import { alive, canAct, every, pageGeneration } from '../state.js';
import { actionButton, notice } from '../widgets.js';

/* Locks with the lease counting down (every second, from the last fetch);
 * the audit trail with paging. */
export function pageLocks(main, q) {
  const g = pageGeneration();
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
