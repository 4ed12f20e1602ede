// Field suggestions for the query bar, from the field catalog
// (ds/field_catalog): typing the start of a field name lists the fields the
// records hold, most common first; choosing one writes `name:` at the caret.
// An ARIA 1.2 combobox: arrows move, Enter or Tab choose, Escape closes.

import { h, num, replace } from './dom.js';

const MAX_SHOWN = 8;
// Characters of a field name as the query language writes it.
const TOKEN = /[A-Za-z0-9@._-]*$/;

/** The field name being typed before the caret, or null (inside quotes, after a colon). */
export function tokenAt(text, caret) {
  const before = text.slice(0, caret);
  if ((before.match(/"/g) || []).length % 2 === 1) return null; // inside a phrase
  const token = before.match(TOKEN)[0];
  const prev = before.slice(0, before.length - token.length).slice(-1);
  if (prev === ':' || prev === '\\') return null; // a value, not a field
  return { start: caret - token.length, token };
}

/** Fields whose name starts with the token, then those containing it, most records first. */
export function matching(fields, token, limit = MAX_SHOWN) {
  const t = token.toLowerCase();
  if (!t) return [];
  const starts = [];
  const inside = [];
  for (const f of fields) {
    const name = f.name.toLowerCase();
    if (name === t) continue;
    if (name.startsWith(t) || name.split('.').some((part) => part.startsWith(t))) starts.push(f);
    else if (name.includes(t)) inside.push(f);
  }
  return [...starts, ...inside].slice(0, limit);
}

/**
 * Attach suggestions to a query input. ``load()`` resolves to the catalog's
 * fields ([{name, type, records}]); it is called once, on first typing.
 */
export function attachSuggestions(input, load) {
  const list = h('ul', { id: 'query-suggestions', class: 'suggestions', role: 'listbox', 'aria-label': 'Fields', hidden: true });
  input.setAttribute('role', 'combobox');
  input.setAttribute('aria-autocomplete', 'list');
  input.setAttribute('aria-controls', 'query-suggestions');
  input.setAttribute('aria-expanded', 'false');
  let fields = null;
  let loading = null;
  let shown = [];
  let active = -1;
  let at = null;

  function close() {
    list.hidden = true;
    shown = [];
    active = -1;
    input.setAttribute('aria-expanded', 'false');
    input.removeAttribute('aria-activedescendant');
  }

  function mark(i) {
    active = i;
    [...list.children].forEach((li, k) => li.setAttribute('aria-selected', k === i ? 'true' : 'false'));
    if (i >= 0) input.setAttribute('aria-activedescendant', `suggestion-${i}`);
    else input.removeAttribute('aria-activedescendant');
  }

  function choose(i) {
    const f = shown[i];
    if (!f || !at) return;
    const caret = at.start + at.token.length;
    const text = input.value;
    input.value = `${text.slice(0, at.start)}${f.name}:${text.slice(caret)}`;
    const end = at.start + f.name.length + 1;
    input.setSelectionRange(end, end);
    close();
    input.focus();
  }

  function refresh() {
    if (!fields) return;
    at = tokenAt(input.value, input.selectionStart ?? input.value.length);
    shown = at ? matching(fields, at.token) : [];
    if (!shown.length) {
      close();
      return;
    }
    replace(list, shown.map((f, i) => h('li', {
      id: `suggestion-${i}`, role: 'option', class: 'suggestion', 'aria-selected': 'false', dataset: { field: f.name },
      onMousedown: (e) => { e.preventDefault(); choose(i); },
    }, h('code', null, f.name), h('span', { class: 'suggestion-type' }, f.type),
    h('span', { class: 'suggestion-count' }, num(f.records)))));
    list.hidden = false;
    input.setAttribute('aria-expanded', 'true');
    mark(-1);
  }

  input.addEventListener('input', () => {
    if (fields) {
      refresh();
      return;
    }
    if (!loading) {
      loading = Promise.resolve().then(load).then((got) => { fields = got || []; }, () => { fields = []; });
    }
    loading.then(() => { if (document.activeElement === input) refresh(); });
  });
  input.addEventListener('keydown', (event) => {
    if (list.hidden) return;
    if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      event.preventDefault();
      // Cycles through the options and back to the text itself (-1).
      let next = active + (event.key === 'ArrowDown' ? 1 : -1);
      if (next >= shown.length) next = -1;
      else if (next < -1) next = shown.length - 1;
      mark(next);
    } else if ((event.key === 'Enter' || event.key === 'Tab') && active >= 0) {
      event.preventDefault();
      choose(active);
    } else if (event.key === 'Escape') {
      event.preventDefault();
      event.stopPropagation();
      close();
    }
  });
  input.addEventListener('blur', () => close());
  return { list, close };
}
