// Alerts: the notification destinations (each with "Send a test"), the
// notification rules, and the deliveries of the outbox (pending, failed:
// "Resend"), refreshed while shown. Rules and destinations are written with
// `seclake alerts import` or the notify/* calls (docs/alerting.md); secrets
// are never shown, only which ones are set.

import { ApiError, call } from './api.js';
import { h, notice, num, replace } from './dom.js';
import { formatTime } from './time.js';

const REFRESH_MS = 10000;

function table(id, columns, rows, empty) {
  if (!rows.length) return h('p', { class: 'muted', id }, empty);
  return h('table', { class: 'admin-table', id },
    h('thead', null, h('tr', null, columns.map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', null, rows));
}

function errorText(err) {
  return err instanceof ApiError ? `${err.message} (HTTP ${err.status})` : String(err);
}

const target = (d) => d.url || (d.to || []).join(', ') || (d.channel ? `channel ${d.channel}` : '—');

function destinationRow(d) {
  const outcome = h('span', { class: 'test-outcome', role: 'status' });
  const button = h('button', {
    type: 'button', class: 'send-test', 'aria-label': `Send a test to ${d.name}`,
    onClick: async () => {
      button.disabled = true;
      replace(outcome, 'Sending…');
      try {
        const r = await call('notify/test', { name: d.name });
        replace(outcome, r.sent ? h('span', { class: 'ok' }, 'Sent') : h('span', { class: 'error' }, `Failed: ${r.error}`));
      } catch (err) {
        replace(outcome, h('span', { class: 'error' }, errorText(err)));
      } finally {
        button.disabled = false;
      }
    },
  }, 'Send a test');
  return h('tr', { dataset: { name: d.name } },
    h('td', null, d.name), h('td', null, d.kind), h('td', { class: 'mono' }, target(d)),
    h('td', null, (d.secretsSet || []).join(', ') || '—'), h('td', null, d.enabled === false ? 'disabled' : 'enabled'),
    h('td', null, button, ' ', outcome));
}

function when(r) {
  const parts = [];
  if (r.on === 'summary_level') parts.push(`summary reaches ${r.level}`);
  else if (r.on === 'summary_status') parts.push(`summary status → ${(r.statuses || []).join(' | ') || 'any'}`);
  else parts.push('behavior made');
  if ((r.rules || []).length) parts.push(`rules ${r.rules.join(', ')}`);
  if ((r.techniques || []).length) parts.push(`ATT&CK ${r.techniques.join(', ')}`);
  if (r.minScore !== null && r.minScore !== undefined) parts.push(`score ≥ ${r.minScore}`);
  if ((r.keyTypes || []).length) parts.push(`key types ${r.keyTypes.join(', ')}`);
  if ((r.customers || []).length) parts.push(`customers ${r.customers.join(', ')}`);
  return parts.join('; ');
}

function deliveryRow(d, reload) {
  const resend = d.status === 'pending' ? null : h('button', {
    type: 'button', class: 'resend', 'aria-label': `Resend delivery ${d.id}`,
    onClick: async () => {
      resend.disabled = true;
      try {
        await call('notify/resend', { id: d.id });
        reload();
      } catch (err) {
        resend.replaceWith(h('span', { class: 'error' }, errorText(err)));
      }
    },
  }, 'Resend');
  return h('tr', { dataset: { id: String(d.id), status: d.status } },
    h('td', { class: 'num' }, String(d.id)), h('td', { class: 'cell-time' }, formatTime(d.createdOn)),
    h('td', null, d.rule), h('td', null, d.destination), h('td', null, d.title),
    h('td', null, h('span', { class: `status status-${d.status}` }, d.status)),
    h('td', { class: 'num' }, num(d.attempts)), h('td', { class: 'num' }, num(d.folded)),
    h('td', { class: 'cell-message' }, d.lastError || (d.status === 'pending' ? `next ${formatTime(d.nextAttempt)}` : '')),
    h('td', null, resend));
}

export function alertsPage(root) {
  const destinations = h('div', { id: 'alert-destinations' }, h('p', { class: 'muted' }, 'Loading…'));
  const rules = h('div', { id: 'alert-rules' });
  const deliveries = h('div', { id: 'alert-deliveries' });
  const status = h('select', { id: 'delivery-status', 'aria-label': 'Deliveries to show', onChange: () => loadDeliveries() },
    h('option', { value: '' }, 'All'), h('option', { value: 'pending' }, 'Pending'),
    h('option', { value: 'failed' }, 'Failed'), h('option', { value: 'sent' }, 'Sent'));
  replace(root, h('main', { id: 'main', class: 'padded' },
    h('h1', null, 'Alerts'),
    h('p', { class: 'muted' }, 'Where behaviors and summaries are pushed (webhooks, Slack, Teams, PagerDuty, email, syslog CEF), ',
      'when, and what was delivered. Write rules and destinations with ', h('code', null, 'seclake alerts import'),
      ' or the notify/* calls; secrets are never shown.'),
    h('h2', null, 'Destinations'), destinations,
    h('h2', null, 'Rules'), rules,
    h('h2', null, 'Deliveries'), h('p', null, h('label', { for: 'delivery-status' }, 'Show '), status), deliveries));
  document.title = 'Alerts · seclake';
  let stopped = false;

  async function loadDeliveries() {
    try {
      const kargs = status.value ? { status: status.value, limit: 200 } : { limit: 200 };
      const r = await call('notify/delivery_list', kargs);
      const c = r.counts;
      replace(deliveries,
        h('p', { class: 'muted', id: 'delivery-counts' }, `${num(c.pending)} pending, ${num(c.failed)} failed, ${num(c.sent)} sent`),
        table('deliveries-table', ['Id', 'Made', 'Rule', 'Destination', 'About', 'Status', 'Attempts', 'Folded', 'Last error', ''],
          r.deliveries.map((d) => deliveryRow(d, loadDeliveries)), 'No deliveries.'));
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 401)) replace(deliveries, notice('error', errorText(err)));
    }
  }

  async function load() {
    try {
      const [d, r] = await Promise.all([call('notify/destination_dao', { action: 'list' }), call('notify/rule_dao', { action: 'list' })]);
      replace(destinations, table('destinations-table', ['Name', 'Kind', 'Target', 'Secrets set', 'State', ''],
        d.destinations.map(destinationRow), 'No destinations yet.'));
      replace(rules, table('alert-rules-table', ['Name', 'When', 'Send to', 'Throttle', 'State'],
        r.rules.map((x) => h('tr', { dataset: { name: x.name } },
          h('td', null, x.name), h('td', null, when(x)), h('td', null, x.destinations.join(', ')),
          h('td', null, x.throttleSeconds ? `${num(x.throttleSeconds)} s per key` : 'none'),
          h('td', null, x.enabled ? 'enabled' : 'disabled'))), 'No notification rules yet.'));
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return;
      replace(destinations, notice('error', errorText(err)));
    }
  }

  const tick = async () => {
    await loadDeliveries();
    if (!stopped && document.body.contains(deliveries)) setTimeout(tick, REFRESH_MS);
  };
  load();
  tick();
  return { unmount: () => { stopped = true; } };
}
