/*
 * What every page shares: the server's /api/v1/info (whether actions show,
 * the statuses' names and which are live: the server's vocabulary, never a
 * copy of ours), and the current page's lifetime (its polls are cleared and
 * its late answers dropped once it is left).
 */
let info = null;       /* /api/v1/info: read_only decides whether actions show */
let timers = [];       /* the current page's polls, cleared on navigation */
let generation = 0;    /* a page's late answers are dropped once it is left */

export function setInfo(doc) { info = doc; }

export function serverInfo() { return info; }

export function canAct() {
  return info && info.read_only === false;
}

export function readOnly() { return info && info.read_only; }

/* Every status's name, in the server's order. */
export function statuses() { return (info && info.statuses) || []; }

/* Is this status live (running, or claiming to be): one of the server's live_statuses? */
export function isLive(status) { return ((info && info.live_statuses) || []).includes(status); }

/* Leave the current page: its polls stop, its late answers are dropped. */
export function leavePage() {
  for (const t of timers) clearInterval(t);
  timers = [];
  generation++;
}

/* The current page, for alive(): const g = pageGeneration(); ... if (!alive(g)) return; */
export function pageGeneration() { return generation; }

/* Call fn every ms milliseconds while the current page is shown. */
export function every(ms, fn) {
  const g = pageGeneration();
  const t = setInterval(() => { if (g === generation) fn(); }, ms);
  timers.push(t);
}

/* Is the page of generation g still the one shown? */
export function alive(g) { return g === generation; }
