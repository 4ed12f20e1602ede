// Fields: what the records of a dataset hold, per source (ds/field_catalog):
// each field's name as a query writes it, its type, how many records carry
// it and some example values. A field's name opens the search for the
// records that have it; the search page suggests the same names as you type.

import { ApiError, call } from './api.js';
import { h, isTime, notice, num, replace, spinner } from './dom.js';
import { link, navigate } from './router.js';
import { readState, stateQuery, timePicker } from './searchkit.js';
import { formatTime, resolveRange } from './time.js';

const DEFAULTS = { from: 'now-24h', size: 50, extra: ['type', 'source', 'name'] };
const CACHE_MS = 60_000;
const cache = new Map(); // key -> {at, promise}

function catalog(dataType, from, to, { signal, background = false } = {}) {
  return call('ds/field_catalog', { dataType, options: { range_from: from, range_to: to } }, { signal, background });
}

/** The fields of a dataset in a range, for the query bar's suggestions; kept a minute. */
export function fieldsOf(dataType, from, to) {
  const key = `${dataType}:${Math.floor(from / 60_000)}:${Math.floor(to / 60_000)}`;
  const hit = cache.get(key);
  if (hit && Date.now() - hit.at < CACHE_MS) return hit.promise;
  const promise = catalog(dataType, from, to, { background: true }).then((res) => res.fields);
  promise.catch(() => cache.delete(key));
  cache.set(key, { at: Date.now(), promise });
  return promise;
}

const share = (n, total) => (total ? `${n * 100 / total < 1 && n ? '<1' : Math.round(n * 100 / total)}%` : '—');

function searchLink(name, type) {
  const q = `_exists_:${name.replace(/([\\:()[\]{}"~^*?/!+\-&| ])/g, '\\$1')}`;
  return link(`/search?${new URLSearchParams({ q, ...(type === 'flow' ? { type: 'flow' } : {}) })}`,
    { title: `Search the records that have ${name}` }, h('code', null, name));
}

/** Where a field comes from: "every record" when all listed sources hold it in all their records. */
function sourcesText(f, res) {
  const everywhere = res.sources.length > 1 && res.sources.every((s) => f.sources[s.source] === s.records);
  if (everywhere) return `every record of all ${res.sources.length} sources`;
  return Object.entries(f.sources).map(([s, n]) => `${s} ${num(n)}`).join(', ');
}

/** Example values; times (epoch ms) as ISO 8601 like every time on the page, the stored values on hover. */
function examplesCell(f) {
  const times = f.examples.length && f.examples.every((v) => (f.type === 'date' || isTime(f.name, v)) && /^\d{10,13}$/.test(String(v)));
  if (!times) return h('td', { class: 'examples', title: f.examples.join('\n') }, f.examples.join(' · '));
  return h('td', { class: 'examples', title: `${f.examples.join('\n')}\n(epoch milliseconds)` },
    f.examples.map((v, i) => [i ? ' · ' : '', h('time', { datetime: new Date(Number(v)).toISOString(), dataset: { raw: v } }, formatTime(Number(v)))]));
}

function table(res, state) {
  const source = state.source;
  const filter = state.name.toLowerCase();
  const total = source ? (res.sources.find((s) => s.source === source) || { records: 0 }).records : res.total;
  const rows = res.fields
    .map((f) => ({ ...f, n: source ? f.sources[source] || 0 : f.records }))
    .filter((f) => f.n > 0 && (!filter || f.name.toLowerCase().includes(filter)))
    .sort((a, b) => b.n - a.n || a.name.localeCompare(b.name));
  if (!rows.length) {
    return h('p', { class: 'muted', id: 'fields-empty' }, res.total ? 'No field matches.' : 'No records in this time range.');
  }
  return h('table', { class: ['admin-table', 'field-table'], id: 'fields-table' },
    h('caption', { class: 'sr-only' }, `Fields${source ? ` of ${source}` : ''}, most common first`),
    h('thead', null, h('tr', null, ['Field', 'Type', 'Records', 'Share', 'Sources', 'Examples']
      .map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', null, rows.map((f) => h('tr', { dataset: { field: f.name } },
      h('td', null, searchLink(f.name, state.type)),
      h('td', null, f.type),
      h('td', { class: 'num' }, num(f.n)),
      h('td', { class: 'num' }, share(f.n, total)),
      h('td', { title: Object.entries(f.sources).map(([s, n]) => `${s}: ${num(n)}`).join('\n') }, sourcesText(f, res)),
      examplesCell(f)))));
}

export function fieldsPage(root) {
  let state = readState(location.search, DEFAULTS);
  let controller = null;
  const set = (changes, opts) => navigate(`/fields?${stateQuery({ ...state, ...changes }, DEFAULTS)}`, opts);
  const controls = h('div', { class: 'search-header' });
  const sources = h('div', { id: 'field-sources' });
  const body = h('div', { id: 'fields' }, spinner('Counting fields…'));
  const status = h('p', { class: 'muted', 'aria-live': 'polite' });
  replace(root, h('main', { id: 'main', class: 'padded' }, h('h1', null, 'Fields'),
    h('p', { class: 'muted' }, 'The fields the records hold, per source, as a query names them (docs/fields.md).'),
    controls, sources, status, body));
  document.title = 'Fields · seclake';

  function drawControls(res) {
    const type = state.type === 'flow' ? 'flow' : 'event';
    const segment = (value, label) => h('button', {
      type: 'button', role: 'radio', class: ['segment', type === value ? 'on' : null],
      'aria-checked': type === value ? 'true' : 'false', dataset: { type: value },
      onClick: () => type !== value && set({ type: value === 'flow' ? 'flow' : '', source: '' }),
    }, label);
    const nameInput = h('input', {
      type: 'search', id: 'field-filter', value: state.name, placeholder: 'Filter by name', 'aria-label': 'Filter fields by name',
      onInput: (e) => { state = { ...state, name: e.target.value }; if (res) replace(body, table(res, state)); },
      // Kept in the address without a reload: the catalog is the same.
      onChange: () => history.replaceState(null, '', `/fields?${stateQuery(state, DEFAULTS)}`),
    });
    const picker = timePicker({ from: state.from, to: state.to, onChange: (from, to) => set({ from, to }) });
    replace(controls, h('div', { class: 'segments', role: 'radiogroup', 'aria-label': 'Data type' },
      segment('event', 'Events'), segment('flow', 'Flows')), nameInput, picker.element);
  }

  function drawSources(res) {
    const chip = (value, label, n) => h('button', {
      type: 'button', class: ['source-chip', state.source === value ? 'on' : null],
      'aria-pressed': state.source === value ? 'true' : 'false', dataset: { source: value },
      onClick: () => set({ source: value }),
    }, `${label} · ${num(n)}`);
    replace(sources, h('div', { class: 'field-sources', role: 'group', 'aria-label': 'Sources' },
      chip('', 'All sources', res.total), res.sources.map((s) => chip(s.source, s.source, s.records))));
  }

  async function load() {
    state = readState(location.search, DEFAULTS);
    drawControls(null);
    if (controller) controller.abort();
    controller = new AbortController();
    const range = resolveRange(state.from, state.to);
    replace(body, spinner('Counting fields…'));
    try {
      const res = await catalog(state.type === 'flow' ? 'flow' : 'event', range.from, range.to, { signal: controller.signal });
      drawControls(res);
      drawSources(res);
      replace(status, `${num(res.fields.length)} fields in ${num(res.total)} records`,
        res.otherSourcesRecords ? ` (${num(res.otherSourcesRecords)} of them from sources not listed)` : '',
        res.truncated ? '; only the most common fields are listed' : '', '.');
      replace(body, table(res, state));
    } catch (err) {
      if (err && err.name === 'AbortError') return;
      if (err instanceof ApiError && err.status === 401) return;
      replace(body, notice('error', err instanceof ApiError ? `${err.message} (HTTP ${err.status})` : String(err)));
    }
  }
  load();
  return { update: load, unmount: () => controller && controller.abort() };
}
