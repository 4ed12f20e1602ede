// MITRE ATT&CK technique ids (a rule's `risks`: T1059.001, from a Sigma rule's
// attack.t1059.001 tag) shown with their names ("T1059.001 PowerShell") as
// labels that lead to the behaviors of that technique in the timeline. The
// names come from attack-techniques.json, served beside this file (MITRE's
// data under MITRE's licence: ATTACK-NOTICE.txt; scripts/attack-techniques.py
// makes it). The links stay on this server (the page loads and calls nothing
// elsewhere).

import { h } from './dom.js';
import { link } from './router.js';
import { appendFilters } from './searchkit.js';

// A technique or sub-technique id; anything else a rule names as a risk is shown as plain text.
const TECHNIQUE = /^T\d{4}(\.\d{3})?$/;

export function isTechnique(value) {
  return TECHNIQUE.test(String(value ?? ''));
}

// id -> name, once loaded (31 KB, fetched once per page load, in the background).
let names = null;
const waiting = new Set();
const loaded = fetch('/assets/attack-techniques.json')
  .then((r) => (r.ok ? r.json() : { techniques: {} }))
  .catch(() => ({ techniques: {} })) // no names: the ids alone, as before
  .then((data) => {
    names = data.techniques || {};
    for (const fill of waiting) fill();
    waiting.clear();
  });

/** Resolves once the names are known (or known to be missing). */
export function techniqueNames() {
  return loaded;
}

/**
 * The name of a technique id, '' when unknown (or not loaded yet): "PowerShell";
 * with `full`, a sub-technique's parent too: "Command and Scripting Interpreter: PowerShell".
 */
export function techniqueName(id, { full = false } = {}) {
  if (!names || !isTechnique(id)) return '';
  const own = names[id] || '';
  const parent = id.includes('.') ? names[id.split('.')[0]] : '';
  return full && own && parent ? `${parent}: ${own}` : own;
}

/** A span that holds the technique's name (filled in when the names arrive). */
export function techniqueNameSpan(id, attrs = {}) {
  const span = h('span', { class: 'technique-name', ...attrs });
  const fill = () => { span.textContent = techniqueName(id); };
  if (names) fill();
  else waiting.add(fill);
  return span;
}

/** "T1059.001 — Command and Scripting Interpreter: PowerShell" for a title, the id alone when unknown. */
function described(id) {
  const name = techniqueName(id, { full: true });
  return name ? `${id}: ${name}` : id;
}

/** The timeline's address for behaviors of one technique (plus the given query, filters and range). */
export function techniqueHref(id, { q = '', filters = [], from = 'now-7d', to = 'now' } = {}) {
  const p = new URLSearchParams();
  if (q) p.set('q', q);
  p.set('from', String(from));
  p.set('to', String(to));
  const mine = filters.filter((f) => !(f.field === 'risks' && f.value === id));
  appendFilters(p, [...mine, { field: 'risks', value: id, not: false }]);
  return `/timeline?${p}`;
}

/**
 * A list of risk labels: technique ids link to `href(id)` (by default the
 * timeline's last 7 days of that technique), other values are text.
 */
export function techniqueList(risks, { href = (id) => techniqueHref(id) } = {}) {
  const values = (Array.isArray(risks) ? risks : risks === undefined || risks === null ? [] : [risks]).map(String);
  if (!values.length) return h('span', { class: 'muted' }, '—');
  return h('ul', { class: 'techniques', 'aria-label': 'ATT&CK techniques' }, values.map((value) => h('li', null,
    isTechnique(value) ? techniqueLink(value, href(value)) : h('span', { class: 'technique other', title: 'A risk this rule names' }, value))));
}

/** One technique as a link: its id and name, the full name (with its parent's) on hover. */
function techniqueLink(id, href) {
  const a = link(href, { class: 'technique', title: `Behaviors of MITRE ATT&CK technique ${id}` },
    h('span', { class: 'technique-id' }, id), ' ', techniqueNameSpan(id));
  const title = () => a.setAttribute('title', `Behaviors of MITRE ATT&CK technique ${described(id)}`);
  if (names) title();
  else waiting.add(title);
  return a;
}
