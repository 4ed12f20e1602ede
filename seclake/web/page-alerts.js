// Alerts: the notification destinations (each with "Send a test"), the
// notification rules, and the deliveries of the outbox (pending, failed:
// "Resend"), refreshed while shown; forms add a destination or a rule, and
// each can be deleted (docs/alerting.md). Secrets are sent, never shown:
// only which ones are set.

import { ApiError, call } from './api.js';
import { confirmDialog, h, notice, num, replace } from './dom.js';
import { formatTime } from './time.js';

const REFRESH_MS = 10000;

function table(id, columns, rows, empty) {
  if (!rows.length) return h('p', { class: 'muted', id }, empty);
  return h('table', { class: 'admin-table', id },
    h('thead', null, h('tr', null, columns.map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', null, rows));
}

function errorText(err) {
  if (err instanceof ApiError) return `${err.message} (HTTP ${err.status})`;
  return err instanceof Error ? err.message : String(err);
}

const isEmpty = (v) => v === '' || (Array.isArray(v) ? !v.length : typeof v === 'object' && !Object.keys(v).length);

const target = (d) => d.url || (d.to || []).join(', ') || (d.channel ? `channel ${d.channel}` : '—');

const KINDS = ['webhook', 'slack', 'teams', 'pagerduty', 'email', 'syslog'];
const list = (text) => text.split(/[\n,]/).map((x) => x.trim()).filter(Boolean);

function field(id, label, input) {
  return [h('label', { for: id }, label), input];
}

/** "Name: value" lines -> {Name: value}. */
function headerLines(text) {
  const out = {};
  for (const line of text.split('\n').map((x) => x.trim()).filter(Boolean)) {
    const at = line.indexOf(':');
    if (at < 1) throw new Error(`Header "${line}": write it as Name: value.`);
    out[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return out;
}

function destinationForm(done) {
  const input = (id, attrs = {}) => h('input', { id, ...attrs });
  const name = input('dest-name', { required: true });
  const kind = h('select', { id: 'dest-kind' }, KINDS.map((k) => h('option', { value: k }, k)));
  const url = input('dest-url', { class: 'mono', placeholder: 'https://..., or udp:// tcp:// tls://host:port for syslog' });
  const secret = input('dest-secret', { type: 'password', autocomplete: 'off', placeholder: 'webhook: signing secret (16+ characters)' });
  const routingKey = input('dest-routing-key', { type: 'password', autocomplete: 'off', placeholder: 'pagerduty' });
  const to = input('dest-to', { placeholder: 'email: soc@example.org, ...' });
  const cc = input('dest-cc', { placeholder: 'email' });
  const channel = input('dest-channel', { placeholder: 'slack: #channel' });
  const headers = h('textarea', { id: 'dest-headers', rows: 2, class: 'mono', placeholder: 'webhook: Name: value, one a line (secret)' });
  const problem = h('div');
  return h('form', { class: 'admin-form', id: 'destination-form', onSubmit: async (e) => {
    e.preventDefault();
    try {
      const d = { name: name.value.trim(), kind: kind.value };
      const put = (key, value) => { if (!isEmpty(value)) d[key] = value; };
      put('url', url.value.trim());
      put('secret', secret.value);
      put('routingKey', routingKey.value);
      put('to', list(to.value));
      put('cc', list(cc.value));
      put('channel', channel.value.trim());
      put('headers', headerLines(headers.value));
      await call('notify/destination_dao', { action: 'add', destination: d });
      done(`Destination ${d.name} added.`);
    } catch (err) {
      replace(problem, notice('error', errorText(err)));
    }
  } },
  h('h3', null, 'Add a destination'),
  h('div', { class: 'form-grid' },
    field('dest-name', 'Name', name), field('dest-kind', 'Kind', kind), field('dest-url', 'URL', url),
    field('dest-secret', 'Signing secret', secret), field('dest-routing-key', 'Routing key', routingKey),
    field('dest-to', 'To', to), field('dest-cc', 'Cc', cc), field('dest-channel', 'Channel', channel),
    field('dest-headers', 'Headers', headers)),
  problem,
  h('div', { class: 'buttons' }, h('button', { type: 'submit', class: 'primary' }, 'Add destination')));
}

function ruleForm(destinationNames, done) {
  const input = (id, attrs = {}) => h('input', { id, ...attrs });
  const name = input('rule-name', { required: true });
  const on = h('select', { id: 'rule-on' },
    h('option', { value: 'behavior' }, 'a behavior is made'),
    h('option', { value: 'summary_level' }, 'a summary reaches a level'),
    h('option', { value: 'summary_status' }, "a summary's status changes"));
  const level = input('rule-level', { placeholder: 'summary level: critical, serious, high...' });
  const rules = input('rule-rules', { placeholder: 'behavior rule names (empty: any)' });
  const techniques = input('rule-techniques', { placeholder: 'ATT&CK ids: T1110, T1059.001 (empty: any)' });
  const minScore = input('rule-min-score', { type: 'number', min: 0 });
  const throttle = input('rule-throttle', { type: 'number', min: 0, value: '3600' });
  const targets = h('fieldset', { class: 'checks', id: 'rule-destinations' }, h('legend', null, 'Send to'),
    destinationNames.map((n) => h('label', { class: 'check' }, h('input', { type: 'checkbox', value: n }), ` ${n}`)));
  const problem = h('div');
  return h('form', { class: 'admin-form', id: 'rule-form', onSubmit: async (e) => {
    e.preventDefault();
    const rule = {
      name: name.value.trim(), on: on.value, rules: list(rules.value), techniques: list(techniques.value),
      destinations: [...targets.querySelectorAll('input:checked')].map((c) => c.value),
      throttleSeconds: Number(throttle.value || 0),
    };
    if (level.value.trim()) rule.level = level.value.trim();
    if (minScore.value !== '') rule.minScore = Number(minScore.value);
    try {
      await call('notify/rule_dao', { action: 'add', rule });
      done(`Rule ${rule.name} added.`);
    } catch (err) {
      replace(problem, notice('error', errorText(err)));
    }
  } },
  h('h3', null, 'Add a rule'),
  h('div', { class: 'form-grid' },
    field('rule-name', 'Name', name), field('rule-on', 'When', on), field('rule-level', 'Level', level),
    field('rule-rules', 'Behavior rules', rules), field('rule-techniques', 'Techniques', techniques),
    field('rule-min-score', 'Score at least', minScore), field('rule-throttle', 'Throttle (s per key)', throttle),
    h('span', null), targets),
  problem,
  h('div', { class: 'buttons' }, h('button', { type: 'submit', class: 'primary' }, 'Add rule')));
}

function deleteButton(what, name, callName, reload) {
  return h('button', {
    type: 'button', class: 'danger delete', 'aria-label': `Delete ${what} ${name}`,
    onClick: async () => {
      if (!(await confirmDialog(`Delete ${what} ${name}?`, 'This cannot be undone.', 'Delete', true))) return;
      try {
        await call(callName, { action: 'delete', name });
        reload(`${what.charAt(0).toUpperCase() + what.slice(1)} ${name} deleted.`);
      } catch (err) {
        reload(null, errorText(err));
      }
    },
  }, 'Delete');
}

function destinationRow(d, reload) {
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
    h('td', null, button, ' ', deleteButton('destination', d.name, 'notify/destination_dao', reload), ' ', outcome));
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
  const message = h('div', { id: 'alert-message', role: 'status' });
  const deliveries = h('div', { id: 'alert-deliveries' });
  const status = h('select', { id: 'delivery-status', 'aria-label': 'Deliveries to show', onChange: () => loadDeliveries() },
    h('option', { value: '' }, 'All'), h('option', { value: 'pending' }, 'Pending'),
    h('option', { value: 'failed' }, 'Failed'), h('option', { value: 'sent' }, 'Sent'));
  replace(root, h('main', { id: 'main', class: 'padded' },
    h('h1', null, 'Alerts'),
    h('p', { class: 'muted' }, 'Where behaviors and summaries are pushed (webhooks, Slack, Teams, PagerDuty, email, syslog CEF), ',
      'when, and what was delivered. As files: ', h('code', null, 'seclake alerts export / import'),
      '. Secrets are sent, never shown.'),
    message,
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

  function reload(done, problem) {
    replace(message, done ? notice('ok', done) : problem ? notice('error', problem) : null);
    load();
  }

  async function load() {
    try {
      const [d, r] = await Promise.all([call('notify/destination_dao', { action: 'list' }), call('notify/rule_dao', { action: 'list' })]);
      replace(destinations, table('destinations-table', ['Name', 'Kind', 'Target', 'Secrets set', 'State', ''],
        d.destinations.map((x) => destinationRow(x, reload)), 'No destinations yet.'), destinationForm(reload));
      replace(rules, table('alert-rules-table', ['Name', 'When', 'Send to', 'Throttle', 'State', ''],
        r.rules.map((x) => h('tr', { dataset: { name: x.name } },
          h('td', null, x.name), h('td', null, when(x)), h('td', null, x.destinations.join(', ')),
          h('td', null, x.throttleSeconds ? `${num(x.throttleSeconds)} s per key` : 'none'),
          h('td', null, x.enabled ? 'enabled' : 'disabled'),
          h('td', null, deleteButton('rule', x.name, 'notify/rule_dao', reload)))), 'No notification rules yet.'),
        d.destinations.length ? ruleForm(d.destinations.map((x) => x.name), reload) : null);
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
