// MITRE ATT&CK technique ids (a rule's `risks`: T1059.001, from a Sigma rule's
// attack.t1059.001 tag) shown as labels that lead to the behaviors of that
// technique in the timeline. Ids only: names beside them are issue 42's. The
// links stay on this server (the page loads and calls nothing elsewhere).

import { h } from './dom.js';
import { link } from './router.js';
import { appendFilters } from './searchkit.js';

// A technique or sub-technique id; anything else a rule names as a risk is shown as plain text.
const TECHNIQUE = /^T\d{4}(\.\d{3})?$/;

export function isTechnique(value) {
  return TECHNIQUE.test(String(value ?? ''));
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
    isTechnique(value)
      ? link(href(value), { class: 'technique', title: `Behaviors of MITRE ATT&CK technique ${value}` }, value)
      : h('span', { class: 'technique other', title: 'A risk this rule names' }, value))));
}
