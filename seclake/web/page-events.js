// Event search (ds/get_index_zoom_histogram_lv3), in the manner of Discover:
// query bar, time range, histogram, facets, hits with the query terms
// highlighted, each row expandable to the full record; events or flows.

import { withAnalytics } from './analytics.js';
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
  { field: '@fields.prot', title: 'Protocol', describe: (p) => PROTOCOLS[p] || '' },
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

// A flow's fields (docs/fields.md) by readable name; the stored name stays on hover.
const FLOW_FIELDS = {
  sip: 'Source IP', sp: 'Source port', dip: 'Destination IP', dp: 'Destination port', prot: 'Protocol',
  totalB: 'Bytes', txB: 'Bytes sent', rxB: 'Bytes received', txP: 'Packets sent', rxP: 'Packets received',
  dur: 'Duration', time_ms: 'Flow start',
};
const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
const compact = new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 1 });

/** 1048576 -> "1.0 MiB" (binary units, as the interfaces of network tools). */
export function bytesLabel(n) {
  const v = Number(n);
  if (!Number.isFinite(v)) return String(n ?? '');
  let i = 0;
  let x = Math.abs(v);
  while (x >= 1024 && i < BYTE_UNITS.length - 1) { x /= 1024; i++; }
  return `${v < 0 ? '-' : ''}${i ? x.toFixed(x < 100 ? 1 : 0) : x}\u00a0${BYTE_UNITS[i]}`; // no break inside
}

/** 3543 -> "3.5K" packets. */
export function countLabel(n) {
  const v = Number(n);
  return Number.isFinite(v) ? (Math.abs(v) < 1000 ? String(v) : compact.format(v)) : String(n ?? '');
}

/** 121 ms, 2.5 s, 3 min 20 s. */
function durationText(ms) {
  const v = Number(ms);
  if (!Number.isFinite(v)) return String(ms ?? '');
  if (v < 1000) return `${v}\u00a0ms`;
  if (v < 60e3) return `${(v / 1000).toFixed(1)} s`;
  return `${Math.floor(v / 60e3)} min ${Math.round((v % 60e3) / 1000)} s`;
}

const protocol = (p) => PROTOCOLS[p] || (p === undefined ? '' : `proto ${p}`);

/** A flow field's readable name and value in the record view. */
function describeFlowField(path, value) {
  const key = path.startsWith('@fields.') ? path.slice(8) : null;
  if (!key || !FLOW_FIELDS[key]) return null;
  const label = FLOW_FIELDS[key];
  if (/B$/.test(key)) return { label, text: bytesLabel(value) };
  if (/P$/.test(key)) return { label, text: countLabel(value) };
  if (key === 'dur') return { label, text: durationText(value) };
  if (key === 'prot') return { label, text: `${protocol(Number(value))} (${value})` };
  return { label };
}

function flowCells(src) {
  const f = src['@fields'] || {};
  const ep = (ip, port) => (ip === undefined ? '?' : port === undefined ? String(ip) : `${ip}:${port}`);
  const raw = (v) => (v === undefined ? null : String(v));
  return [
    h('td', { class: 'cell-endpoint' }, ep(f.sip, f.sp)),
    h('td', { class: 'cell-endpoint' }, ep(f.dip, f.dp)),
    h('td', { title: raw(f.prot) }, protocol(f.prot)),
    h('td', { class: 'num', title: f.totalB === undefined ? null : `${Number(f.totalB).toLocaleString('en-US')} bytes` }, f.totalB === undefined ? '' : bytesLabel(f.totalB)),
    h('td', { class: 'num', title: f.txP === undefined && f.rxP === undefined ? null : `${Number(f.txP || 0) + Number(f.rxP || 0)} packets` },
      f.txP === undefined && f.rxP === undefined ? '' : countLabel(Number(f.txP || 0) + Number(f.rxP || 0))),
    h('td', { class: 'num', title: raw(f.dur) && `${f.dur} ms` }, f.dur === undefined ? '' : durationText(f.dur)),
  ];
}

/** The line a person reads: ECS message where ingestion made one (docs/fields.md, "The message"), else the raw line. */
function messageCell(src, marks) {
  const readable = (src['@fields'] || {}).message;
  const [text, path] = typeof readable === 'string' && readable ? [readable, '@fields.message'] : [src['@message'] ?? '', '@message'];
  return h('td', { class: 'cell-message', dataset: { field: path } }, highlighted(text, marks, path));
}

function hitsTable(res, state, ctx) {
  const hits = res.hits.hits;
  const flow = dataType(state) === 'flow';
  if (!hits.length) {
    return h('div', { class: 'empty-results' }, h('h2', null, 'No hits'),
      h('p', null, 'Nothing matches in this time range. Widen the range, remove a filter or change the query.'));
  }
  // What each term matched, and where (highlight.js); plain words from a server that sends terms only.
  const terms = res.highlight || res.terms || [];
  const rows = [];
  hits.forEach((hit, i) => {
    const src = hit._source || {};
    rows.push(...expandableRow({
      id: `record-${i}`,
      dataId: hit._id,
      label: `Show the full record of ${formatTime(src['@timestamp'])}`,
      colspan: flow ? 9 : 5,
      cells: [
        h('td', { class: 'cell-time' }, formatTime(src['@timestamp'])),
        h('td', { class: 'cell-sender' }, src['@sender'] ?? ''),
        ...(flow ? flowCells(src) : [
          h('td', { class: 'cell-source' }, src['@source'] ?? ''),
          messageCell(src, terms),
        ]),
      ],
      fill: () => [recordView(
        { _id: hit._id, _index: hit._index, ...src },
        { terms, onFilter: (path, value, not) => ctx.addFilter(path, value, not), describe: flow ? describeFlowField : null },
      )],
    }));
  });
  // Readable column names; the stored field names on hover.
  const column = (label, field, cls = null) => h('th', { scope: 'col', class: cls, title: field ? `Field: ${field}` : null }, label);
  return h('table', { class: ['hits', flow ? 'flows' : null] },
    h('caption', { class: 'sr-only' }, `${flow ? 'Flows' : 'Events'}, newest first`),
    h('thead', null, h('tr', null,
      h('th', { scope: 'col', class: 'cell-toggle' }, h('span', { class: 'sr-only' }, 'Expand')),
      column('Time', '@timestamp'),
      column(flow ? 'Exporter' : 'Sender', '@sender'),
      ...(flow ? [
        column('Source', '@fields.sip, @fields.sp'), column('Destination', '@fields.dip, @fields.dp'),
        column('Protocol', '@fields.prot'), column('Bytes', '@fields.totalB', 'num'),
        column('Packets', '@fields.txP + @fields.rxP', 'num'), column('Duration', '@fields.dur', 'num'),
      ] : [column('Source', '@source'), column('Message', 'message, else @message')]))),
    h('tbody', null, rows));
}

// A query with a command pipe shows the analytics view instead (analytics.js).
export const eventsPage = withAnalytics(searchPage({
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
}), { path: '/search', title: 'Search', dataType, toolbar: typeSwitch });
