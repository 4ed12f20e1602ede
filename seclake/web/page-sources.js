// Sources: the node's syslog and NetFlow listeners and what each sending
// address sent (ds/collector_list), refreshed every few seconds while shown.

import { ApiError, call } from './api.js';
import { h, notice, num, replace } from './dom.js';
import { formatTime } from './time.js';

const REFRESH_MS = 5000;

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
  const { listeners = [], sources = [] } = reply;
  if (!listeners.length) {
    replace(box, notice('info', 'This node runs no listeners. Start them with ',
      h('code', null, 'seclake serve --listen syslog+udp://0.0.0.0:5514'), ' (see docs/receivers.md); imports and ',
      h('code', null, '/_bulk'), ' are counted in /metrics.'));
    return;
  }
  replace(box,
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
    h('p', { class: 'muted' }, 'What syslog and NetFlow senders sent to this node; refreshed every 5 seconds.'),
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
