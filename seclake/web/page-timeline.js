// The behavior timeline (ds/fsm_behavior_search): behaviors over time with
// facets on behavior, rule, key type, risks and score level.

import { techniqueHref, techniqueList, techniqueName } from './attack.js';
import { expandableRow, h, highlighted, recordView } from './dom.js';
import { link } from './router.js';
import { searchPage } from './searchkit.js';
import { formatTime } from './time.js';

export const TIMELINE_FACETS = [
  { field: 'behavior', title: 'Behavior' },
  { field: 'behaviorRule', title: 'Rule' },
  { field: 'keyType', title: 'Key type' },
  { field: 'risks', title: 'ATT&CK technique', describe: (id) => techniqueName(id) },
  { field: 'scoreLevel', title: 'Score level' },
  { field: 'customer', title: 'Customer' },
];

/** A score level badge: the colour comes from the level's class. */
export function levelBadge(level, score) {
  const name = String(level ?? '');
  const known = ['critical', 'serious', 'high', 'medium', 'low'].includes(name) ? name : 'none';
  return h('span', { class: ['level', `level-${known}`], title: `Score level ${name || 'none'}` },
    name === '0' || !name ? 'none' : name, score !== undefined ? h('span', { class: 'level-score' }, String(score)) : null);
}

/** Events of a behavior's key, five minutes either side of it. */
export function eventsLink(src) {
  const q = `"${String(src.key ?? '').replace(/["\\]/g, '\\$&')}"`;
  const from = src.timestamp - 5 * 60e3;
  const to = src.timestamp + 5 * 60e3;
  const params = new URLSearchParams({ q, from: String(from), to: String(to) });
  if (src.dataset === 'flow') params.set('type', 'flow');
  return link(`/search?${params}`, { class: 'small' }, `${src.dataset === 'flow' ? 'Flows' : 'Events'} of ${src.key} ±5 min`);
}

/**
 * Behaviors as a table. `techniqueHref(id)` is where an ATT&CK technique id
 * leads (the full table only; default: the timeline of that technique).
 */
export function behaviorTable(res, { terms = [], onFilter = null, compact = false, techniqueHref: href = techniqueHref } = {}) {
  const hits = res.hits.hits;
  if (!hits.length) {
    return h('div', { class: 'empty-results' }, h('h2', null, 'No behaviors'),
      h('p', null, 'No behavior matches in this time range.'));
  }
  const rows = [];
  const cols = compact ? 5 : 8;
  hits.forEach((hit, i) => {
    const src = hit._source || {};
    rows.push(...expandableRow({
      id: `behavior-${compact ? 'c' : 'm'}-${i}`,
      dataId: hit._id,
      label: `Show the behavior ${src.behavior} of ${src.key}`,
      colspan: cols,
      cells: [
        h('td', { class: 'cell-time' }, formatTime(src.timestamp)),
        h('td', null, levelBadge(src.scoreLevel, src.riskScore)),
        h('td', null, highlighted(src.behavior, terms, 'behavior')),
        compact ? null : h('td', { class: 'cell-techniques' }, techniqueList(src.risks, { href })),
        h('td', { class: 'cell-key' }, highlighted(src.key, terms, 'key'), h('span', { class: 'key-type' }, src.keyType ?? '')),
        compact ? null : h('td', { class: 'cell-rule' }, src.behaviorRule ? ruleLink(src.behaviorRule) : ''),
        compact ? null : h('td', { class: 'cell-message' }, highlighted(src.description ?? '', terms, 'description')),
      ],
      fill: () => [h('p', { class: 'detail-links' }, eventsLink(src)), recordView({ _id: hit._id, ...src }, { terms, onFilter })],
    }));
  });
  return h('table', { class: ['hits', 'behaviors', compact ? 'compact' : null] },
    h('caption', { class: 'sr-only' }, 'Behaviors, newest first'),
    h('thead', null, h('tr', null,
      h('th', { scope: 'col', class: 'cell-toggle' }, h('span', { class: 'sr-only' }, 'Expand')),
      h('th', { scope: 'col' }, 'Time'),
      h('th', { scope: 'col' }, 'Level'),
      h('th', { scope: 'col' }, 'Behavior'),
      compact ? null : h('th', { scope: 'col' }, h('abbr', { title: 'MITRE ATT&CK techniques' }, 'ATT&CK')),
      h('th', { scope: 'col' }, 'Key'),
      compact ? null : h('th', { scope: 'col' }, 'Rule'),
      compact ? null : h('th', { scope: 'col' }, 'Description'))),
    h('tbody', null, rows));
}

/** The rule of a behavior, on the rules page (a Sigma rule's name is its id). */
export function ruleLink(name) {
  const q = `name:"${String(name).replace(/["\\]/g, '\\$&')}"`;
  return link(`/rules?${new URLSearchParams({ q })}`, { class: 'rule-link', title: 'Show this rule' }, String(name));
}

/** Plain terms of a query, for highlighting where a response says nothing of what matched (the summaries'). */
export function plainTerms(q) {
  return (String(q).match(/"[^"]+"|[^\s()"]+/g) || [])
    .map((t) => t.replace(/^[+-]/, '').replace(/^[\w.@]+:/, '').replace(/^"|"$/g, ''))
    .filter((t) => t && !/^(AND|OR|NOT|TO|\*|\[.*|.*\]|\{.*|.*\})$/.test(t) && !/^[<>=]/.test(t));
}

export const timelinePage = searchPage({
  name: 'timeline',
  path: '/timeline',
  title: 'Timeline',
  call: 'ds/fsm_behavior_search',
  placeholder: 'e.g. riskScore:[3000 TO *] AND keyType:ip',
  defaults: { from: 'now-7d', size: 50 },
  histogram: true,
  histogramKey: 'timestamp',
  facets: () => TIMELINE_FACETS,
  kargs: (state, options) => ({
    options: { ...options, range_field: 'timestamp', sortField: 'timestamp', sortOrder: 'desc' },
  }),
  results: (res, state, ctx) => behaviorTable(res, {
    terms: res.highlight || plainTerms(state.q),
    onFilter: ctx.addFilter,
    // A technique narrows this search (its query, filters and range kept).
    techniqueHref: (id) => techniqueHref(id, state),
  }),
});
