/* What several pages show: the notice line, the two-click action button,
 * a time in a schedule's zone. */
import { el } from './dom.js';
import { token } from './api.js';

export function notice(text, ok) {
  const n = document.getElementById('notice');
  n.textContent = text || '';
  n.className = ok ? 'notice ok' : 'notice';
  n.hidden = !text;
}

/* A button that acts on the second click (the first arms it for 4 s):
 * no confirm() dialog, and no stop by a stray click. */
export function actionButton(label, cls, run) {
  let armed = null;
  const b = el('button', { class: cls || '', type: 'button', 'data-action': label.toLowerCase() }, label);
  b.addEventListener('click', async () => {
    if (!armed) {
      b.classList.add('armed');
      b.textContent = 'Confirm ' + label.toLowerCase();
      armed = setTimeout(() => { armed = null; b.classList.remove('armed'); b.textContent = label; }, 4000);
      return;
    }
    clearTimeout(armed);
    armed = null;
    b.classList.remove('armed');
    b.textContent = label;
    if (!token()) { notice('Type the admin token in the field at the top first.'); return; }
    b.disabled = true;
    try {
      await run();
    } catch (e) {
      notice(label + ' refused: ' + e.message);
    } finally {
      b.disabled = false;
    }
  });
  return b;
}

/* A time the API gave as ISO 8601 with its offset: shown as it is (the
 * schedule's own zone), its UTC on hover. */
export function zoned(local, utc) {
  if (!local) return el('span', {}, '–');
  return el('time', { datetime: utc || local, title: utc ? 'UTC ' + utc : '' }, local);
}
