// Event search (ds/get_index_zoom_histogram_lv3), in the manner of Discover:
// query bar, time range, histogram, facets, hits with the query terms
// highlighted, each row expandable to the full record; events or flows.

import { expandableRow, h, highlighted, recordView } from './dom.js';
import { fieldsOf } from './page-fields.js';
import { searchPage } from './searchkit.js';
import { formatTime, resolveRange } from './time.js';

// The common names (docs/fields.md) first: they mean the same in every source.
const EVENT_FACETS = [
  { field: '@source', title: 'Source' },
  { field: '@fields.event.category', title: 'Category' },
  { field: '@fields.event.outcome', title: 'Outcome' },
  { field: '@fields.user.name', title: 'User' },
  { field: '@fields.source.ip', title: 'Source IP' },
  { field: '@sender', title: 'Sender' },
  { field: '@fields.action', title: 'Action' },
  { field: '@customer', title: 'Customer' },
];
const FLOW_FACETS = [
  { field: '@sender', title: 'Exporter' },
  { field: '@fields.sip', title: 'Source IP' },
  { field: '@fields.dip', title: 'Destination IP' },
  { field: '@fields.dp', title: 'Destination port' },
  { field: '@fields.prot', title: 'Protocol' },
  { field: '@customer', title: 'Customer' },
];
const PROTOCOLS = { 1: 'ICMP', 6: 'TCP', 17: 'UDP' };

const dataType = (state) => (state.type === 'flow' ? 'flow' : 'event');

function typeSwitch(state, set) {
  const current = dataType(state);
  const option = (value, label) => h('button', {
    type: 'button', role: 'radio', class: ['segment', current === value ? 'on' : null],
    'aria-checked': current === value ? 'true' : 'false', dataset: { type: value },
    onClick: () => {
      if (current !== value) set({ type: value === 'flow' ? 'flow' : '', filters: [], page: 1 });
    },
  }, label);
  return h('div', { class: 'segments', role: 'radiogroup', 'aria-label': 'Data type' },
    option('event', 'Events'), option('flow', 'Flows'));
}

function flowLine(src) {
  const f = src['@fields'] || {};
  const ep = (ip, port) => (ip === undefined ? '?' : port === undefined ? String(ip) : `${ip}:${port}`);
  const prot = PROTOCOLS[f.prot] || (f.prot === undefined ? '' : `proto ${f.prot}`);
  const bytes = f.totalB !== undefined ? `${Number(f.totalB).toLocaleString('en-US')} B` : '';
  return [ep(f.sip, f.sp), ' → ', ep(f.dip, f.dp), prot ? `  ${prot}` : '', bytes ? `  ${bytes}` : ''].join('');
}

function hitsTable(res, state, ctx) {
  const hits = res.hits.hits;
  const flow = dataType(state) === 'flow';
  if (!hits.length) {
    return h('div', { class: 'empty-results' }, h('h2', null, 'No hits'),
      h('p', null, 'Nothing matches in this time range. Widen the range, remove a filter or change the query.'));
  }
  const terms = res.terms || [];
  const rows = [];
  hits.forEach((hit, i) => {
    const src = hit._source || {};
    const message = flow ? flowLine(src) : src['@message'];
    rows.push(...expandableRow({
      id: `record-${i}`,
      dataId: hit._id,
      label: `Show the full record of ${formatTime(src['@timestamp'])}`,
      colspan: 5,
      cells: [
        h('td', { class: 'cell-time' }, formatTime(src['@timestamp'])),
        h('td', { class: 'cell-sender' }, src['@sender'] ?? ''),
        h('td', { class: 'cell-source' }, src['@source'] ?? ''),
        h('td', { class: 'cell-message' }, highlighted(message ?? "", terms)),
      ],
      fill: () => [recordView(
        { _id: hit._id, _index: hit._index, ...src },
        { terms, onFilter: (path, value, not) => ctx.addFilter(path, value, not) },
      )],
    }));
  });
  return h('table', { class: 'hits' },
    h('caption', { class: 'sr-only' }, `${flow ? 'Flows' : 'Events'}, newest first`),
    h('thead', null, h('tr', null,
      h('th', { scope: 'col', class: 'cell-toggle' }, h('span', { class: 'sr-only' }, 'Expand')),
      h('th', { scope: 'col' }, 'Time'),
      h('th', { scope: 'col' }, flow ? 'Exporter' : 'Sender'),
      h('th', { scope: 'col' }, 'Source'),
      h('th', { scope: 'col' }, flow ? 'Flow' : 'Message'))),
    h('tbody', null, rows));
}

export const eventsPage = searchPage({
  name: 'events',
  path: '/search',
  title: 'Search',
  call: 'ds/get_index_zoom_histogram_lv3',
  placeholder: 'Lucene query, e.g. action:deny AND NOT dport:443',
  defaults: { from: 'now-24h', size: 50, extra: ['type'] },
  histogram: true,
  histogramKey: '@timestamp',
  facets: (state) => (dataType(state) === 'flow' ? FLOW_FACETS : EVENT_FACETS),
  kargs: (state, options) => {
    const type = dataType(state);
    return {
      partition: 'default',
      dataType: type,
      options: { ...options, dateFacetField: '@timestamp', dataType: type, sortField: '@timestamp', sortOrder: 'desc' },
    };
  },
  toolbar: typeSwitch,
  results: hitsTable,
  suggest: (state) => {
    const range = resolveRange(state.from, state.to);
    return fieldsOf(dataType(state), range.from, range.to);
  },
});
