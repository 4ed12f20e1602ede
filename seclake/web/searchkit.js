// What the event, timeline and summary pages share: search state in the URL,
// the query bar (with the server's syntax error shown at its position), the
// time range picker, filter chips, the facet sidebar, the histogram and
// paging. Hits and aggregations are fetched in parallel and each is drawn as
// soon as it arrives.

import { ApiError, call } from './api.js';
import { clear, h, notice, num, replace, spinner, svg } from './dom.js';
import { navigate } from './router.js';
import { attachSuggestions } from './suggest.js';
import {
  PRESETS, formatTime, fromInputText, intervalLabel, presetOf, rangeLabel, resolveRange, timeTicks, timeZone, toInputText,
} from './time.js';

const MAX_WINDOW = 10000;
export const PAGE_SIZES = [20, 50, 100];

// The message a page's results, histogram and fields show while the query has an error (the error itself is shown once, under the query bar).
export const QUERY_HAS_ERROR = 'No results: the query has an error (see above).';

// A search that failed: a query error under the query bar at its position, anything else in the results.
export function showFailure(bar, results, err) {
  if (err instanceof ApiError && err.position !== null) {
    bar.showError(err);
    replace(results, h('div', { class: 'empty-results query-failed' }, h('h2', null, 'No results'),
      h('p', null, 'The query has an error: correct it above and search again.')));
  } else {
    replace(results, notice('error', err instanceof ApiError ? `${err.message} (HTTP ${err.status})` : String(err)));
  }
}

// -- state <-> URL ------------------------------------------------------------

/** Search state from a query string: {q, from, to, filters: [{field, value, not}], page, size, ...extra}. */
export function readState(search, defaults) {
  const p = new URLSearchParams(search);
  const state = {
    q: p.get('q') || '',
    from: p.get('from') || defaults.from,
    to: p.get('to') || 'now',
    filters: [],
    page: Math.max(1, parseInt(p.get('page') || '1', 10) || 1),
    size: PAGE_SIZES.includes(Number(p.get('size'))) ? Number(p.get('size')) : defaults.size || 50,
  };
  state.filters = readFilters(p);
  for (const key of defaults.extra || []) state[key] = p.get(key) || '';
  if (!resolveRange(state.from, state.to)) {
    state.from = defaults.from;
    state.to = 'now';
  }
  return state;
}

/** The filters of URL parameters: f=+field:value (in), f=-field:value (out). */
export function readFilters(params) {
  const filters = [];
  for (const f of params.getAll('f')) {
    const not = f.startsWith('-');
    const body = f.replace(/^[+-]/, '');
    const i = body.indexOf(':');
    if (i > 0) filters.push({ field: body.slice(0, i), value: body.slice(i + 1), not });
  }
  return filters;
}

export function appendFilters(params, filters) {
  for (const f of filters) params.append('f', `${f.not ? '-' : '+'}${f.field}:${f.value}`);
  return params;
}

export function stateQuery(state, defaults) {
  const p = new URLSearchParams();
  if (state.q) p.set('q', state.q);
  p.set('from', String(state.from));
  p.set('to', String(state.to));
  appendFilters(p, state.filters);
  if (state.page > 1) p.set('page', String(state.page));
  if (state.size !== (defaults.size || 50)) p.set('size', String(state.size));
  for (const key of defaults.extra || []) if (state[key]) p.set(key, state[key]);
  return p.toString();
}

export function facetFilters(filters) {
  const group = (not) => { // one entry per field: a hit with any of the values is left out
    const byField = new Map();
    for (const f of filters.filter((x) => x.not === not)) {
      if (!byField.has(f.field)) byField.set(f.field, []);
      byField.get(f.field).push(f.value);
    }
    return [...byField].map(([field, terms]) => ({ field, terms }));
  };
  // Two filters in on one field mean "either value" on the server: one entry per value keeps "both".
  const must = filters.filter((x) => !x.not).map((f) => ({ field: f.field, terms: [f.value] }));
  return { mustFilters: must, mustNotFilters: group(true) };
}

// -- the query bar --------------------------------------------------------------

export function queryBar({ value, placeholder, onSubmit, extras = [], suggest = null }) {
  const input = h('input', {
    type: 'text', id: 'query', name: 'q', value, placeholder, autocomplete: 'off', spellcheck: 'false',
    'aria-label': 'Query (Lucene syntax)', 'aria-describedby': 'query-help', class: 'query-input',
  });
  const errorBox = h('div', { id: 'query-error', class: 'query-error', hidden: true });
  const form = h('form', { class: 'query-bar', role: 'search', onSubmit: (e) => { e.preventDefault(); onSubmit(input.value); } },
    h('div', { class: 'query-field' }, input,
      suggest ? attachSuggestions(input, suggest).list : null,
      h('span', { id: 'query-help', class: 'sr-only' },
        suggest ? 'Press / to focus, Enter to search; field names are suggested as you type.' : 'Press / to focus, Enter to search.')),
    ...extras,
    h('button', { type: 'submit', class: 'primary', id: 'search-button' }, 'Search'),
  );
  input.addEventListener('input', () => hideError());
  function hideError() {
    errorBox.hidden = true;
    input.removeAttribute('aria-invalid');
    input.setAttribute('aria-describedby', 'query-help');
  }
  function showError(err) {
    const position = err instanceof ApiError ? err.position : null;
    const text = input.value;
    const children = [h('div', { class: 'query-error-message' }, err.message)];
    if (position !== null && position <= text.length) {
      // One mark only: the query as typed, and a caret under the position.
      children.push(h('pre', { class: 'query-caret', 'aria-hidden': 'true' },
        h('span', { class: 'caret-text' }, text),
        '\n',
        h('span', { class: 'caret-line' }, ' '.repeat(position) + '^')));
      input.focus();
      input.setSelectionRange(position, Math.min(position + 1, text.length));
    }
    replace(errorBox, ...children);
    errorBox.hidden = false;
    errorBox.setAttribute('role', 'alert');
    input.setAttribute('aria-invalid', 'true');
    input.setAttribute('aria-describedby', 'query-help query-error');
  }
  return { form, input, errorBox, showError, hideError };
}

// -- the time range picker ------------------------------------------------------

export function timePicker({ from, to, onChange }) {
  const button = h('button', {
    type: 'button', class: 'time-button', id: 'time-button', 'aria-haspopup': 'dialog', 'aria-expanded': 'false',
    title: `Time range (${timeZone()})`,
  }, h('span', { class: 'time-icon', 'aria-hidden': 'true' }, '◷'), rangeLabel(from, to));
  const range = resolveRange(from, to) || resolveRange('now-24h', 'now');
  // Text inputs in ISO 8601 (24 h), as every time on the page: a datetime-local
  // input would show the browser's locale (12 h with AM/PM in en-US).
  const timeInput = (id, ms) => h('input', {
    type: 'text', id, value: toInputText(ms), class: 'mono time-input', inputmode: 'numeric', autocomplete: 'off',
    spellcheck: 'false', placeholder: 'YYYY-MM-DD HH:MM', 'aria-describedby': 'abs-hint',
  });
  const fromInput = timeInput('abs-from', range.from);
  const toInput = timeInput('abs-to', range.to);
  const problem = h('div', { class: 'field-problem', role: 'alert' });
  const panel = h('div', { class: 'popover time-panel', role: 'dialog', 'aria-label': 'Time range', hidden: true },
    h('div', { class: 'presets' },
      h('h2', { class: 'minor' }, 'Quick'),
      PRESETS.map((p) => h('button', {
        type: 'button', class: ['preset', presetOf(from, to) === p ? 'current' : null], dataset: { preset: p.key },
        onClick: () => { close(); onChange(`now-${p.key}`, 'now'); },
      }, p.label))),
    h('form', { class: 'absolute', noValidate: true, onSubmit: (e) => {
      e.preventDefault();
      const f = fromInputText(fromInput.value);
      const t = fromInputText(toInput.value);
      for (const [input, value] of [[fromInput, f], [toInput, t]]) {
        if (value === null) input.setAttribute('aria-invalid', 'true');
        else input.removeAttribute('aria-invalid');
      }
      const bad = f === null ? ['From', fromInput] : t === null ? ['To', toInput] : null;
      if (bad) {
        bad[1].focus();
        return replace(problem, `${bad[0]}: "${bad[1].value.slice(0, 40)}" is not a time; write YYYY-MM-DD HH:MM (24 h), e.g. ${toInputText(Date.now())}.`);
      }
      if (f >= t) return replace(problem, 'The start must be before the end.');
      close();
      onChange(String(f), String(t));
    } },
      h('h2', { class: 'minor' }, 'Absolute'),
      h('label', { for: 'abs-from' }, 'From'), fromInput,
      h('label', { for: 'abs-to' }, 'To'), toInput,
      problem,
      h('p', { class: 'hint', id: 'abs-hint' }, `YYYY-MM-DD HH:MM, 24 h, in ${timeZone()}.`),
      h('button', { type: 'submit', class: 'primary' }, 'Apply')),
  );
  const outside = (e) => {
    if (!panel.contains(e.target) && !button.contains(e.target)) close();
  };
  function open() {
    panel.hidden = false;
    button.setAttribute('aria-expanded', 'true');
    document.addEventListener('pointerdown', outside);
    (panel.querySelector('.preset.current') || panel.querySelector('.preset')).focus();
  }
  function close(returnFocus = false) {
    if (panel.hidden) return;
    panel.hidden = true;
    button.setAttribute('aria-expanded', 'false');
    document.removeEventListener('pointerdown', outside);
    if (returnFocus) button.focus();
  }
  button.addEventListener('click', () => (panel.hidden ? open() : close()));
  panel.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') { e.stopPropagation(); close(true); }
  });
  return { element: h('div', { class: 'time-picker' }, button, panel), close, isOpen: () => !panel.hidden };
}

// -- filter chips ---------------------------------------------------------------

export function chips(filters, { onRemove, onInvert }) {
  if (!filters.length) return h('div', { class: 'chips empty' });
  return h('ul', { class: 'chips', 'aria-label': 'Filters' },
    filters.map((f, i) => h('li', { class: ['chip', f.not ? 'not' : null] },
      h('button', { type: 'button', class: 'chip-label', title: f.not ? 'Excluded: click to include instead' : 'Included: click to exclude instead', onClick: () => onInvert(i) },
        f.not ? h('span', { class: 'chip-op' }, 'NOT ') : null,
        h('span', { class: 'chip-field' }, f.field, ': '),
        h('span', { class: 'chip-value' }, f.value === '' ? '(empty)' : f.value)),
      h('button', { type: 'button', class: 'chip-remove', 'aria-label': `Remove filter ${f.field}: ${f.value}`, title: 'Remove filter', onClick: () => onRemove(i) }, '×'),
    )));
}

// -- facet sidebar --------------------------------------------------------------

export function facetList(facets, aggregations, { onFilter, filters = [] }) {
  return h('div', { class: 'facet-list' },
    facets.map((facet) => {
      const agg = aggregations && aggregations[facet.field];
      const buckets = (agg && agg.buckets) || [];
      const max = Math.max(1, ...buckets.map((b) => b.doc_count));
      return h('section', { class: 'facet', dataset: { field: facet.field } },
        // h2: the page's h1 is the only heading above (axe heading-order).
        h('h2', null, facet.title || facet.field),
        buckets.length ? h('ul', null, buckets.map((b) => {
          const value = String(b.key);
          const active = filters.find((f) => f.field === facet.field && f.value === value);
          const bar = h('span', { class: 'facet-bar', 'aria-hidden': 'true' });
          bar.style.width = `${Math.max(2, (b.doc_count / max) * 100)}%`;
          // A facet may name what a value means (an ATT&CK technique's name): shown after it, and in its title.
          const meaning = facet.describe ? facet.describe(value) : '';
          return h('li', { class: ['facet-value', active ? (active.not ? 'excluded' : 'included') : null] },
            h('button', {
              // Named by what it shows (value, count: WCAG 2.5.3 label in name); what it does is its title.
              type: 'button', class: 'facet-in', title: `Filter for ${facet.field}: ${value}${meaning ? ` (${meaning})` : ''}`,
              onClick: () => onFilter(facet.field, value, false),
            }, bar, h('span', { class: 'facet-key' }, value === '' ? '(empty)' : value),
            meaning ? h('span', { class: 'facet-meaning muted small' }, ` ${meaning}`) : null,
            h('span', { class: 'facet-count' }, num(b.doc_count))),
            h('button', {
              type: 'button', class: 'facet-out icon small', title: `Filter out ${facet.field}: ${value}`,
              'aria-label': `Filter out ${facet.field} ${value || '(empty)'}`,
              onClick: () => onFilter(facet.field, value, true),
            }, '−'));
        })) : h('p', { class: 'muted small' }, agg ? 'No values' : '…'),
        agg && agg.sum_other_doc_count ? h('p', { class: 'muted small' }, `${num(agg.sum_other_doc_count)} in other values`) : null,
      );
    }));
}

// -- the histogram --------------------------------------------------------------

/** 1,234 / 12k / 1.2M: a y-axis label that fits the margin. */
const compact = new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 1 });

/** The gridlines of a count axis up to at least max: a round step (1, 2, 5 x 10^k), at most `most` lines. */
export function countTicks(max, most = 4) {
  const rough = Math.max(1, max) / most;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough && s >= 1) || power * 10;
  const top = Math.max(step, Math.ceil(Math.max(1, max) / step) * step);
  const ticks = [];
  for (let v = 0; v <= top + step / 2; v += step) ticks.push(Math.round(v));
  return { top, ticks };
}

/**
 * Hits over time, drawn in SVG, read as Kibana's: the time axis ticked at
 * round boundaries in the user's zone with a date on each day boundary, the
 * bucket size under it ("per 3 hours"), a count scale with gridlines, and a
 * tooltip with each bucket's range and count. Drag across it (or click a
 * bar) to zoom to that range; onZoom(from, to) gets epoch ms. `note` draws
 * the empty frame with a message instead of bars (a query with an error).
 */
export function histogram(buckets, { from, to, onZoom, width = 900, height = 150, note = null }) {
  const pad = { left: 48, right: 12, top: 10, bottom: 38 };
  const w = Math.max(200, width);
  const innerW = w - pad.left - pad.right;
  const innerH = height - pad.top - pad.bottom;
  const n = buckets.length;
  const step = n > 1 ? buckets[1].key - buckets[0].key : Math.max(1, to - from);
  const start = n ? Math.min(from, buckets[0].key) : from;
  const end = n ? Math.max(to, buckets[n - 1].key + step) : to;
  const span = Math.max(1, end - start);
  const x = (t) => pad.left + ((t - start) / span) * innerW;
  const tAt = (px) => start + ((px - pad.left) / innerW) * span;
  const max = Math.max(1, ...buckets.map((b) => b.doc_count));
  const counts = countTicks(max);
  const y = (c) => pad.top + innerH - (c / counts.top) * innerH;
  const total = buckets.reduce((s, b) => s + b.doc_count, 0);
  const bottom = pad.top + innerH;
  const endOf = (i) => (i + 1 < n ? buckets[i + 1].key : buckets[i].key + step);
  const rangeText = (i) => {
    const a = buckets[i].key;
    const b = endOf(i);
    const sameDay = formatTime(a).slice(0, 10) === formatTime(b).slice(0, 10);
    return `${formatTime(a, { seconds: step % 60e3 !== 0 })} → ${sameDay ? formatTime(b, { seconds: step % 60e3 !== 0 }).slice(11) : formatTime(b, { seconds: step % 60e3 !== 0 })}`;
  };

  const grid = counts.ticks.flatMap((v) => [
    svg('line', { class: v ? 'gridline' : 'baseline', x1: pad.left, x2: pad.left + innerW, y1: y(v).toFixed(1), y2: y(v).toFixed(1),
      stroke: v ? '#d7dce3' : null, 'stroke-dasharray': v ? '2 3' : null }),
    svg('text', { class: 'axis y-axis', x: pad.left - 6, y: (y(v) + 4).toFixed(1), 'text-anchor': 'end' }, v >= 10000 ? compact.format(v) : num(v)),
  ]);
  const bars = note ? [] : buckets.map((b, i) => {
    const bx = x(b.key);
    const bw = Math.max(1, x(endOf(i)) - bx - (innerW / Math.max(n, 1) > 4 ? 1 : 0));
    return svg('rect', {
      class: 'bar', x: bx.toFixed(1), y: y(b.doc_count).toFixed(1), width: bw.toFixed(1),
      height: Math.max(0, bottom - y(b.doc_count)).toFixed(1), 'data-from': b.key, 'data-to': endOf(i),
    }, svg('title', null, `${rangeText(i)}: ${num(b.doc_count)} ${b.doc_count === 1 ? 'hit' : 'hits'}`));
  });
  const axis = timeTicks(start, end, Math.max(2, Math.floor(innerW / 64)));
  const ticks = axis.ticks.flatMap((t) => {
    const tx = x(t.at).toFixed(1);
    // A label at either end stays inside the chart.
    const anchor = tx > w - 20 ? 'end' : tx < pad.left + 16 ? 'start' : 'middle';
    return [
      svg('line', { class: 'tick', x1: tx, x2: tx, y1: bottom, y2: bottom + 4 }),
      svg('text', { class: ['axis', 'x-axis', t.date ? 'date' : null].filter(Boolean).join(' '), x: tx, y: bottom + 16,
        'text-anchor': anchor, 'font-weight': t.date ? 'bold' : null }, t.label),
    ];
  });
  const per = n > 1 ? intervalLabel(step) : '';
  // No day boundary on the axis (a range within one day): the caption names the day.
  const day = axis.ticks.some((t) => t.date) ? '' : ` · ${formatTime(start).slice(0, 10)}`;
  const caption = svg('text', { class: 'axis axis-caption', x: pad.left, y: height - 4, 'text-anchor': 'start' },
    `${per ? `Hits ${per}` : 'Hits'}${day} · ${timeZone()}`);
  const selection = svg('rect', { class: 'selection', x: 0, y: pad.top, width: 0, height: innerH, visibility: 'hidden' });
  const overlay = svg('rect', { class: 'overlay', x: pad.left, y: pad.top, width: innerW, height: innerH });
  // The overlay takes the pointer (for the drag), so the bar under it gets its tooltip from here.
  const tipText = svg('text', { class: 'tip-text', x: 0, y: 0, 'text-anchor': 'start', 'font-size': 12, 'font-family': 'system-ui, sans-serif' });
  const tipBox = svg('rect', { class: 'tip-box', x: 0, y: 0, width: 0, height: 20, rx: 3, fill: '#1f2937', opacity: 0.92 });
  const tip = svg('g', { class: 'histogram-tip', visibility: 'hidden', 'pointer-events': 'none', fill: '#fff' }, tipBox, tipText);
  const noteText = note ? svg('text', { class: 'histogram-note', x: pad.left + innerW / 2, y: pad.top + innerH / 2, 'text-anchor': 'middle', fill: '#4b5563', 'font-size': 13 }, note) : null;
  const chart = svg('svg', {
    class: ['histogram', note ? 'histogram-empty' : null].filter(Boolean).join(' '), width: w, height, viewBox: `0 0 ${w} ${height}`, role: 'img',
    'aria-label': note ? `Hits over time: ${note}`
      : `Hits over time: ${num(total)} hits${per ? `, ${per}` : ''}, at most ${num(max)} in one bucket; drag across the chart to zoom in`,
  },
  ...grid, ...bars, ...ticks, caption, noteText, selection, overlay, tip);
  if (note) return chart;

  let hovered = null;
  function showTip(event) {
    const px = localX(event);
    const t = tAt(px);
    const i = buckets.findIndex((bk, k) => t >= bk.key && t < endOf(k));
    if (hovered) hovered.style.fill = '';
    hovered = i >= 0 ? bars[i] : null;
    if (!hovered) { tip.setAttribute('visibility', 'hidden'); return; }
    hovered.style.fill = '#1f5fbf'; // CSSOM: the page's CSP allows it
    tipText.textContent = `${rangeText(i)} · ${num(buckets[i].doc_count)} ${buckets[i].doc_count === 1 ? 'hit' : 'hits'}`;
    const textW = tipText.getComputedTextLength ? tipText.getComputedTextLength() : tipText.textContent.length * 7;
    const boxW = textW + 12;
    const left = Math.min(pad.left + innerW - boxW, Math.max(pad.left, px - boxW / 2));
    tipBox.setAttribute('x', left.toFixed(1));
    tipBox.setAttribute('y', pad.top);
    tipBox.setAttribute('width', boxW.toFixed(1));
    tipText.setAttribute('x', (left + 6).toFixed(1));
    tipText.setAttribute('y', pad.top + 14);
    tip.setAttribute('visibility', 'visible');
  }
  function hideTip() {
    if (hovered) hovered.style.fill = '';
    hovered = null;
    tip.setAttribute('visibility', 'hidden');
  }
  let dragFrom = null;
  const localX = (event) => {
    const rect = chart.getBoundingClientRect();
    return Math.min(pad.left + innerW, Math.max(pad.left, ((event.clientX - rect.left) / rect.width) * w));
  };
  overlay.addEventListener('pointerdown', (event) => {
    dragFrom = localX(event);
    overlay.setPointerCapture(event.pointerId);
    selection.setAttribute('x', dragFrom);
    selection.setAttribute('width', 0);
    selection.setAttribute('visibility', 'visible');
  });
  overlay.addEventListener('pointermove', (event) => {
    if (dragFrom === null) return showTip(event);
    hideTip();
    const now = localX(event);
    selection.setAttribute('x', Math.min(dragFrom, now));
    selection.setAttribute('width', Math.abs(now - dragFrom));
  });
  const finish = (event) => {
    if (dragFrom === null) return;
    const now = localX(event);
    const a = Math.min(dragFrom, now);
    const b = Math.max(dragFrom, now);
    dragFrom = null;
    selection.setAttribute('visibility', 'hidden');
    if (b - a >= 4) {
      onZoom(Math.round(tAt(a)), Math.round(tAt(b)));
    } else {
      // A click: zoom to the bucket under the pointer.
      const t = tAt(a);
      const i = buckets.findIndex((bk, k) => t >= bk.key && t < (k + 1 < n ? buckets[k + 1].key : bk.key + step));
      if (i >= 0 && buckets[i].doc_count > 0) onZoom(buckets[i].key, (i + 1 < n ? buckets[i + 1].key : buckets[i].key + step) - 1);
    }
  };
  overlay.addEventListener('pointerup', finish);
  overlay.addEventListener('pointerleave', hideTip);
  overlay.addEventListener('pointercancel', () => { dragFrom = null; selection.setAttribute('visibility', 'hidden'); });
  return chart;
}

// -- paging ---------------------------------------------------------------------

export function pager(state, total, onPage, onSize, { previous = '‹ Newer', next = 'Older ›', label = 'Pages' } = {}) {
  const first = total ? (state.page - 1) * state.size + 1 : 0;
  const last = Math.min(total, state.page * state.size);
  const reachable = Math.min(total, MAX_WINDOW);
  const pages = Math.max(1, Math.ceil(reachable / state.size));
  return h('nav', { class: 'pager', 'aria-label': label },
    h('span', { class: 'pager-range' }, `${num(first)}–${num(last)} of ${num(total)}`),
    h('button', { type: 'button', class: 'prev', disabled: state.page <= 1, onClick: () => onPage(state.page - 1) }, previous),
    h('span', { class: 'pager-page' }, `Page ${num(state.page)} of ${num(pages)}`),
    h('button', { type: 'button', class: 'next', disabled: state.page >= pages, onClick: () => onPage(state.page + 1) }, next),
    h('label', { class: 'page-size' }, 'Rows ',
      h('select', { onChange: (e) => onSize(Number(e.target.value)) },
        PAGE_SIZES.map((s) => h('option', { value: s, selected: s === state.size }, String(s))))),
  );
}

/** What a page shows when the server does not have its call (404 "unknown call"). */
export function unavailable(title, callName) {
  return h('div', { class: 'unavailable', id: 'main', role: 'status' },
    h('h2', null, `${title}: not available on this server`),
    h('p', null, 'This seclake server does not offer ', h('code', null, callName),
      ' (it answered 404, unknown call). An upgrade of the server adds it; nothing is wrong with your account.'));
}

// -- a whole search page --------------------------------------------------------

/**
 * A search page driven by `config`:
 *   path, title, call, placeholder, defaults {from, size, extra}, facets(state),
 *   histogram (bool), kargs(state, options) -> kargs,
 *   toolbar(state, set) -> nodes, results(response, state, ctx) -> node,
 *   aside(state, ctx) -> node|null (a detail panel), onRendered(ctx),
 *   suggest(state) -> Promise of [{name, type, records}] (field names for the query bar)
 */
export function searchPage(config) {
  return function mount(root) {
    let state = readState(location.search, config.defaults);
    let generation = 0;
    let controller = null;
    let lastHits = null;

    const ctx = {
      get state() { return state; },
      set,
      addFilter(field, value, not) {
        const filters = state.filters.filter((f) => !(f.field === field && f.value === value));
        filters.push({ field, value: String(value), not });
        set({ filters, page: 1 });
      },
      refresh: () => run(),
      config,
    };

    function set(changes, { replace: rep = false } = {}) {
      const next = { ...state, ...changes };
      navigate(`${config.path}?${stateQuery(next, config.defaults)}`, { replace: rep });
    }

    // Named regions, so everything on the page is inside a landmark.
    const header = h('section', { class: 'search-header', 'aria-label': 'Query' });
    const chipRow = h('section', { class: 'chip-row', 'aria-label': 'Filters' });
    const sidebar = h('aside', { class: 'facets', 'aria-label': 'Fields' });
    const chart = h('div', { class: 'chart' });
    const status = h('div', { class: 'result-status', 'aria-live': 'polite' });
    const results = h('div', { class: 'results', id: 'results', tabindex: '-1' });
    const pagerTop = h('div', { class: 'pager-slot' });
    const pagerBottom = h('div', { class: 'pager-slot' });
    const asideSlot = h('div', { class: 'detail-slot' });
    let bar;
    let picker;

    const page = h('div', { class: ['search-page', `page-${config.name}`] },
      header, chipRow,
      h('div', { class: 'search-body' },
        sidebar,
        h('main', { class: 'search-main', id: 'main' },
          config.histogram ? chart : null, h('div', { class: 'status-row' }, status, pagerTop), results, pagerBottom)),
      asideSlot);
    replace(root, page);

    function drawControls() {
      bar = queryBar({
        value: state.q,
        placeholder: config.placeholder,
        onSubmit: (q) => set({ q, page: 1 }),
        extras: [],
        suggest: config.suggest ? () => config.suggest(state) : null,
      });
      picker = timePicker({ from: state.from, to: state.to, onChange: (from, to) => set({ from, to, page: 1 }) });
      replace(header,
        h('h1', { class: 'page-title' }, config.title),
        ...(config.toolbar ? [config.toolbar(state, set)] : []),
        bar.form,
        picker.element,
        config.histogram ? h('button', {
          type: 'button', class: 'zoom-out', title: 'Zoom out (double the time range)', onClick: zoomOut,
        }, '− Zoom out') : null,
      );
      // The time picker sits inside the query row; the error box below it.
      header.appendChild(bar.errorBox);
      replace(chipRow, chips(state.filters, {
        onRemove: (i) => set({ filters: state.filters.filter((_, k) => k !== i), page: 1 }),
        onInvert: (i) => set({ filters: state.filters.map((f, k) => (k === i ? { ...f, not: !f.not } : f)), page: 1 }),
      }));
    }

    function zoomOut() {
      const r = resolveRange(state.from, state.to);
      const span = r.to - r.from;
      const now = Date.now();
      const to = Math.min(now, r.to + span / 2);
      set({ from: String(Math.round(to - span * 2)), to: String(Math.round(to)), page: 1 });
    }

    function options(range, { hits }) {
      const filters = facetFilters(state.filters);
      const facets = { ...filters, facets: [] };
      if (!hits) {
        facets.facets = config.facets(state).map((f) => ({ field: f.field, size: f.size || 10, order: 'count' }));
        if (config.histogram) facets.dateFacets = [{ name: 'dateHistogram', key: config.histogramKey || '@timestamp' }];
      }
      return {
        searchStr: state.q,
        range_from: range.from,
        range_to: range.to,
        fetchOffset: hits ? (state.page - 1) * state.size : 0,
        fetchLimit: hits ? state.size : 0,
        facets,
      };
    }

    async function run() {
      const mine = ++generation;
      if (controller) controller.abort();
      controller = new AbortController();
      const { signal } = controller;
      const range = resolveRange(state.from, state.to);
      bar.hideError();
      replace(status, spinner('Searching…'));
      results.setAttribute('aria-busy', 'true');
      if (!lastHits) replace(results, spinner('Searching…'));
      else results.classList.add('stale');
      sidebar.classList.add('stale');
      sidebar.setAttribute('aria-busy', 'true');
      const started = performance.now();

      const hitsCall = call(config.call, config.kargs(state, options(range, { hits: true })), { signal }).then((res) => {
        if (mine !== generation) return;
        lastHits = res;
        results.classList.remove('stale');
        results.removeAttribute('aria-busy');
        const total = res.hits.total;
        replace(status,
          h('strong', { class: 'total' }, num(total)), total === 1 ? ' hit' : ' hits',
          h('span', { class: 'muted' }, ` · ${formatTime(range.from, { seconds: false })} → ${formatTime(range.to, { seconds: false })} ${timeZone()} · ${res.took} ms on the server, ${Math.round(performance.now() - started)} ms here`));
        const pg = (label) => pager(state, total, (p) => set({ page: p }), (s) => set({ size: s, page: 1 }), { label });
        replace(pagerTop, pg());
        replace(pagerBottom, total > state.size ? pg('Pages, bottom') : '');
        replace(results, config.results(res, state, ctx));
        document.title = `${config.title}${state.q ? ` · ${state.q}` : ''} · seclake`;
      });
      const aggsCall = call(config.call, config.kargs(state, options(range, { hits: false })), { signal }).then((res) => {
        if (mine !== generation) return;
        sidebar.classList.remove('stale');
        sidebar.removeAttribute('aria-busy');
        replace(sidebar, facetList(config.facets(state), res.aggregations, { onFilter: ctx.addFilter, filters: state.filters }));
        if (config.histogram) drawChart(res.aggregations.dateHistogram ? res.aggregations.dateHistogram.buckets : [], range);
      });
      const [hitsOutcome, aggsOutcome] = await Promise.allSettled([hitsCall, aggsCall]);
      if (mine !== generation) return;
      const failed = [hitsOutcome, aggsOutcome].find((o) => o.status === 'rejected');
      const err = failed && failed.reason;
      if (!failed || (err && err.name === 'AbortError')) return;
      sidebar.classList.remove('stale');
      sidebar.removeAttribute('aria-busy');
      if (err instanceof ApiError && err.status === 401) return; // back at sign-in
      if (err instanceof ApiError && err.status === 404 && /unknown call/.test(err.message)) {
        replace(page, unavailable(config.title, config.call));
        return;
      }
      if (hitsOutcome.status === 'fulfilled') {
        // Hits are shown; only the fields or the chart could not be counted.
        replace(sidebar, notice('error', `Fields could not be counted: ${err.message}`));
        clearChart();
        return;
      }
      results.classList.remove('stale');
      results.removeAttribute('aria-busy');
      lastHits = null;
      replace(status, '');
      clear(pagerTop);
      clear(pagerBottom);
      showFailure(bar, results, err);
      if (err instanceof ApiError && err.position !== null) {
        // Not blank: the chart's frame and the field column say why they are empty.
        replace(sidebar, h('p', { class: 'muted small notice-empty' }, 'No fields: the query has an error.'));
        if (config.histogram) drawChart([], range, QUERY_HAS_ERROR);
      } else {
        clear(sidebar);
        clearChart();
      }
    }

    let chartData = null;
    function clearChart() {
      chartData = null; // else a resize would draw the old buckets again
      clear(chart);
    }
    function drawChart(buckets, range, note = null) {
      chartData = { buckets, range, note };
      const width = chart.clientWidth || 900;
      replace(chart, histogram(buckets, {
        from: range.from, to: range.to, width, note,
        onZoom: (from, to) => set({ from: String(from), to: String(to), page: 1 }),
      }));
    }
    const resize = new ResizeObserver(() => {
      if (chartData && Math.abs((chart.firstChild ? Number(chart.firstChild.getAttribute('width')) : 0) - chart.clientWidth) > 4) {
        drawChart(chartData.buckets, chartData.range, chartData.note);
      }
    });
    if (config.histogram) resize.observe(chart);

    function update() {
      state = readState(location.search, config.defaults);
      drawControls();
      if (config.aside) replace(asideSlot, config.aside(state, ctx) || '');
      run();
    }

    function onKey(event) {
      if (event.key === 'Escape' && picker && picker.isOpen()) picker.close(true);
    }
    document.addEventListener('keydown', onKey);
    update();
    return {
      update,
      unmount() {
        generation++;
        if (controller) controller.abort();
        resize.disconnect();
        document.removeEventListener('keydown', onKey);
      },
      focusQuery() {
        bar.input.focus();
        bar.input.select();
      },
    };
  };
}
