// Behavior rules, seclake's own and Sigma rules side by side
// (ds/eventwatch_bucket_search): filtered by source, level, status, ATT&CK
// technique and tag, riskiest first. A rule opens to what it says of itself
// (description, author, references, false positives, its Sigma text).
// Admins enable and disable rules one at a time or in bulk: the selected
// ones, or every rule the search matches. A bulk change sends the rules'
// names together (ds/eventwatch_bucket_dao toggle with `names`, up to CHUNK a
// call): one transaction and one new rule book version per call, where one
// call per rule rebuilt the rule index per rule. A chunk is all or nothing,
// and its failure names the rule.

import { ApiError, call, isAdmin } from './api.js';
import { techniqueList, techniqueName } from './attack.js';
import { confirmDialog, expandableRow, h, notice, num, replace, spinner } from './dom.js';
import { link, navigate } from './router.js';
import {
  PAGE_SIZES, appendFilters, chips, facetFilters, facetList, pager, queryBar, readFilters, showFailure, unavailable,
} from './searchkit.js';

const SEARCH = 'ds/eventwatch_bucket_search';
const DAO = 'ds/eventwatch_bucket_dao';
const DEFAULT_SIZE = 50;
const FACETS = [
  { field: 'level', title: 'Level' },
  { field: 'status', title: 'Status' },
  { field: 'enabled', title: 'Enabled' },
  { field: 'risks', title: 'ATT&CK technique', size: 15, describe: (id) => techniqueName(id) },
  { field: 'tags', title: 'Tags', size: 15 },
  { field: 'keyType', title: 'Key type' },
];
// Sigma rules are those with a sigmaId; the rule search has no other mark of a rule's source.
const SOURCES = [['', 'All'], ['sigma', 'Sigma'], ['seclake', 'seclake']];
const SOURCE_QUERY = { sigma: '_exists_:sigmaId', seclake: 'NOT _exists_:sigmaId' };
const LEVELS = ['informational', 'low', 'medium', 'high', 'critical'];
const STATUS_CLASS = { stable: 'status-ok', test: 'status-new', experimental: 'status-acknowledged' };
const FETCH = 1000; // the most rules one search answers
const CHUNK = 1000; // names per bulk toggle call (the API takes up to 10,000)

function readState(search) {
  const p = new URLSearchParams(search);
  const size = Number(p.get('size'));
  const source = p.get('source') || '';
  return {
    q: p.get('q') || '',
    source: SOURCE_QUERY[source] ? source : '',
    filters: readFilters(p),
    page: Math.max(1, parseInt(p.get('page') || '1', 10) || 1),
    size: PAGE_SIZES.includes(size) ? size : DEFAULT_SIZE,
  };
}

function stateQuery(state) {
  const p = new URLSearchParams();
  if (state.q) p.set('q', state.q);
  if (state.source) p.set('source', state.source);
  appendFilters(p, state.filters);
  if (state.page > 1) p.set('page', String(state.page));
  if (state.size !== DEFAULT_SIZE) p.set('size', String(state.size));
  return p.toString();
}

/** The query sent: the user's, within the chosen source. */
function searchStr(state) {
  const source = SOURCE_QUERY[state.source];
  if (!source) return state.q;
  return state.q.trim() ? `${source} AND (${state.q})` : source;
}

function levelBadge(rule) {
  const level = LEVELS.includes(rule.level) ? rule.level : null;
  const cls = level === 'informational' ? 'sigma-level-informational' : level ? `level-${level}` : 'level-none';
  return h('span', {
    class: ['level', cls, 'rule-level'],
    title: level ? `Sigma level ${level}, risk score ${rule.riskScore}` : `Risk score ${rule.riskScore}`,
  }, level, h('span', { class: 'level-score' }, String(rule.riskScore ?? '')));
}

function statusBadge(status) {
  if (!status) return h('span', { class: 'muted' }, '—');
  return h('span', { class: ['status', 'rule-status', STATUS_CLASS[status] || 'status-other'] }, String(status));
}

function enabledBadge(enabled) {
  return h('span', { class: ['status', 'rule-enabled', enabled ? 'status-ok' : 'status-off'] }, enabled ? 'enabled' : 'disabled');
}

/** A reference: a link when it is a web address, else its text (never another scheme). */
function reference(value) {
  const text = String(value);
  let url = null;
  try {
    url = new URL(text);
  } catch {
    url = null;
  }
  if (url && (url.protocol === 'https:' || url.protocol === 'http:')) {
    return h('a', { href: url.href, rel: 'noopener noreferrer', target: '_blank' }, text);
  }
  return h('span', null, text);
}

function list(values, cls, empty) {
  const items = (Array.isArray(values) ? values : []).filter((v) => v !== null && v !== undefined && v !== '');
  if (!items.length) return h('p', { class: 'muted' }, empty);
  return h('ul', { class: cls }, items.map((v) => h('li', null, cls === 'references' ? reference(v) : String(v))));
}

/** What a rule says of itself, shown when it is opened. */
function ruleDetail(rule) {
  const sigma = !!rule.sigmaId;
  const key = rule.keyField ? `${rule.keyField} (${rule.keyType ?? ''})` : rule.keyType ?? '—';
  const facts = [
    ['Name', h('code', null, rule.name)],
    sigma && rule.sigmaId !== rule.name ? ['Sigma id', h('code', null, rule.sigmaId)] : null,
    ['Source', sigma ? 'Sigma rule' : 'seclake rule'],
    sigma ? ['Author', rule.author || '—'] : null,
    ['Level', levelBadge(rule)],
    sigma ? ['Status', statusBadge(rule.status)] : null,
    ['ATT&CK', techniqueList(rule.risks)],
    sigma ? ['Tags', (rule.tags || []).join(', ') || '—'] : null,
    ['Key', key],
    ['Data', rule.dataset ?? ''],
    ['State', enabledBadge(rule.enabled)],
  ].filter(Boolean);
  const behaviors = new URLSearchParams({ from: 'now-7d', to: 'now' });
  appendFilters(behaviors, [{ field: 'behaviorRule', value: rule.name, not: false }]);
  return h('div', { class: 'rule-detail' },
    h('h3', null, 'Description'),
    h('p', { class: 'rule-description' }, rule.description || '—'),
    h('dl', { class: 'facts' }, facts.map(([term, value]) => [h('dt', null, term), h('dd', null, value)])),
    sigma ? [
      h('h3', null, 'References'), list(rule.references, 'references', 'None given.'),
      h('h3', null, 'False positives'), list(rule.falsePositives, 'false-positives', 'None given.'),
    ] : null,
    h('p', { class: 'detail-links' }, link(`/timeline?${behaviors}`, { class: 'small' }, 'Behaviors of this rule in the last 7 days')),
    sigma
      ? h('details', { class: 'rule-text' }, h('summary', null, 'Sigma rule (YAML)'), h('pre', null, rule.sigma ?? ''))
      : h('details', { class: 'rule-text' }, h('summary', null, 'Rule (JSON)'), h('pre', null, JSON.stringify(rule, null, 2))),
  );
}

export function rulesPage(root) {
  let state = readState(location.search);
  let generation = 0;
  let controller = null;
  let lastHits = null;
  let busy = false;
  let selectionOf = null; // the search the selection was made in
  const selected = new Set();
  const admin = isAdmin();

  // Named regions, so everything on the page is inside a landmark.
  const header = h('section', { class: 'search-header', 'aria-label': 'Query' });
  const chipRow = h('section', { class: 'chip-row', 'aria-label': 'Filters' });
  const sidebar = h('aside', { class: 'facets', 'aria-label': 'Rule fields' });
  const status = h('div', { class: 'result-status', 'aria-live': 'polite' });
  const message = h('div', { class: 'rules-message', 'aria-live': 'polite' });
  const toolbar = h('div', { class: 'rules-toolbar', role: 'group', 'aria-label': 'Enable or disable rules' });
  const results = h('div', { class: 'results', id: 'results', tabindex: '-1' });
  const pagerTop = h('div', { class: 'pager-slot' });
  const pagerBottom = h('div', { class: 'pager-slot' });
  let bar;

  const page = h('div', { class: ['search-page', 'page-rules'] },
    header, chipRow,
    h('div', { class: 'search-body' },
      sidebar,
      h('main', { class: 'search-main', id: 'main' },
        message, h('div', { class: 'status-row' }, status, pagerTop), toolbar, results, pagerBottom)));
  replace(root, page);

  function set(changes) {
    navigate(`/rules?${stateQuery({ ...state, ...changes })}`);
  }
  function addFilter(field, value, not) {
    const filters = state.filters.filter((f) => !(f.field === field && f.value === value));
    filters.push({ field, value: String(value), not });
    set({ filters, page: 1 });
  }

  function sourceSwitch() {
    const option = ([value, label]) => h('button', {
      type: 'button', role: 'radio', class: ['segment', state.source === value ? 'on' : null],
      'aria-checked': state.source === value ? 'true' : 'false', dataset: { source: value || 'all' },
      onClick: () => { if (state.source !== value) set({ source: value, page: 1 }); },
    }, label);
    return h('div', { class: 'segments', role: 'radiogroup', 'aria-label': 'Source of the rules' }, SOURCES.map(option));
  }

  function drawControls() {
    bar = queryBar({
      value: state.q,
      placeholder: 'e.g. certutil OR tags:attack.t1105',
      onSubmit: (q) => set({ q, page: 1 }),
    });
    replace(header, h('h1', { class: 'page-title' }, 'Rules'), sourceSwitch(), bar.form);
    header.appendChild(bar.errorBox);
    replace(chipRow, chips(state.filters, {
      onRemove: (i) => set({ filters: state.filters.filter((_, k) => k !== i), page: 1 }),
      onInvert: (i) => set({ filters: state.filters.map((f, k) => (k === i ? { ...f, not: !f.not } : f)), page: 1 }),
    }));
  }

  function options({ hits }) {
    return {
      searchStr: searchStr(state),
      fetchOffset: hits ? (state.page - 1) * state.size : 0,
      fetchLimit: hits ? state.size : 0,
      // Riskiest first; rules of one score by name.
      sortField: 'riskScore',
      sortOrder: 'desc',
      facets: {
        ...facetFilters(state.filters),
        facets: hits ? [] : FACETS.map((f) => ({ field: f.field, size: f.size || 10, order: 'count' })),
      },
    };
  }

  async function run() {
    const mine = ++generation;
    if (controller) controller.abort();
    controller = new AbortController();
    const { signal } = controller;
    bar.hideError();
    replace(status, spinner('Searching…'));
    results.setAttribute('aria-busy', 'true');
    if (!lastHits) replace(results, spinner('Searching…'));
    else results.classList.add('stale');
    sidebar.classList.add('stale');
    try {
      if (state.source && state.q.trim()) {
        // The query alone first, so that its errors point into what the user wrote.
        await call(SEARCH, { options: { searchStr: state.q, fetchLimit: 0 } }, { signal });
      }
      const [res, aggs] = await Promise.all([
        call(SEARCH, { options: options({ hits: true }) }, { signal }),
        call(SEARCH, { options: options({ hits: false }) }, { signal }),
      ]);
      if (mine !== generation) return;
      lastHits = res;
      draw(res, aggs);
    } catch (err) {
      if (mine !== generation || (err && err.name === 'AbortError')) return;
      results.classList.remove('stale');
      results.removeAttribute('aria-busy');
      sidebar.classList.remove('stale');
      if (err instanceof ApiError && err.status === 401) return; // back at sign-in
      if (err instanceof ApiError && err.status === 404 && /unknown call/.test(err.message)) {
        replace(page, unavailable('Rules', SEARCH));
        return;
      }
      lastHits = null;
      replace(status, '');
      replace(pagerTop);
      replace(pagerBottom);
      replace(toolbar);
      // A query error: the field column says why it is empty (the error itself is shown once, under the query bar).
      replace(sidebar, err instanceof ApiError && err.position !== null ? h('p', { class: 'muted small notice-empty' }, 'No fields: the query has an error.') : '');
      showFailure(bar, results, err);
    }
  }

  function draw(res, aggs) {
    results.classList.remove('stale');
    results.removeAttribute('aria-busy');
    sidebar.classList.remove('stale');
    const total = res.hits.total;
    replace(status, h('strong', { class: 'total' }, num(total)), total === 1 ? ' rule' : ' rules',
      state.source ? h('span', { class: 'muted' }, ` · ${state.source === 'sigma' ? 'Sigma' : 'seclake'} rules`) : null);
    const pg = (label) => pager(state, total, (p) => set({ page: p }), (s) => set({ size: s, page: 1 }),
      { previous: '‹ Previous', next: 'Next ›', label });
    replace(pagerTop, pg());
    replace(pagerBottom, total > state.size ? pg('Pages, bottom') : '');
    replace(sidebar, facetList(FACETS, aggs.aggregations, { onFilter: addFilter, filters: state.filters }));
    replace(results, table(res));
    drawToolbar();
    document.title = `Rules${state.q ? ` · ${state.q}` : ''} · seclake`;
  }

  function table(res) {
    const hits = res.hits.hits;
    if (!hits.length) {
      return h('div', { class: 'empty-results' }, h('h2', null, 'No rules'),
        h('p', null, 'No rule matches. Remove a filter or change the query.'));
    }
    const boxes = [];
    const pageBox = admin ? h('input', { type: 'checkbox', id: 'select-page', 'aria-label': 'Select every rule on this page' }) : null;
    const syncPageBox = () => {
      if (!pageBox) return;
      const on = boxes.filter((b) => b.checked).length;
      pageBox.checked = on === boxes.length;
      pageBox.indeterminate = on > 0 && on < boxes.length;
    };
    const rows = [];
    hits.forEach((hit, i) => {
      const rule = hit._source || {};
      const box = admin ? h('input', {
        type: 'checkbox', class: 'select-rule', value: rule.name, checked: selected.has(rule.name),
        'aria-label': `Select the rule ${rule.behavior}`,
        onChange: (e) => {
          if (e.target.checked) selected.add(rule.name);
          else selected.delete(rule.name);
          syncPageBox();
          drawToolbar();
        },
      }) : null;
      if (box) boxes.push(box);
      const [row, detail] = expandableRow({
        id: `rule-${i}`,
        dataId: rule.name,
        label: `Show the rule ${rule.behavior}`,
        colspan: admin ? 8 : 7,
        cells: [
          admin ? h('td', { class: 'cell-check' }, box) : null,
          h('td', { class: 'cell-rule-title' }, h('strong', null, rule.behavior ?? ''), h('span', { class: 'rule-name' }, rule.name)),
          h('td', null, levelBadge(rule)),
          h('td', null, statusBadge(rule.status)),
          h('td', { class: 'cell-techniques' }, techniqueList(rule.risks)),
          h('td', { class: 'rule-source' }, rule.sigmaId ? 'Sigma' : 'seclake'),
          h('td', { class: 'nowrap' }, enabledBadge(rule.enabled),
            admin ? [' ', h('button', {
              type: 'button', class: 'small toggle-rule', disabled: busy,
              'aria-label': `${rule.enabled ? 'Disable' : 'Enable'} the rule ${rule.behavior}`,
              onClick: () => change([rule.name], !rule.enabled, `the rule ${rule.behavior}`),
            }, rule.enabled ? 'Disable' : 'Enable')] : null),
        ],
        fill: () => [ruleDetail(rule)],
      });
      row.classList.toggle('disabled', !rule.enabled);
      rows.push(row, detail);
    });
    if (pageBox) {
      pageBox.addEventListener('change', () => {
        for (const b of boxes) {
          b.checked = pageBox.checked;
          if (b.checked) selected.add(b.value);
          else selected.delete(b.value);
        }
        drawToolbar();
      });
      syncPageBox();
    }
    const out = h('table', { class: ['hits', 'rules'] },
      h('caption', { class: 'sr-only' }, 'Rules, highest risk score first'),
      h('thead', null, h('tr', null,
        h('th', { scope: 'col', class: 'cell-toggle' }, h('span', { class: 'sr-only' }, 'Open')),
        admin ? h('th', { scope: 'col', class: 'cell-check' }, pageBox) : null,
        ['Rule', 'Level', 'Status'].map((c) => h('th', { scope: 'col' }, c)),
        h('th', { scope: 'col' }, h('abbr', { title: 'MITRE ATT&CK techniques' }, 'ATT&CK')),
        ['Source', 'State'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', null, rows));
    // A search that finds one rule (a link from a behavior) shows it opened.
    if (hits.length === 1) queueMicrotask(() => rows[0].querySelector('button.expand').click());
    return out;
  }

  function drawToolbar() {
    if (!lastHits) return replace(toolbar);
    if (!admin) return replace(toolbar, h('p', { class: 'muted small' }, 'Rules are enabled and disabled by administrators.'));
    const n = selected.size;
    const total = lastHits.hits.total;
    const names = () => [...selected];
    return replace(toolbar,
      h('span', { class: 'selected-count', id: 'selected-count' }, `${num(n)} selected`),
      h('button', { type: 'button', id: 'enable-selected', disabled: busy || !n, onClick: () => change(names(), true, `${num(n)} selected rules`) }, 'Enable selected'),
      h('button', { type: 'button', id: 'disable-selected', disabled: busy || !n, onClick: () => change(names(), false, `${num(n)} selected rules`) }, 'Disable selected'),
      n ? h('button', { type: 'button', class: 'linkish small', onClick: () => { selected.clear(); replace(results, table(lastHits)); drawToolbar(); } }, 'Clear the selection') : null,
      h('span', { class: 'muted', 'aria-hidden': 'true' }, '·'),
      h('button', { type: 'button', id: 'enable-matching', disabled: busy || !total, onClick: () => changeMatching(true) }, `Enable all ${num(total)} matching`),
      h('button', { type: 'button', id: 'disable-matching', class: 'danger-outline', disabled: busy || !total, onClick: () => changeMatching(false) }, `Disable all ${num(total)} matching`));
  }

  /** The names of the rules this search matches that are not `enabled` yet. */
  async function matchingNames(enabled) {
    const filters = facetFilters(state.filters);
    const facets = { mustFilters: [...filters.mustFilters, { field: 'enabled', terms: [!enabled] }], mustNotFilters: filters.mustNotFilters };
    const names = [];
    for (let offset = 0; ; offset += FETCH) {
      const res = await call(SEARCH, { options: { searchStr: searchStr(state), fetchOffset: offset, fetchLimit: FETCH, facets } });
      names.push(...res.hits.hits.map((hit) => hit._id));
      if (res.hits.hits.length < FETCH || names.length >= res.hits.total) return names;
    }
  }

  async function changeMatching(enabled) {
    const total = lastHits ? lastHits.hits.total : 0;
    const verb = enabled ? 'Enable' : 'Disable';
    const ok = await confirmDialog(`${verb} rules`,
      `${verb} every rule this search matches (${num(total)} ${total === 1 ? 'rule' : 'rules'})? Those already ${enabled ? 'enabled' : 'disabled'} stay as they are.`,
      `${verb} ${num(total)}`, !enabled);
    if (!ok) return;
    await change(null, enabled, `the ${num(total)} matching rules`);
  }

  /** Set `enabled` on the named rules (null: every rule the search matches), then show the outcome. */
  async function change(names, enabled, what) {
    if (busy) return;
    busy = true;
    drawToolbar();
    for (const b of results.querySelectorAll('button.toggle-rule')) b.disabled = true;
    const doing = enabled ? 'Enabling' : 'Disabling';
    const done = enabled ? 'enabled' : 'disabled';
    let sent = 0;
    let changed = 0;
    const failed = [];
    let stop = null;
    try {
      replace(message, notice('info', `${doing} ${what}…`));
      const todo = names ?? await matchingNames(enabled);
      for (let i = 0; i < todo.length && !stop; i += CHUNK) {
        const chunk = todo.slice(i, i + CHUNK);
        try {
          changed += (await call(DAO, { action: 'toggle', names: chunk, enabled })).changed;
        } catch (err) {
          // No right to change rules, or the session ended: the others would fail alike.
          if (err instanceof ApiError && (err.status === 401 || err.status === 403)) stop = err;
          else failed.push(`rules ${num(i + 1)}-${num(i + chunk.length)}: ${err.message}`);
        }
        sent += chunk.length;
        if (sent < todo.length) replace(message, notice('info', `${doing} ${what}: ${num(sent)} of ${num(todo.length)}…`));
      }
      if (stop && stop.status === 401) return;
      if (stop) {
        replace(message, notice('error', `Not allowed: ${stop.message}. Enabling and disabling rules needs the admin role.`));
      } else if (failed.length) {
        replace(message, notice('error', `${num(changed)} ${changed === 1 ? 'rule' : 'rules'} ${done}; ${num(failed.length)} of the calls failed: `,
          h('ul', null, failed.slice(0, 5).map((f) => h('li', null, f))), failed.length > 5 ? `and ${num(failed.length - 5)} more.` : null));
      } else {
        replace(message, notice('ok', names
          ? `${cap(what)} ${done}.`
          : `${num(changed)} ${changed === 1 ? 'rule' : 'rules'} ${done}${changed ? '' : ' (all were already)'}.`));
      }
      selected.clear();
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return;
      replace(message, notice('error', err instanceof ApiError ? `${err.message} (HTTP ${err.status})` : String(err)));
    } finally {
      busy = false;
      run();
    }
  }

  function update() {
    state = readState(location.search);
    // A selection belongs to the search it was made in; pages of one search share it.
    const search = JSON.stringify([state.q, state.source, state.filters]);
    if (search !== selectionOf) {
      selected.clear();
      selectionOf = search;
    }
    replace(message);
    drawControls();
    run();
  }

  update();
  return {
    update,
    unmount() {
      generation++;
      if (controller) controller.abort();
    },
    focusQuery() {
      bar.input.focus();
      bar.input.select();
    },
  };
}

const cap = (text) => text.charAt(0).toUpperCase() + text.slice(1);
