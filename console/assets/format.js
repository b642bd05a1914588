/* Times, durations and counts as the pages show them. */

/* A time in the browser's zone, with that zone's offset at that instant
 * ("2026-12-03 07:57:43 +01:00"): a time without its zone means nothing to
 * an operator in another one. */
export function fmtTime(s) {
  if (!s) return '–';
  const d = new Date(s);
  if (isNaN(d)) return String(s);
  const p = (n) => String(n).padStart(2, '0');
  const off = -d.getTimezoneOffset();
  const zone = (off < 0 ? '-' : '+') + p(Math.floor(Math.abs(off) / 60)) + ':' + p(Math.abs(off) % 60);
  return d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + ' ' +
    p(d.getHours()) + ':' + p(d.getMinutes()) + ':' + p(d.getSeconds()) + ' ' + zone;
}

export function fmtDuration(sec) {
  if (sec === null || sec === undefined || isNaN(sec)) return '–';
  sec = Number(sec);
  if (sec < 0) return '-' + fmtDuration(-sec);
  if (sec < 10) return sec.toFixed(2) + ' s';
  if (sec < 60) return sec.toFixed(1) + ' s';
  const h = Math.floor(sec / 3600), m = Math.floor((sec % 3600) / 60), s = Math.floor(sec % 60);
  return h ? h + ' h ' + m + ' min' : m + ' min ' + s + ' s';
}

export function fmtNum(n) {
  if (n === null || n === undefined) return '–';
  return Number(n).toLocaleString('en-US', { maximumFractionDigits: 1 });
}
