/*
 * Making elements, as text only: every value from the repository (job
 * parameters, messages, lock names are user input) goes into the page as
 * text: elements are made with createElement / createElementNS and filled
 * with textContent, never with innerHTML.
 */
const SVG = 'http://www.w3.org/2000/svg';

/* el('td', {class: 'num'}, 'text', childNode, ...): strings become text nodes. */
export function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'text') e.textContent = String(v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  append(e, kids);
  return e;
}

export function append(parent, kids) {
  for (const k of kids.flat()) {
    if (k === null || k === undefined || k === false) continue;
    parent.appendChild(typeof k === 'object' ? k : document.createTextNode(String(k)));
  }
  return parent;
}

export function svg(tag, attrs, ...kids) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  for (const k of kids) e.appendChild(typeof k === 'object' ? k : document.createTextNode(String(k)));
  return e;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

export function link(href, text, attrs) {
  return el('a', Object.assign({ href: href }, attrs || {}), text);
}

export function badge(status, extra) {
  return el('span', { class: 'badge st-' + status, 'data-status': status }, extra || status);
}

export function statusBadge(e) {
  if (e.owner_lost) return el('span', {}, badge(e.status), ' ', badge('LOST', 'owner lost'));
  return badge(e.status);
}
