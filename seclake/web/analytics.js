// Piped queries on the search page (docs/analytics.md, "Web"): ds/query's answer
// as a table (sortable, CSV download) and a chart when its shape is one (lines
// per group for a timechart, bars for counts by one field); the URL keeps it.

import { ApiError, call } from './api.js';
import { h, num, replace, spinner, svg } from './dom.js';
import { navigate } from './router.js';
import { QUERY_HAS_ERROR, queryBar, readState, showFailure, stateQuery, timePicker } from './searchkit.js';
import { formatTime, resolveRange, timeZone } from './time.js';

// Which view to show: a `|` then a command. The server decides what the text
// means; a query taken for piped without a command is answered as records.
const PIPE = /(^|[^|])\|(?!\|)\s*(WHERE|EVAL|STATS|SORT|LIMIT|KEEP|DROP|RENAME)(\s|$)/i;

export function isPiped(q) {
  return PIPE.test(q || '');
}

const NUMERIC = new Set(['long', 'double']);
// Most series and bars drawn.
const MAX_SERIES = 12;
const MAX_BARS = 40;
const COLORS = ['#1f5fbf', '#d9480f', '#2b8a3e', '#862e9c', '#c92a2a', '#0b7285', '#e67700', '#495057'];

// The search page's mount, or the analytics view while the query is piped.
export function withAnalytics(searchMount, options) {
  return function mount(root) {
    let view = null;
    let piped = null;
    function choose() {
      const want = isPiped(new URLSearchParams(location.search).get('q'));
      if (view && want === piped) {
        view.update();
        return;
      }
      if (view && view.unmount) view.unmount();
      piped = want;
      view = want ? analyticsView(root, options) : searchMount(root);
    }
    choose();
    return {
      update: choose,
      unmount() { if (view && view.unmount) view.unmount(); },
      focusQuery() { if (view && view.focusQuery) view.focusQuery(); },
    };
  };
}

const DEFAULTS = { from: 'now-24h', size: 50, extra: ['type'] };

function analyticsView(root, options) {
  let state = readState(location.search, DEFAULTS);
  let controller = null;
  let generation = 0;
  let bar;
  let last = null; // {columns, values} shown
  let sort = null; // {index, descending}

  const header = h('div', { class: 'search-header' });
  const chart = h('div', { class: 'chart analytics-chart', id: 'analytics-chart' });
  const status = h('div', { class: 'result-status', 'aria-live': 'polite' });
  const tools = h('div', { class: 'pager-slot' });
  const results = h('div', { class: 'results', id: 'results', tabindex: '-1' });
  replace(root, h('div', { class: ['search-page', 'page-analytics'] }, header,
    h('div', { class: 'search-body' },
      h('main', { class: 'search-main', id: 'main' }, chart, h('div', { class: 'status-row' }, status, tools), results))));

  function set(changes) {
    navigate(`${options.path}?${stateQuery({ ...state, ...changes, page: 1, filters: [] }, DEFAULTS)}`);
  }

  function drawControls() {
    bar = queryBar({ value: state.q, placeholder: 'query | STATS n = COUNT(*) BY field', onSubmit: (q) => set({ q }) });
    const picker = timePicker({ from: state.from, to: state.to, onChange: (from, to) => set({ from, to }) });
    replace(header, h('h1', { class: 'page-title' }, options.title), options.toolbar(state, set), bar.form, picker.element);
    header.appendChild(bar.errorBox);
  }

  async function run() {
    const mine = ++generation;
    if (controller) controller.abort();
    controller = new AbortController();
    const range = resolveRange(state.from, state.to);
    bar.hideError();
    replace(status, spinner('Running…'));
    results.setAttribute('aria-busy', 'true');
    try {
      const res = await call('ds/query', {
        query: state.q, dataType: options.dataType(state), range_from: range.from, range_to: range.to,
      }, { signal: controller.signal });
      if (mine !== generation) return;
      last = res;
      sort = null;
      results.removeAttribute('aria-busy');
      replace(status, h('strong', { class: 'total' }, num(res.values.length)), res.values.length === 1 ? ' row' : ' rows',
        h('span', { class: 'muted' }, ` · ${formatTime(range.from, { seconds: false })} → ${formatTime(range.to, { seconds: false })} ${timeZone()} · ${res.took} ms`));
      replace(tools, h('button', { type: 'button', id: 'csv-download', onClick: () => download(res) }, 'Download CSV'));
      drawTable();
      drawChart(res);
      document.title = `${options.title} · ${state.q} · seclake`;
    } catch (err) {
      if (mine !== generation || (err && err.name === 'AbortError')) return;
      if (err instanceof ApiError && err.status === 401) return;
      results.removeAttribute('aria-busy');
      last = null;
      replace(status, '');
      replace(tools, '');
      replace(chart, err instanceof ApiError && err.position !== null
        ? h('p', { class: 'muted small notice-empty' }, QUERY_HAS_ERROR) : '');
      showFailure(bar, results, err);
    }
  }

  function drawTable() {
    const { columns } = last;
    let rows = last.values;
    if (!columns.length || !rows.length) {
      replace(results, h('div', { class: 'empty-results' }, h('h2', null, 'No rows'), h('p', null, 'Widen the range or change the query.')));
      return;
    }
    if (sort) {
      const { index, descending } = sort;
      // Nulls last either way; ties keep the server's order.
      rows = rows.map((row, i) => [row, i]).sort(([a, i], [b, j]) => {
        const [x, y] = [a[index] ?? null, b[index] ?? null];
        if (x === null || y === null) return x === y ? i - j : (x === null ? 1 : -1);
        return compare(x, y) * (descending ? -1 : 1) || i - j;
      }).map(([row]) => row);
    }
    const head = columns.map((c, i) => {
      const on = sort && sort.index === i;
      return h('th', {
        scope: 'col', class: NUMERIC.has(c.type) ? 'num' : null,
        'aria-sort': on ? (sort.descending ? 'descending' : 'ascending') : 'none',
      }, h('button', {
        type: 'button', class: 'sort-button', title: c.type, dataset: { column: c.name },
        onClick: () => { sort = { index: i, descending: on ? !sort.descending : NUMERIC.has(c.type) }; drawTable(); },
      }, c.name, on ? (sort.descending ? ' ▼' : ' ▲') : ''));
    });
    replace(results, h('table', { class: 'hits analytics-table', id: 'analytics-table' },
      h('thead', null, h('tr', null, head)),
      h('tbody', null, rows.map((row) => h('tr', null, row.map((v, i) => h('td', {
        class: NUMERIC.has(columns[i].type) ? 'num' : null,
      }, text(v, columns[i].type))))))));
  }

  function drawChart(res) {
    const shape = chartShape(res);
    if (!shape) {
      replace(chart, '');
      return;
    }
    // The frame's padding and border are inside clientWidth.
    const width = Math.max(320, (chart.clientWidth || 900) - 34);
    replace(chart, shape.kind === 'lines' ? lineChart(shape, width) : barChart(shape, width));
  }

  function update() {
    state = readState(location.search, DEFAULTS);
    drawControls();
    run();
  }

  update();
  return {
    update,
    unmount() { generation++; if (controller) controller.abort(); },
    focusQuery() { bar.input.focus(); bar.input.select(); },
  };
}

// -- values

function compare(a, b) {
  if (a === b) return 0;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a) < String(b) ? -1 : 1;
}

// A date as epoch ms (ISO 8601 sent).
function ms(value) {
  if (typeof value === 'number') return value;
  const t = typeof value === 'string' ? Date.parse(value) : NaN;
  return Number.isFinite(t) ? t : null;
}

/** A cell as text: dates in the page's time zone, lists joined, null empty. */
export function text(value, type) {
  if (value === null || value === undefined) return '';
  if (Array.isArray(value)) return value.map((v) => text(v, type)).join(', ');
  if (type === 'date' && ms(value) !== null) return formatTime(ms(value), { millis: ms(value) % 1000 !== 0 });
  if (typeof value === 'object') return JSON.stringify(value);
  if (typeof value === 'number') return value.toLocaleString('en-US', { maximumFractionDigits: 6 });
  return String(value);
}

/** RFC 4180 CSV of a result: dates as ISO 8601 (UTC), numbers as sent. */
export function toCsv({ columns, values }) {
  const cell = (v, type) => {
    let s;
    if (v === null || v === undefined) s = '';
    else if (Array.isArray(v)) s = v.map((x) => cell(x, type)).join(', ');
    else if (type === 'date' && ms(v) !== null) s = new Date(ms(v)).toISOString();
    else if (typeof v === 'object') s = JSON.stringify(v);
    else s = String(v);
    return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  const lines = [columns.map((c) => cell(c.name)).join(',')];
  for (const row of values) lines.push(row.map((v, i) => cell(v, columns[i].type)).join(','));
  return `${lines.join('\r\n')}\r\n`;
}

function download(res) {
  const url = URL.createObjectURL(new Blob([toCsv(res)], { type: 'text/csv' }));
  const a = h('a', { href: url, download: 'seclake-query.csv' });
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

// -- charts

// A chart's shape: a date, a number and any groups -> lines; a keyword and a number -> bars.
export function chartShape({ columns, values }) {
  if (!values.length) return null;
  const where = (test) => columns.flatMap((c, i) => (test(c.type) ? [i] : []));
  const dates = where((t) => t === 'date');
  const numbers = where((t) => NUMERIC.has(t));
  const others = where((t) => !NUMERIC.has(t) && t !== 'date');
  if (dates.length === 1 && numbers.length >= 1) {
    const [t] = dates;
    const y = numbers[0];
    const series = new Map();
    for (const row of values) {
      const x = ms(row[t]);
      if (x === null || typeof row[y] !== 'number') continue;
      const key = others.map((i) => (row[i] === null ? '(null)' : String(row[i]))).join(' · ') || columns[y].name;
      if (!series.has(key)) series.set(key, []);
      series.get(key).push([x, row[y]]);
    }
    // The largest groups, when too many to tell apart.
    const ranked = [...series].sort((a, b) => total(b[1]) - total(a[1])).slice(0, MAX_SERIES);
    for (const [, points] of ranked) points.sort((a, b) => a[0] - b[0]);
    return { kind: 'lines', label: columns[y].name, series: ranked, omitted: series.size - ranked.length };
  }
  if (columns.length === 2 && numbers.length === 1 && others.length === 1) {
    const [y] = numbers;
    const [x] = others;
    const bars = values.filter((row) => typeof row[y] === 'number').map((row) => [row[x] === null ? '(null)' : String(row[x]), row[y]]);
    return { kind: 'bars', label: columns[y].name, by: columns[x].name, bars: bars.slice(0, MAX_BARS), omitted: Math.max(0, bars.length - MAX_BARS) };
  }
  return null;
}

const total = (points) => points.reduce((s, p) => s + p[1], 0);

const frame = (width, height, label) => svg('svg', { width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': label });
const label = (x, y, t, anchor = null) => svg('text', { x, y, 'font-size': 11, fill: '#495057', 'text-anchor': anchor }, t);

function lineChart(shape, width) {
  const height = 220;
  const pad = { left: 56, right: 12, top: 12, bottom: 28 };
  const points = shape.series.flatMap(([, p]) => p);
  const x0 = Math.min(...points.map((p) => p[0]));
  const x1 = Math.max(...points.map((p) => p[0]));
  const y1 = Math.max(0, ...points.map((p) => p[1])) || 1;
  const y0 = Math.min(0, ...points.map((p) => p[1]));
  const sx = (x) => pad.left + (x1 === x0 ? 0.5 : (x - x0) / (x1 - x0)) * (width - pad.left - pad.right);
  const sy = (y) => pad.top + (1 - (y - y0) / (y1 - y0)) * (height - pad.top - pad.bottom);
  const el = frame(width, height, `${shape.label} over time, ${shape.series.length} series`);
  el.append(svg('line', { x1: pad.left, x2: width - pad.right, y1: sy(0), y2: sy(0), stroke: '#adb5bd' }),
    label(4, pad.top + 10, num(y1)), label(pad.left, height - 8, formatTime(x0, { seconds: false })),
    label(width - pad.right, height - 8, formatTime(x1, { seconds: false }), 'end'));
  shape.series.forEach(([name, pts], i) => {
    const d = pts.map(([x, y], k) => `${k ? 'L' : 'M'}${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(' ');
    const path = svg('path', { d, fill: 'none', stroke: COLORS[i % COLORS.length], 'stroke-width': 2, class: 'series', 'data-series': name });
    path.appendChild(svg('title', null, name));
    el.appendChild(path);
    if (pts.length === 1) el.appendChild(svg('circle', { cx: sx(pts[0][0]), cy: sy(pts[0][1]), r: 3, fill: COLORS[i % COLORS.length] }));
  });
  const legend = h('div', { class: 'legend small' }, shape.series.map(([name], i) => h('span', { class: 'legend-item' },
    h('span', { style: { color: COLORS[i % COLORS.length] }, 'aria-hidden': 'true' }, '■ '), name, ' ')),
  shape.omitted ? h('span', { class: 'muted' }, `(${shape.omitted} smaller series not drawn)`) : null);
  return h('figure', { class: 'analytics-figure', dataset: { chart: 'lines' } }, el, legend);
}

function barChart(shape, width) {
  const row = 22;
  const labelWidth = Math.min(260, Math.round(width * 0.3));
  const height = shape.bars.length * row + 8;
  const max = Math.max(0, ...shape.bars.map((b) => b[1])) || 1;
  const el = frame(width, height, `${shape.label} by ${shape.by}`);
  shape.bars.forEach(([key, value], i) => {
    const y = 4 + i * row;
    const w = Math.max(0, (value / max) * (width - labelWidth - 90));
    el.appendChild(label(labelWidth - 6, y + 15, key.length > 40 ? `${key.slice(0, 39)}…` : key, 'end'));
    const rect = svg('rect', { x: labelWidth, y: y + 3, width: w.toFixed(1), height: row - 6, fill: COLORS[0], class: 'bar', 'data-key': key });
    rect.appendChild(svg('title', null, `${key}: ${value}`));
    el.appendChild(rect);
    el.appendChild(label(labelWidth + w + 6, y + 15, num(value)));
  });
  return h('figure', { class: 'analytics-figure', dataset: { chart: 'bars' } }, el,
    shape.omitted ? h('figcaption', { class: 'muted small' }, `The first ${shape.bars.length} rows; ${shape.omitted} more in the table.`) : null);
}

