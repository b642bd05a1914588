import { act, api, token } from '../api.js';
import { append, clear, el, link, svg } from '../dom.js';
import { fmtNum } from '../format.js';
import { alive, canAct, every, pageGeneration } from '../state.js';
import { notice } from '../widgets.js';

/* A job's history: duration and items/s of its last executions, as SVG. */
export function pageJob(main, name) {
  const g = pageGeneration();
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
    const button = el('button', { type: 'submit', 'data-action': 'launch' }, 'Launch');
    const form = el('form', { id: 'launch', class: 'actions' }, el('label', {}, 'More parameters ', extra), button);
    /* Two clicks, as every action: the first arms it for 4 s. */
    let armed = null;
    const disarm = () => { clearTimeout(armed); armed = null; button.classList.remove('armed'); button.textContent = 'Launch'; };
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      if (!armed) {
        button.classList.add('armed');
        button.textContent = 'Confirm launch';
        armed = setTimeout(disarm, 4000);
        return;
      }
      disarm();
      if (!token()) { notice('Type the admin token in the field at the top first.'); return; }
      const params = [];
      /* A parameter the job declared non-identifying goes with its '-'. */
      for (const [p, input] of inputs)
        if (input.value.trim() !== '') params.push((p.identifying ? '' : '-') + p.name + ':' + p.type + '=' + input.value.trim());
      for (const w of extra.value.trim().split(/\s+/)) if (w) params.push(w);
      try {
        button.disabled = true;
        const r = await act('/api/v1/jobs/' + encodeURIComponent(name) + '/executions', { params: params });
        if (r.job_execution_id) {
          /* It ran: its execution, where the page goes. */
          notice('Execution ' + r.job_execution_id + ' of ' + name + ': ' + r.status, true);
          location.hash = '#/execution/' + r.job_execution_id;
          return;
        }
        notice('Run of ' + name + ' is starting (pid ' + r.pid + '); no execution recorded yet', true);
        await load();
      } catch (e) {
        notice('Launch refused: ' + e.message);
      } finally {
        button.disabled = false;
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
