// Daily risk summaries (ds/behavior_summary_search), riskiest first, and on
// one summary: its behaviors (a timeline search for its key and day), its
// comments and the triage actions (ds/behavior_incident_update).

import { ApiError, call } from './api.js';
import { techniqueHref, techniqueList } from './attack.js';
import { h, notice, num, replace, spinner } from './dom.js';
import { link } from './router.js';
import { searchPage } from './searchkit.js';
import { formatTime } from './time.js';
import { behaviorTable, levelBadge } from './page-timeline.js';

const FACETS = [
  { field: 'status', title: 'Status' },
  { field: 'scoreLevel', title: 'Score level' },
  { field: 'keyType', title: 'Key type' },
  { field: 'behaviorRules', title: 'Rules' },
  { field: 'customer', title: 'Customer' },
  { field: 'comments.username', title: 'Commented by' },
];

let returnFocusTo = null;

function quoted(value) {
  return `"${String(value ?? '').replace(/["\\]/g, '\\$&')}"`;
}

/** The timeline of one entity's behaviors of one technique, over the summary's time. */
function entityTechnique(s, id) {
  return techniqueHref(id, { q: `key:${quoted(s.key)} AND keyType:${quoted(s.keyType)}`, from: s.from, to: s.to });
}

function statusBadge(status) {
  const s = String(status ?? 'new');
  return h('span', { class: ['status', `status-${['new', 'acknowledged', 'resolved'].includes(s) ? s : 'other'}`] }, s);
}

function summaryTable(res, state, ctx) {
  const hits = res.hits.hits;
  if (!hits.length) {
    return h('div', { class: 'empty-results' }, h('h2', null, 'No summaries'),
      h('p', null, 'No entity has behaviors on a day in this range.'));
  }
  const openSummary = (id) => ctx.set({ open: id });
  if (returnFocusTo) {
    // The panel of this row was just closed: focus goes back to its row.
    const id = returnFocusTo;
    returnFocusTo = null;
    queueMicrotask(() => {
      const button = document.querySelector(`tr[data-id="${CSS.escape(id)}"] button.open-summary`);
      if (button) button.focus();
    });
  }
  return h('table', { class: 'hits summaries' },
    h('caption', { class: 'sr-only' }, 'Summaries per entity and day, highest risk first'),
    h('thead', null, h('tr', null,
      ['Level', 'Risk', 'Key', 'Day', 'Behaviors', 'ATT&CK', 'Status', 'Comments', 'Updated'].map((c) => h('th', { scope: 'col' },
        c === 'ATT&CK' ? h('abbr', { title: 'MITRE ATT&CK techniques' }, c) : c)))),
    h('tbody', null, hits.map((hit) => {
      const s = hit._source || {};
      const row = h('tr', { class: ['hit', 'summary-row', state.open === s.id ? 'selected' : null], dataset: { id: s.id } },
        h('td', null, levelBadge(s.scoreLevel)),
        h('td', { class: 'num' }, num(s.riskScore), s.scoreAdjust ? h('span', { class: 'muted small' }, ` (${s.scoreAdjust > 0 ? '+' : ''}${s.scoreAdjust})`) : null),
        h('td', { class: 'cell-key' },
          h('button', { type: 'button', class: 'linkish open-summary', onClick: () => openSummary(s.id), 'aria-label': `Open the summary of ${s.key} on ${s.dayIndex}` }, s.key ?? ''),
          h('span', { class: 'key-type' }, s.keyType ?? ''),
          s.incident ? h('span', { class: 'incident-flag', title: 'Marked as an incident' }, 'incident') : null),
        h('td', { class: 'nowrap' }, s.dayIndex ?? ''),
        h('td', { class: 'cell-behaviors' }, (s.behaviors || []).join(', ')),
        // A technique leads to its behaviors of this entity on this day.
        h('td', { class: 'cell-techniques' }, techniqueList(s.risks, { href: (id) => entityTechnique(s, id) })),
        h('td', null, statusBadge(s.status)),
        h('td', { class: 'num' }, num((s.comments || []).length)),
        h('td', { class: 'nowrap muted' }, formatTime(s.updatedOn, { seconds: false })),
      );
      row.addEventListener('click', (e) => {
        if (e.target.closest('button, a, input')) return;
        openSummary(s.id);
      });
      return row;
    })));
}

/** The panel of one summary: loads it by id, so a shared URL opens it too. */
function summaryPanel(state, ctx) {
  if (!state.open) return null;
  const body = h('div', { class: 'drawer-body' }, spinner('Loading the summary…'));
  const title = h('h2', { id: 'drawer-title', tabindex: '-1' }, 'Summary');
  const close = () => {
    returnFocusTo = state.open;
    ctx.set({ open: '' });
  };
  const panel = h('section', { class: 'drawer', role: 'dialog', 'aria-modal': 'false', 'aria-labelledby': 'drawer-title' },
    h('div', { class: 'drawer-head' }, title,
      h('button', { type: 'button', class: 'icon close', 'aria-label': 'Close the summary (Escape)', title: 'Close (Escape)', onClick: close }, '×')),
    body);
  const onKey = (e) => {
    if (!panel.isConnected) return document.removeEventListener('keydown', onKey);
    if (e.key === 'Escape' && !document.querySelector('dialog[open]')) {
      const t = e.target;
      if (t && t.closest && t.closest('.popover')) return;
      close();
    }
  };
  document.addEventListener('keydown', onKey);

  async function load() {
    try {
      const res = await call('ds/behavior_summary_search', {
        options: { searchStr: `id:${quoted(state.open)}`, range_field: 'from', range_from: 0, range_to: 4102444800000, fetchLimit: 1 },
      });
      const hit = res.hits.hits[0];
      if (!hit) return replace(body, notice('error', 'This summary does not exist (any more).'));
      show(hit._source);
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return;
      replace(body, notice('error', err.message));
    }
  }

  function show(s, message = null) {
    replace(title, h('span', { class: 'drawer-key' }, s.key ?? ''), ' ', h('span', { class: 'key-type' }, s.keyType ?? ''));
    const triageMessage = h('div', { class: 'triage-message', 'aria-live': 'polite' }, message ? notice('ok', message) : null);
    const behaviorsBox = h('div', { class: 'summary-behaviors' }, spinner('Loading behaviors…'));
    replace(body,
      h('dl', { class: 'facts' },
        h('dt', null, 'Day'), h('dd', null, s.dayIndex ?? ''),
        h('dt', null, 'Risk'), h('dd', null, levelBadge(s.scoreLevel, s.riskScore),
          s.scoreAdjust ? h('span', { class: 'muted small' }, ` includes an adjustment of ${s.scoreAdjust > 0 ? '+' : ''}${s.scoreAdjust}`) : null),
        h('dt', null, 'Status'), h('dd', null, statusBadge(s.status), s.incident ? h('span', { class: 'incident-flag' }, 'incident') : null),
        h('dt', null, 'Behaviors'), h('dd', null, `${num(s.count)} × `, (s.behaviors || []).join(', ')),
        h('dt', null, h('abbr', { title: 'MITRE ATT&CK techniques' }, 'ATT&CK')),
        h('dd', null, techniqueList(s.risks, { href: (id) => entityTechnique(s, id) })),
        h('dt', null, 'Seen'), h('dd', null, `${formatTime(s.from)} → ${formatTime(s.to)}`),
        s.customer ? [h('dt', null, 'Customer'), h('dd', null, s.customer)] : null,
      ),
      triageMessage,
      triageForm(s),
      h('h3', null, 'Behaviors'),
      behaviorsBox,
      h('h3', null, `Comments (${(s.comments || []).length})`),
      commentList(s.comments || []),
    );
    loadBehaviors(s, behaviorsBox);
  }

  async function loadBehaviors(s, box) {
    const searchStr = `key:${quoted(s.key)} AND keyType:${quoted(s.keyType)}`;
    try {
      const res = await call('ds/fsm_behavior_search', {
        options: { searchStr, range_field: 'timestamp', range_from: s.from, range_to: s.to, fetchLimit: 100, sortField: 'timestamp', sortOrder: 'desc' },
      });
      const params = new URLSearchParams({ q: searchStr, from: String(s.from), to: String(s.to) });
      replace(box,
        h('p', { class: 'small' }, `${num(res.hits.total)} behaviors of ${s.key} on ${s.dayIndex}. `,
          link(`/timeline?${params}`, null, 'Open in the timeline')),
        behaviorTable(res, { compact: true }));
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return;
      replace(box, notice('error', err.message));
    }
  }

  function triageForm(s) {
    const problem = h('div', { class: 'triage-problem' });
    const update = async (changes, what) => {
      for (const b of form.querySelectorAll('button')) b.disabled = true;
      try {
        const updated = await call('ds/behavior_incident_update', { id: s.id, ...changes });
        show(updated, what);
        ctx.refresh();
      } catch (err) {
        if (err instanceof ApiError && err.status === 401) return;
        for (const b of form.querySelectorAll('button')) b.disabled = false;
        replace(problem, notice('error', err instanceof ApiError && err.status === 403
          ? `Not allowed: ${err.message}` : err.message));
      }
    };
    const status = s.status || 'new';
    const comment = h('textarea', { id: 'triage-comment', rows: 3, placeholder: 'What you found, what you did…', maxlength: 4000 });
    const adjust = h('input', { id: 'score-adjust', type: 'number', step: 100, value: String(s.scoreAdjust ?? 0) });
    const withComment = (changes) => {
      const text = comment.value.trim();
      return text ? { ...changes, comment: text } : changes;
    };
    const form = h('form', { class: 'triage', 'aria-label': 'Triage', onSubmit: (e) => {
      e.preventDefault();
      const text = comment.value.trim();
      if (!text) return replace(problem, notice('error', 'Write a comment first.'));
      update({ comment: text }, 'Comment added.');
    } },
    h('div', { class: 'triage-actions' },
      status !== 'acknowledged' && status !== 'resolved'
        ? h('button', { type: 'button', id: 'ack', onClick: () => update(withComment({ status: 'acknowledged' }), 'Acknowledged.') }, 'Acknowledge') : null,
      status !== 'resolved'
        ? h('button', { type: 'button', id: 'resolve', onClick: () => update(withComment({ status: 'resolved' }), 'Resolved.') }, 'Resolve') : null,
      status !== 'new'
        ? h('button', { type: 'button', id: 'reopen', onClick: () => update(withComment({ status: 'new' }), 'Reopened.') }, 'Reopen') : null,
      h('button', {
        type: 'button', id: 'incident', class: s.incident ? null : 'danger-outline',
        onClick: () => update(withComment({ incident: !s.incident }), s.incident ? 'No longer an incident.' : 'Marked as an incident.'),
      }, s.incident ? 'Not an incident' : 'Mark as incident')),
    h('div', { class: 'triage-row' },
      h('label', { for: 'score-adjust' }, 'Score adjustment'), adjust,
      h('button', { type: 'button', id: 'apply-adjust', onClick: () => {
        const value = Number(adjust.value);
        if (!Number.isInteger(value)) return replace(problem, notice('error', 'The adjustment is a whole number.'));
        update(withComment({ scoreAdjust: value }), `Score adjustment set to ${value}.`);
      } }, 'Adjust score')),
    h('label', { for: 'triage-comment' }, 'Comment'), comment,
    problem,
    h('div', { class: 'buttons' }, h('button', { type: 'submit', class: 'primary', id: 'add-comment' }, 'Add comment')),
    );
    return form;
  }

  load().then(() => title.focus());
  return panel;
}

function commentList(comments) {
  if (!comments.length) return h('p', { class: 'muted' }, 'No comments yet.');
  return h('ol', { class: 'comments' }, [...comments].reverse().map((c) => h('li', { class: 'comment' },
    h('div', { class: 'comment-head' }, h('strong', null, c.username ?? 'system'), ' ',
      h('span', { class: 'muted small' }, formatTime(c.createdOn))),
    c.content ? h('p', { class: 'comment-text' }, c.content) : null,
    (c.actions || []).length ? h('ul', { class: 'comment-actions' }, c.actions.map((a) => h('li', null, a))) : null,
  )));
}

export const summariesPage = searchPage({
  name: 'summaries',
  path: '/summaries',
  title: 'Summaries',
  call: 'ds/behavior_summary_search',
  placeholder: 'e.g. riskScore:[3000 TO *] AND NOT status:resolved',
  defaults: { from: 'now-7d', size: 50, extra: ['open'] },
  histogram: false,
  facets: () => FACETS,
  kargs: (state, options) => ({
    options: { ...options, range_field: 'from', sortField: 'riskScore', sortOrder: 'desc' },
  }),
  results: summaryTable,
  aside: summaryPanel,
});

