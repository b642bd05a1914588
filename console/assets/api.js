/* The JSON API: reads, and actions that carry the admin token. */
const TOKEN_KEY = 'cbatch.adminToken';

export async function api(path) {
  const r = await fetch(path, { headers: { Accept: 'application/json' }, cache: 'no-store' });
  let doc = null;
  try { doc = await r.json(); } catch (e) { doc = null; }
  if (!r.ok) {
    const msg = doc && doc.error ? doc.error.message : r.status + ' ' + r.statusText;
    throw new Error(msg);
  }
  return doc;
}

export function token() {
  try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch (e) { return ''; }
}

/* An action: POST with the token; its answer or an Error with the server's message. */
export async function act(path, body) {
  const r = await fetch(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + token() },
    body: JSON.stringify(body || {}),
    cache: 'no-store',
  });
  let doc = null;
  try { doc = await r.json(); } catch (e) { doc = null; }
  if (!r.ok) throw new Error(doc && doc.error ? doc.error.message : String(r.status));
  return doc;
}

/* Keep the token for this tab (sessionStorage: gone with it). */
export function setToken(value) {
  try { sessionStorage.setItem(TOKEN_KEY, value); } catch (e) { /* private mode */ }
}
