// DOM helpers. Every value from the server goes in as text (textContent,
// attributes set one by one): nothing is ever parsed as HTML.

import { markRanges } from './highlight.js';
import { formatTime } from './time.js';

const SVG_NS = 'http://www.w3.org/2000/svg';
// Fields holding epoch milliseconds: shown with the time they mean.
const DATE_FIELD = /(^|\.)(@timestamp|timestamp|time_ms|from|to|createdOn|updatedOn)$/;

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else if (child instanceof Node) el.appendChild(child);
    else el.appendChild(document.createTextNode(String(child)));
  }
}

function setAttrs(el, attrs) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') {
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (key === 'class') {
      el.setAttribute('class', Array.isArray(value) ? value.filter(Boolean).join(' ') : value);
    } else if (key === 'dataset') {
      Object.assign(el.dataset, value);
    } else if (key === 'style') {
      Object.assign(el.style, value); // CSSOM: allowed by the page's CSP
    } else if (key === 'checked') {
      el.defaultChecked = el.checked = !!value; // form.reset() keeps it
    } else if (key === 'selected') {
      el.defaultSelected = el.selected = !!value;
    } else if (key === 'value') {
      if ('defaultValue' in el && el.tagName !== 'SELECT') el.defaultValue = String(value);
      el.value = String(value);
    } else if (key === 'disabled') {
      el.disabled = !!value;
    } else {
      el.setAttribute(key, value === true ? '' : String(value));
    }
  }
}

/** h('button', {class: 'x', onClick}, 'text', child...) */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs && (attrs instanceof Node || typeof attrs !== 'object' || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = null;
  }
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

/**
 * A table row that opens a detail row under it (hits, behaviors).
 * fill() gives the detail's content, built the first time it opens.
 * Returns [row, detail].
 */
export function expandableRow({ id, dataId, label, cells, colspan, fill }) {
  const detail = h('tr', { class: 'detail', id, hidden: true }, h('td', { colspan }));
  const toggle = h('button', {
    type: 'button', class: 'expand icon', 'aria-expanded': 'false', 'aria-controls': id, 'aria-label': label,
  }, '▸');
  const row = h('tr', { class: 'hit', dataset: { id: dataId } }, h('td', { class: 'cell-toggle' }, toggle), ...cells);
  const open = () => {
    const opened = detail.hidden;
    detail.hidden = !opened;
    toggle.setAttribute('aria-expanded', String(opened));
    toggle.textContent = opened ? '▾' : '▸';
    row.classList.toggle('open', opened);
    if (opened && !detail.firstChild.firstChild) detail.firstChild.append(...fill());
  };
  toggle.addEventListener('click', (e) => { e.stopPropagation(); open(); });
  row.addEventListener('click', (e) => {
    if (window.getSelection && String(window.getSelection()).length) return; // selecting text
    if (e.target.closest('button, a, input')) return;
    open();
  });
  return [row, detail];
}

export function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined) continue;
    if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2).toLowerCase(), value);
    else el.setAttribute(key, String(value));
  }
  append(el, children);
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

export function replace(el, ...children) {
  clear(el);
  append(el, children);
  return el;
}

/**
 * Text with what the query matched wrapped in <mark>, as text nodes only:
 * `marks` a search reply's `highlight` or plain words, `path` the record path
 * the text is the value of (highlight.js says what is marked where).
 */
export function highlighted(text, marks, path = null) {
  const value = text === null || text === undefined ? '' : String(text);
  const ranges = markRanges(value, marks, path);
  if (!ranges.length) return document.createTextNode(value);
  const out = document.createDocumentFragment();
  let last = 0;
  for (const [start, end] of ranges) {
    if (start > last) out.appendChild(document.createTextNode(value.slice(last, start)));
    out.appendChild(h('mark', value.slice(start, end)));
    last = end;
  }
  if (last < value.length) out.appendChild(document.createTextNode(value.slice(last)));
  return out;
}

/** A formatted number: 12,345. */
export function num(n) {
  return typeof n === 'number' ? n.toLocaleString('en-US') : String(n ?? '');
}

/** Flatten a record into [path, value] rows: {a: {b: 1}} -> [['a.b', 1]]. */
export function flatten(value, prefix = '', out = []) {
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const keys = Object.keys(value);
    if (!keys.length && prefix) out.push([prefix, '{}']);
    for (const key of keys) flatten(value[key], prefix ? `${prefix}.${key}` : key, out);
  } else if (Array.isArray(value) && value.some((v) => v && typeof v === 'object')) {
    value.forEach((v, i) => flatten(v, `${prefix}[${i}]`, out));
  } else {
    out.push([prefix, Array.isArray(value) ? value.map(String).join(', ') : value === null ? 'null' : String(value)]);
  }
  return out;
}

/** A field holding epoch milliseconds by its name (@timestamp, createdOn...) and value. */
export function isTime(path, value) {
  return DATE_FIELD.test(path) && /^\d{10,13}$/.test(String(value));
}

/** The full record: a table of fields and the JSON, both as text. */
export function recordView(record, { terms = [], onFilter = null, describe = null } = {}) {
  const rows = flatten(record).map(([path, value]) => {
    // A page may give a field a readable name and value (a flow's "Bytes": 1.0 MiB); the raw ones stay on hover.
    const shown = (describe && describe(path, value)) || {};
    return h('tr', null,
      shown.label ? h('th', { scope: 'row', title: path }, shown.label) : h('th', { scope: 'row' }, path),
      h('td', null, shown.text !== undefined ? h('span', { class: 'field-value', title: value, dataset: { raw: value } }, shown.text) : isTime(path, value)
        // The time it means, as every time on the page (ISO 8601); the stored epoch ms on hover and in the JSON.
        ? h('time', { class: 'field-value field-time', datetime: new Date(Number(value)).toISOString(), title: `${value} (epoch milliseconds)`, dataset: { raw: value } },
          formatTime(Number(value), { millis: true }))
        : h('span', { class: 'field-value' }, highlighted(value, terms, path.replace(/\[\d+\]/g, '')))),
      onFilter ? h('td', { class: 'row-actions' },
        path.startsWith('_') ? null : [
          h('button', { type: 'button', class: 'icon small', title: `Filter for ${path}: ${value}`, 'aria-label': `Filter for ${path} ${value}`, onClick: () => onFilter(path, value, false) }, '+'),
          h('button', { type: 'button', class: 'icon small', title: `Filter out ${path}: ${value}`, 'aria-label': `Filter out ${path} ${value}`, onClick: () => onFilter(path, value, true) }, '−')],
      ) : null,
    );
  });
  const json = JSON.stringify(record, null, 2);
  return h('div', { class: 'record' },
    h('table', { class: 'fields' }, h('tbody', null, rows)),
    h('details', { class: 'json' }, h('summary', null, 'JSON'), h('pre', null, json)),
  );
}

/** A message line: role=status for success, role=alert for errors. */
export function notice(kind, ...children) {
  return h('div', { class: ['notice', kind], role: kind === 'error' ? 'alert' : 'status' }, ...children);
}

export function spinner(label = 'Loading…') {
  return h('div', { class: 'loading', role: 'status' }, h('span', { class: 'spin', 'aria-hidden': 'true' }), label);
}

/** A modal confirmation: resolves true when confirmed. Escape cancels (native <dialog>). */
export function confirmDialog(title, message, confirmLabel = 'OK', danger = false) {
  return new Promise((resolve) => {
    const ok = h('button', { type: 'submit', value: 'ok', class: danger ? 'danger' : 'primary' }, confirmLabel);
    const dialog = h('dialog', { class: 'dialog', 'aria-label': title },
      h('form', { method: 'dialog' },
        h('h2', null, title),
        h('p', null, message),
        h('div', { class: 'buttons' },
          h('button', { type: 'submit', value: 'cancel' }, 'Cancel'),
          ok),
      ));
    dialog.addEventListener('close', () => {
      resolve(dialog.returnValue === 'ok');
      dialog.remove();
    });
    document.body.appendChild(dialog);
    dialog.showModal();
    ok.focus();
  });
}
