/*
 * The cbatch console: a single page over the JSON API (/api/v1/...), hash
 * routes, no framework and no build step: ES modules, served as they are.
 * Every value from the repository (job parameters, messages, lock names are
 * user input) goes into the page as text: elements are made with
 * createElement / createElementNS (dom.js) and filled with textContent,
 * never with innerHTML.
 *
 * Routes: #/ jobs, #/executions?job=&status=&before=, #/execution/ID (?log=1:
 * at its log),
 * #/job/NAME (parameters, launch form, history chart),
 * #/locks?show=held|recent|all&after=&lock=&execution=&before= (locks and the
 * audit trail), #/schedules, #/schedule/NAME?before= (next firings, history).
 *
 * This module: the header (read-only, or the admin token field), the
 * footer, and the router; each page is a module of pages/.
 */
import { api, setToken, token } from './api.js';
import { append, clear, el } from './dom.js';
import { pageExecution } from './pages/execution.js';
import { pageExecutions } from './pages/executions.js';
import { pageJob } from './pages/job.js';
import { pageJobs } from './pages/jobs.js';
import { pageLocks } from './pages/locks.js';
import { pageSchedule } from './pages/schedule.js';
import { pageSchedules } from './pages/schedules.js';
import { leavePage, serverInfo, setInfo } from './state.js';
import { notice } from './widgets.js';

function renderMode() {
  const m = clear(document.getElementById('mode'));
  const info = serverInfo();
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
    setToken(input.value.trim());
  });
  m.appendChild(el('span', { class: 'badge' }, 'actions enabled'));
  /* In a form of its own (a password field wants one); it never submits. */
  m.appendChild(el('form', { onsubmit: (ev) => { ev.preventDefault(); input.dispatchEvent(new Event('change')); } },
    el('input', { type: 'text', name: 'username', autocomplete: 'username', value: 'admin', hidden: true }), input));
}

function renderFooter() {
  const f = clear(document.getElementById('footer'));
  const info = serverInfo();
  if (!info) return;
  append(f, ['cbatch ' + info.version + ' · schema ' + (info.schema_version === null ? '?' : info.schema_version) +
    ' (expects ' + info.schema_expected + ')' +
    (info.database_error ? ' · database: ' + info.database_error : '')]);
}

function route() {
  leavePage();
  notice('');
  const hash = location.hash.replace(/^#/, '') || '/';
  const qi = hash.indexOf('?');
  const path = qi < 0 ? hash : hash.slice(0, qi);
  const q = new URLSearchParams(qi < 0 ? '' : hash.slice(qi + 1));
  const main = clear(document.getElementById('main'));
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  let section = 'jobs', p;
  if (parts[0] === 'executions') { section = 'executions'; p = pageExecutions(main, q); }
  else if (parts[0] === 'execution' && /^[0-9]+$/.test(parts[1] || '')) { section = 'executions'; p = pageExecution(main, parts[1], q); }
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
    setInfo(await api('/api/v1/info'));
  } catch (e) {
    notice('Cannot reach the server: ' + e.message);
  }
  renderMode();
  renderFooter();
  window.addEventListener('hashchange', route);
  route();
}

document.addEventListener('DOMContentLoaded', start);
