// What to mark in a value shown on a page: only what the query matched there.
//
// A search reply's `highlight` (query/echo.highlights) says, for each term,
// where it matched and by which rule: {field, value, text}. A term with no
// field ("*") or on a text field matched words: the value's tokens, in order
// and adjacent, as the text index cuts them (query-semantics.md: maximal runs
// of Unicode letters and digits, lowercased), so "authentication" is marked
// as a word and never inside "AuthenticationPackageName". A term on any other
// field matched that field's whole value, case-insensitively: it is marked
// there and nowhere else (the message shows no field's value, so no field's
// term is marked in it). Plain strings (the spec's `terms`, the timeline's
// query words) are words of no field.
//
// Pure functions (no DOM), so node runs them in tests/web/test_highlight.py.

const TOKEN = /[\p{L}\p{N}]+/gu;
const NUMBER = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

function asMark(m) {
  if (typeof m === 'string') return { field: '*', value: m, text: true };
  return m && typeof m === 'object' && typeof m.value === 'string' ? m : null;
}

/** The tokens of a text, lowercased, with where each starts and ends. */
function tokensOf(text) {
  return Array.from(text.matchAll(TOKEN), (t) => ({ low: t[0].toLowerCase(), start: t.index, end: t.index + t[0].length }));
}

/** Whether a keyword value is the term: case-insensitively, and numbers as numbers ("443" is 443.0). */
function sameKeyword(value, term) {
  if (value.toLowerCase() === term.toLowerCase()) return true;
  return NUMBER.test(value.trim()) && NUMBER.test(term.trim()) && Number(value) === Number(term);
}

/**
 * [start, end) ranges of `text` to mark: what `marks` matched in the value at
 * record path `path` ('@message', '@fields.user.name'; null: no field's value,
 * where only words of no field apply). Sorted, not overlapping.
 */
export function markRanges(text, marks, path = null) {
  const value = text === null || text === undefined ? '' : String(text);
  const ranges = [];
  let tokens = null;
  for (const raw of marks || []) {
    const mark = asMark(raw);
    if (!mark) continue;
    if (mark.text === false) {
      if (path !== null && mark.field === path && value && sameKeyword(value, mark.value)) ranges.push([0, value.length]);
      continue;
    }
    if (mark.field !== '*' && mark.field !== path) continue;
    const want = tokensOf(mark.value).map((t) => t.low);
    if (!want.length) continue;
    tokens = tokens || tokensOf(value);
    for (let i = 0; i + want.length <= tokens.length; i++) {
      let k = 0;
      while (k < want.length && tokens[i + k].low === want[k]) k++;
      if (k === want.length) ranges.push([tokens[i].start, tokens[i + k - 1].end]);
    }
  }
  ranges.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  const merged = [];
  for (const [start, end] of ranges) {
    const last = merged[merged.length - 1];
    if (last && start <= last[1]) last[1] = Math.max(last[1], end);
    else merged.push([start, end]);
  }
  return merged;
}
