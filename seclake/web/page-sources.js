// Sources: every source whose records the lake holds (its last event, events
// per minute over the last hour, parse errors: what Splunk's data summary and
// Kibana show first), then the node's syslog and NetFlow listeners and what
// each sending address sent (ds/collector_list), refreshed while shown.

import { ApiError, call } from './api.js';
import { h, notice, num, replace } from './dom.js';
import { link } from './router.js';
import { formatTime } from './time.js';

const REFRESH_MS = 10000;
const MINUTE = 60_000;

/** "3 min ago", "2 h ago", "5 d ago": how stale a source is, at a glance. */
function ago(ms, now) {
  const d = Math.max(0, now - ms);
  if (d < MINUTE) return 'just now';
  if (d < 60 * MINUTE) return `${Math.floor(d / MINUTE)} min ago`;
  if (d < 48 * 60 * MINUTE) return `${Math.floor(d / (60 * MINUTE))} h ago`;
  return `${Math.floor(d / (24 * 60 * MINUTE))} d ago`;
}

// How records came: a listener's records carry the sender's address (syslog for events, NetFlow/IPFIX
// for flows); an import and a _bulk request leave no trace telling them apart.
const received = (r) => (r.receivedBy === 'listener' ? (r.dataType === 'flow' ? 'NetFlow/IPFIX listener' : 'syslog listener') : 'import / _bulk');

function inventoryTable(rows, minutes) {
  const now = Date.now();
  return table('inventory-table', ['Source', 'Type', 'Describes itself as', 'Last event', `Events/min (last ${minutes} min)`, 'Records', 'Parse errors'],
    rows.map((r) => h('tr', { dataset: { source: r.source, type: r.dataType } },
      h('td', null, link(`/search?q=${encodeURIComponent(`@source:"${r.source}"`)}&from=now-7d${r.dataType === 'flow' ? '&type=flow' : ''}`, null, r.source)),
      h('td', null, `${r.dataType === 'flow' ? 'flows' : 'events'} · ${received(r)}`),
      h('td', null, r.describes.length ? r.describes.join(' · ') : '—'),
      h('td', { class: 'cell-time' }, r.lastSeen ? [formatTime(r.lastSeen), h('span', { class: 'muted' }, ` (${ago(r.lastSeen, now)})`)] : '—'),
      h('td', { class: 'num' }, r.eventsPerMinute.toFixed(r.eventsPerMinute < 10 ? 2 : 0)),
      h('td', { class: 'num' }, num(r.records)),
      h('td', { class: ['num', r.parseErrors ? 'parse-errors' : null] }, num(r.parseErrors)))));
}

const faultsText = (faults) => {
  const shown = Object.entries(faults || {}).filter(([, n]) => n > 0);
  return shown.length ? shown.map(([k, n]) => `${k.replaceAll('_', ' ')}: ${num(n)}`).join(', ') : 'none';
};

function table(id, columns, rows) {
  return h('table', { class: 'admin-table', id },
    h('thead', null, h('tr', null, columns.map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', null, rows));
}

function render(box, reply) {
  const { listeners = [], sources = [], inventory = [], recentMinutes = 60 } = reply;
  const lake = [
    h('h2', null, 'In the lake'),
    h('p', { class: 'muted' }, 'Every source whose records are stored, however they came (listeners, imports, ',
      h('code', null, '/_bulk'), '), newest first; parse errors are lines no parser understood, kept as raw events.'),
    reply.incomplete ? notice('info', reply.incomplete) : null,
    inventory.length ? inventoryTable(inventory, recentMinutes) : h('p', { class: 'muted' }, 'No records yet.'),
  ];
  if (!listeners.length) {
    replace(box, ...lake, h('h2', null, 'Listeners'), notice('info', 'This node runs no listeners. Start them with ',
      h('code', null, 'seclake serve --listen syslog+udp://0.0.0.0:5514'), ' (see docs/receivers.md).'));
    return;
  }
  replace(box, ...lake,
    h('h2', null, 'Listeners'),
    table('listeners-table', ['Listener', 'Vendor', 'Type', 'Customer', 'Open connections', 'Faults'],
      listeners.map((l) => h('tr', null,
        h('td', null, h('code', null, l.listener)), h('td', null, l.vendor), h('td', null, l.type),
        h('td', null, l.customer || '—'), h('td', null, num(l.connections)), h('td', null, faultsText(l.faults))))),
    h('h2', null, 'Senders'),
    sources.length
      ? table('sources-table', ['Listener', 'Address', 'Records', 'Bytes', 'Records/s', 'Rejected', 'Dropped', 'Last seen'],
        sources.map((s) => h('tr', { 'data-address': s.address },
          h('td', null, h('code', null, s.listener)), h('td', null, s.address), h('td', { class: 'num' }, num(s.records)),
          h('td', { class: 'num' }, num(s.bytes)), h('td', { class: 'num' }, s.recordsPerSecond.toFixed(1)),
          h('td', { class: 'num' }, num(s.rejected)), h('td', { class: 'num' }, num(s.dropped)),
          h('td', null, s.lastSeen ? formatTime(s.lastSeen) : '—'))))
      : h('p', { class: 'muted' }, 'Nothing received yet.'));
}

export function sourcesPage(root) {
  const box = h('div', { id: 'sources' }, h('p', { class: 'muted' }, 'Loading…'));
  replace(root, h('main', { id: 'main', class: 'padded' },
    h('h1', null, 'Sources'),
    h('p', { class: 'muted' }, 'What sends data, and what this node\'s syslog and NetFlow listeners received; refreshed every 10 seconds.'),
    box));
  document.title = 'Sources · seclake';
  let stopped = false;
  const load = async () => {
    try {
      render(box, await call('ds/collector_list', {}));
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return;
      replace(box, notice('error', err instanceof ApiError ? `${err.message} (HTTP ${err.status})` : String(err)));
    }
    if (!stopped && document.body.contains(box)) setTimeout(load, REFRESH_MS);
  };
  load();
  return { unmount: () => { stopped = true; } };
}
