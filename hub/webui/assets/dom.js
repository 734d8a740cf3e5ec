// Shoal fleet view: DOM helpers. Text from the API is only ever set as
// text (never as HTML), so a job name or message cannot inject markup.
'use strict';

// h builds an element: h('td', {class: 'n'}, 'text', child, [more]).
function h(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const k of kids.flat(Infinity)) {
    if (k === null || k === undefined || k === false) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}

// table builds a table from a header row and body rows (arrays of cells or tr elements).
function table(attrs, head, rows) {
  return h('table', attrs,
    h('thead', {}, h('tr', {}, head.map((c) => h('th', {}, c)))),
    h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', {colspan: head.length, class: 'muted'}, 'none'))));
}

// age formats a duration in milliseconds as 4s, 3m12s, 2h5m or 3d4h.
function age(ms) {
  if (!(ms >= 0)) return '—';
  let s = Math.floor(ms / 1000);
  if (s < 60) return s + 's';
  let m = Math.floor(s / 60); s %= 60;
  if (m < 60) return m + 'm' + (s ? s + 's' : '');
  let hr = Math.floor(m / 60); m %= 60;
  if (hr < 48) return hr + 'h' + (m ? m + 'm' : '');
  return Math.floor(hr / 24) + 'd' + (hr % 24 ? (hr % 24) + 'h' : '');
}

// since is an element showing the age of an RFC 3339 time, kept current
// by tickAges.
function since(t, attrs) {
  if (!t) return h('span', {class: 'muted'}, 'never');
  return h('span', Object.assign({'data-since': t, title: t}, attrs || {}), age(Date.now() - Date.parse(t)));
}

// tickAges refreshes every since() element on the page.
function tickAges() {
  for (const e of document.querySelectorAll('[data-since]')) {
    e.textContent = age(Date.now() - Date.parse(e.dataset.since));
  }
}

// badge is a coloured word: a phase, a state, a condition status.
function badge(word, kind) {
  return h('span', {class: 'badge ' + (kind || String(word).toLowerCase())}, word);
}
