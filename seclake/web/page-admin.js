// Administration (admins only; the server's 403 is the real guard): users,
// API tokens, roles, data policies and the audit log. A call the server does
// not have (404 "unknown call") leaves its page saying so.

import { ApiError, call, isAdmin, session } from './api.js';
import { confirmDialog, h, notice, recordView, replace, spinner } from './dom.js';
import { link } from './router.js';
import { searchPage, unavailable } from './searchkit.js';
import { formatTime } from './time.js';

const TABS = [
  { key: 'users', label: 'Users' },
  { key: 'tokens', label: 'API tokens' },
  { key: 'roles', label: 'Roles' },
  { key: 'policies', label: 'Data policies' },
  { key: 'audit', label: 'Audit log' },
];
const BUILTIN_ROLES = ['admin', 'analyst', 'ingest'];
const PERMISSIONS = ['search', 'triage', 'ingest', 'admin'];
const POLICY_DATASETS = ['event', 'flow', 'behavior', 'summary', 'audit'];

// Times arrive as epoch ms or ISO 8601; both are shown in the user's zone.
const when = (v) => {
  if (typeof v === 'number') return formatTime(v);
  if (!v) return '—';
  const ms = Date.parse(v);
  return Number.isNaN(ms) ? String(v) : formatTime(ms);
};
const isMissing = (err) => err instanceof ApiError && err.status === 404 && /unknown call/.test(err.message);

function failure(err) {
  if (err instanceof ApiError && err.status === 403) {
    return notice('error', `Not allowed: ${err.message}. Administration needs the admin role.`);
  }
  return notice('error', err instanceof ApiError ? `${err.message} (HTTP ${err.status})` : String(err));
}

/** Run an admin call; shows failures in `box` (unless the session ended). */
async function attempt(box, fn) {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return undefined;
    replace(box, failure(err));
    return undefined;
  }
}

export function adminPage(root) {
  const tab = location.pathname.split('/')[2] || 'users';
  const known = TABS.find((t) => t.key === tab);
  const content = h('div', { class: 'admin-content' });
  replace(root, h('div', { class: 'admin-page' },
    h('nav', { class: 'tabs', 'aria-label': 'Administration' },
      TABS.map((t) => link(`/admin/${t.key}`, { class: t.key === tab ? 'active' : null, 'aria-current': t.key === tab ? 'page' : null }, t.label))),
    // The audit page is a search page with its own <main>.
    h(tab === 'audit' ? 'div' : 'main', { id: tab === 'audit' ? null : 'main', class: 'admin-main' }, content)));
  document.title = `${known ? known.label : 'Administration'} · seclake`;
  if (!isAdmin()) {
    replace(content, notice('error', 'Administration is for users with the admin role.'));
    return {};
  }
  switch (tab) {
    case 'users': usersTab(content); return {};
    case 'tokens': tokensTab(content); return {};
    case 'roles': rolesTab(content); return {};
    case 'policies': policiesTab(content); return {};
    case 'audit': return auditPage(content);
    default:
      replace(content, h('h1', null, 'No such page'), link('/admin/users', null, 'Users'));
      return {};
  }
}

// -- users ----------------------------------------------------------------------

async function roleNames() {
  try {
    const res = await call('auth/roleList', {});
    return res.roles.map((r) => r.name);
  } catch {
    return BUILTIN_ROLES;
  }
}

function roleChecks(names, selected, idPrefix) {
  return h('fieldset', { class: 'checks' }, h('legend', null, 'Roles'),
    names.map((name) => h('label', { class: 'check' },
      h('input', { type: 'checkbox', name: 'role', value: name, id: `${idPrefix}-${name}`, checked: selected.includes(name) }), ` ${name}`)));
}
const checked = (fieldset) => [...fieldset.querySelectorAll('input[type=checkbox]:checked')].map((c) => c.value);

async function usersTab(root) {
  const message = h('div', { class: 'admin-message', 'aria-live': 'polite' });
  const list = h('div', { class: 'admin-list' }, spinner());
  const roles = await roleNames();
  const me = session().userName;

  const fields = {
    username: h('input', { id: 'new-username', required: true, autocomplete: 'off' }),
    password: h('input', { id: 'new-password', type: 'password', required: true, autocomplete: 'new-password', minlength: 10 }),
    firstName: h('input', { id: 'new-first' }),
    lastName: h('input', { id: 'new-last' }),
    email: h('input', { id: 'new-email', type: 'email' }),
  };
  const newRoles = roleChecks(roles, ['analyst'], 'new-role');
  const addForm = h('form', { class: 'admin-form', id: 'add-user', onSubmit: async (e) => {
    e.preventDefault();
    const user = { username: fields.username.value.trim(), password: fields.password.value, roles: checked(newRoles) };
    for (const k of ['firstName', 'lastName', 'email']) if (fields[k].value.trim()) user[k] = fields[k].value.trim();
    const added = await attempt(message, () => call('auth/userAdd', { user }));
    if (added) {
      replace(message, notice('ok', `User ${added.username} added.`));
      addForm.reset();
      load();
    }
  } },
  h('h2', null, 'Add a user'),
  h('div', { class: 'form-grid' },
    h('label', { for: 'new-username' }, 'Username'), fields.username,
    h('label', { for: 'new-password' }, 'Password'), fields.password,
    h('label', { for: 'new-first' }, 'First name'), fields.firstName,
    h('label', { for: 'new-last' }, 'Last name'), fields.lastName,
    h('label', { for: 'new-email' }, 'E-mail'), fields.email),
  newRoles,
  h('button', { type: 'submit', class: 'primary' }, 'Add user'));

  replace(root, h('h1', null, 'Users'), message, list, addForm);

  async function load() {
    const res = await attempt(list, () => call('auth/userList', {}));
    if (!res) return;
    replace(list, h('table', { class: 'admin-table', id: 'users-table' },
      h('thead', null, h('tr', null, ['Username', 'Name', 'E-mail', 'Roles', 'State', 'Last sign-in', 'Actions'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', null, res.users.map((u) => userRow(u)))));
  }

  function userRow(u) {
    const name = [u.firstName, u.lastName].filter(Boolean).join(' ');
    const rolesCell = h('td', null, (u.roles || []).join(', ') || '—');
    const update = async (changes, done) => {
      const updated = await attempt(message, () => call('auth/userUpdate', { user: { username: u.username, ...changes } }));
      if (updated) {
        replace(message, notice('ok', done));
        load();
      }
    };
    const editRoles = () => {
      const box = roleChecks(roles, u.roles || [], `roles-${u.username}`);
      replace(rolesCell, h('form', { class: 'inline-form', onSubmit: (e) => { e.preventDefault(); update({ roles: checked(box) }, `Roles of ${u.username} saved.`); } },
        box,
        h('button', { type: 'submit', class: 'primary small' }, 'Save'),
        h('button', { type: 'button', class: 'small', onClick: () => load() }, 'Cancel')));
      box.querySelector('input').focus();
    };
    return h('tr', { dataset: { user: u.username }, class: u.disabled ? 'disabled' : null },
      h('td', null, h('strong', null, u.username), u.username === me ? h('span', { class: 'muted small' }, ' (you)') : null),
      h('td', null, name || '—'),
      h('td', null, u.email || '—'),
      rolesCell,
      h('td', null, u.disabled ? h('span', { class: 'status status-off' }, 'disabled') : h('span', { class: 'status status-ok' }, 'enabled')),
      h('td', { class: 'nowrap' }, when(u.lastLogin)),
      h('td', { class: 'actions' },
        h('button', { type: 'button', class: 'small', onClick: editRoles, 'aria-label': `Edit the roles of ${u.username}` }, 'Roles…'),
        h('button', {
          type: 'button', class: 'small', 'aria-label': `${u.disabled ? 'Enable' : 'Disable'} ${u.username}`,
          onClick: () => update({ disabled: !u.disabled }, `${u.username} ${u.disabled ? 'enabled' : 'disabled'}.`),
        }, u.disabled ? 'Enable' : 'Disable'),
        h('button', { type: 'button', class: 'small danger-outline', 'aria-label': `Delete ${u.username}`, onClick: async () => {
          if (!(await confirmDialog('Delete user', `Delete the user ${u.username}? Their API tokens stop working.`, 'Delete', true))) return;
          const done = await attempt(message, () => call('auth/userDelete', { username: u.username }));
          if (done) {
            replace(message, notice('ok', `User ${u.username} deleted.`));
            load();
          }
        } }, 'Delete')));
  }
  load();
}

// -- API tokens -----------------------------------------------------------------

async function tokensTab(root) {
  const message = h('div', { class: 'admin-message', 'aria-live': 'polite' });
  const created = h('div', { class: 'token-created' });
  const list = h('div', { class: 'admin-list' }, spinner());
  const users = await call('auth/userList', {}).then((r) => r.users.map((u) => u.username)).catch(() => [session().userName]);
  const name = h('input', { id: 'token-name', required: true, maxlength: 100, placeholder: 'e.g. ci-export' });
  const owner = h('select', { id: 'token-user' }, users.map((u) => h('option', { value: u, selected: u === session().userName }, u)));
  const days = h('input', { id: 'token-days', type: 'number', min: 1, max: 3650, placeholder: 'never' });
  const form = h('form', { class: 'admin-form', id: 'create-token', onSubmit: async (e) => {
    e.preventDefault();
    const kargs = { action: 'add', name: name.value.trim(), username: owner.value };
    if (days.value) kargs.expiresInDays = Number(days.value);
    const res = await attempt(message, () => call('auth/api_token', kargs));
    if (!res) return;
    replace(message);
    showOnce(res);
    form.reset();
    owner.value = session().userName;
    load();
  } },
  h('h2', null, 'Create a token'),
  h('div', { class: 'form-grid' },
    h('label', { for: 'token-name' }, 'Name'), name,
    h('label', { for: 'token-user' }, 'Acts as user'), owner,
    h('label', { for: 'token-days' }, 'Expires in days'), days),
  h('button', { type: 'submit', class: 'primary' }, 'Create token'));

  function showOnce(res) {
    const field = h('input', { id: 'new-token', class: 'token-value', readonly: true, value: res.token, 'aria-label': 'The new API token', spellcheck: 'false' });
    const copied = h('span', { class: 'copied', 'aria-live': 'polite' });
    const copy = h('button', { type: 'button', id: 'copy-token', class: 'primary', onClick: async () => {
      try {
        await navigator.clipboard.writeText(field.value);
      } catch {
        field.select();
        document.execCommand('copy');
      }
      replace(copied, 'Copied.');
    } }, 'Copy');
    replace(created, h('div', { class: 'notice ok', role: 'status' },
      h('h2', { class: 'minor' }, `Token “${res.name}” for ${res.username}`),
      h('p', null, h('strong', null, 'Copy it now: it is shown only this once.'), ' Send it in the Servicetoken header.'),
      h('div', { class: 'token-row' }, field, copy, copied),
      h('button', { type: 'button', class: 'small', onClick: () => replace(created) }, 'Done, hide it')));
    field.focus();
    field.select();
  }

  replace(root, h('h1', null, 'API tokens'), message, created, form, h('h2', null, 'Tokens'), list);

  async function load() {
    const res = await attempt(list, () => call('auth/api_token', { action: 'list' }));
    if (!res) return;
    if (!res.entries.length) return replace(list, h('p', { class: 'muted' }, 'No API tokens yet.'));
    replace(list, h('table', { class: 'admin-table', id: 'tokens-table' },
      h('thead', null, h('tr', null, ['Name', 'User', 'Starts with', 'Created', 'Expires', 'Last used', 'State', actionsHeader()].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', null, [...res.entries].reverse().map((t) => h('tr', { dataset: { token: String(t.id) }, class: t.state !== 'active' ? 'disabled' : null },
        h('td', null, t.name || '—'),
        h('td', null, t.username),
        h('td', null, h('code', null, `${t.prefix}…`)),
        h('td', { class: 'nowrap' }, when(t.createdOn)),
        h('td', { class: 'nowrap' }, t.expiresOn ? when(t.expiresOn) : 'never'),
        h('td', { class: 'nowrap' }, t.lastUsed ? when(t.lastUsed) : 'never'),
        h('td', null, h('span', { class: ['status', t.state === 'active' ? 'status-ok' : 'status-off'] }, t.state)),
        h('td', null, t.state === 'active' ? h('button', { type: 'button', class: 'small danger-outline', 'aria-label': `Revoke the token ${t.name}`, onClick: async () => {
          if (!(await confirmDialog('Revoke token', `Revoke the token “${t.name}” of ${t.username}? Clients using it are refused from now on.`, 'Revoke', true))) return;
          const done = await attempt(message, () => call('auth/api_token', { action: 'delete', id: t.id }));
          if (done) {
            replace(message, notice('ok', `Token ${t.name} revoked.`));
            load();
          }
        } }, 'Revoke') : null))))));
  }
  load();
}

// -- roles and data policies -----------------------------------------------------

/** A list-and-edit page for roles or data policies; "not available" on 404. */
function registryTab(root, spec) {
  const message = h('div', { class: 'admin-message', 'aria-live': 'polite' });
  const list = h('div', { class: 'admin-list' }, spinner());
  const editor = h('div', { class: 'admin-editor' });
  replace(root, h('h1', null, spec.title), h('p', { class: 'muted' }, spec.help), message, list, editor);

  async function load() {
    let res;
    try {
      res = await call(spec.list, {});
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return;
      if (isMissing(err)) return replace(root, unavailable(spec.title, spec.list));
      return replace(list, failure(err));
    }
    const items = res[spec.key];
    replace(list, items.length ? h('table', { class: 'admin-table', id: `${spec.key}-table` },
      h('thead', null, h('tr', null, [...spec.columns.map((c) => c[0]), actionsHeader()].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', null, items.map((item) => h('tr', { dataset: { name: item.name } },
        spec.columns.map(([, render]) => h('td', null, render(item))),
        h('td', { class: 'actions' }, item.builtIn ? h('span', { class: 'muted small' }, 'built in') : [
          h('button', { type: 'button', class: 'small', 'aria-label': `Edit ${item.name}`, onClick: () => edit(item) }, 'Edit'),
          h('button', { type: 'button', class: 'small danger-outline', 'aria-label': `Delete ${item.name}`, onClick: async () => {
            if (!(await confirmDialog(`Delete ${spec.noun}`, `Delete the ${spec.noun} ${item.name}?`, 'Delete', true))) return;
            const done = await attempt(message, () => call(spec.remove, { name: item.name }));
            if (done) {
              replace(message, notice('ok', `${cap(spec.noun)} ${item.name} deleted.`));
              load();
            }
          } }, 'Delete')]))))) : h('p', { class: 'muted' }, `No ${spec.title.toLowerCase()} yet.`));
    edit(null);
  }

  function edit(item) {
    const form = spec.form(item);
    const problem = h('div');
    replace(editor, h('form', { class: 'admin-form', id: `${spec.key}-form`, onSubmit: async (e) => {
      e.preventDefault();
      let value;
      try {
        value = form.value();
      } catch (err) {
        return replace(problem, notice('error', err.message));
      }
      const done = await attempt(problem, () => call(item ? spec.update : spec.add, { [spec.arg]: value }));
      if (done) {
        replace(message, notice('ok', `${cap(spec.noun)} ${done.name} ${item ? 'saved' : 'added'}.`));
        load();
      }
    } },
    h('h2', null, item ? `Edit ${spec.noun} ${item.name}` : `Add a ${spec.noun}`),
    form.element, problem,
    h('div', { class: 'buttons' },
      item ? h('button', { type: 'button', onClick: () => edit(null) }, 'Cancel') : null,
      h('button', { type: 'submit', class: 'primary' }, item ? 'Save' : `Add ${spec.noun}`))));
    if (item) editor.querySelector('input, textarea').focus();
  }
  load();
}

// A column of buttons still has a header screen readers can read (an empty <th> is an axe violation).
const actionsHeader = () => h('span', { class: 'sr-only' }, 'Actions');
const cap = (text) => text.charAt(0).toUpperCase() + text.slice(1);
const lines = (text) => text.split(/[\n,]/).map((s) => s.trim()).filter(Boolean);

function rolesTab(root) {
  registryTab(root, {
    title: 'Roles', noun: 'role', key: 'roles', arg: 'role',
    list: 'auth/roleList', add: 'auth/roleAdd', update: 'auth/roleUpdate', remove: 'auth/roleDelete',
    help: 'A role grants permissions, may limit the calls its holders make (API policies) and the data they see (data policies). Give roles to users on the Users page.',
    columns: [
      ['Name', (r) => h('strong', null, r.name)],
      ['Description', (r) => r.description || '—'],
      ['Permissions', (r) => (r.permissions || []).join(', ') || '—'],
      ['API policies', (r) => (r.APIPolicies || []).join(', ') || 'any call'],
      ['Data policies', (r) => (r.dataPolicies || []).join(', ') || 'all data'],
    ],
    form(item) {
      const name = h('input', { id: 'role-name', required: true, value: item ? item.name : '', readonly: !!item });
      const description = h('input', { id: 'role-description', value: item ? item.description || '' : '' });
      const perms = h('fieldset', { class: 'checks' }, h('legend', null, 'Permissions'),
        PERMISSIONS.map((p) => h('label', { class: 'check' },
          h('input', { type: 'checkbox', value: p, checked: item ? (item.permissions || []).includes(p) : p === 'search' }), ` ${p}`)));
      const api = h('textarea', { id: 'role-api', rows: 2, placeholder: 'ds/*, auth/userList (empty: any call the permissions allow)' }, item ? (item.APIPolicies || []).join('\n') : '');
      const data = h('textarea', { id: 'role-data', rows: 2, placeholder: 'names of data policies (empty: all data)' }, item ? (item.dataPolicies || []).join('\n') : '');
      return {
        element: h('div', { class: 'form-grid' },
          h('label', { for: 'role-name' }, 'Name'), name,
          h('label', { for: 'role-description' }, 'Description'), description,
          h('span', null), perms,
          h('label', { for: 'role-api' }, 'API policies'), api,
          h('label', { for: 'role-data' }, 'Data policies'), data),
        value: () => ({
          name: name.value.trim(), description: description.value.trim(), permissions: checked(perms),
          APIPolicies: lines(api.value), dataPolicies: lines(data.value),
        }),
      };
    },
  });
}

function policiesTab(root) {
  registryTab(root, {
    title: 'Data policies', noun: 'data policy', key: 'policies', arg: 'policy',
    list: 'auth/dataPolicyList', add: 'auth/dataPolicyAdd', update: 'auth/dataPolicyUpdate', remove: 'auth/dataPolicyDelete',
    help: 'A data policy limits what its holders see: per dataset, a Lucene filter that every search of theirs is combined with. '
      + 'It is an allow list: a dataset it does not name shows its holders no records (write * for every record of a dataset). Attach policies to roles or users.',
    columns: [
      ['Name', (p) => h('strong', null, p.name)],
      ['Description', (p) => p.description || '—'],
      // Every dataset, named or not: what a holder sees of each, as the server applies it.
      ['Filters', (p) => h('ul', { class: 'plain policy-filters' }, POLICY_DATASETS.map((ds) => {
        const q = (p.filters || {})[ds];
        return h('li', { dataset: { dataset: ds } }, h('span', { class: 'muted' }, `${ds}: `),
          q === undefined ? h('em', { class: 'unnamed' }, 'not visible') : q.trim() === '*' ? h('span', null, 'all (', h('code', null, '*'), ')') : h('code', null, q));
      }))],
      ['Updated', (p) => when(p.updatedOn)],
    ],
    form(item) {
      const name = h('input', { id: 'policy-name', required: true, value: item ? item.name : '', readonly: !!item });
      const description = h('input', { id: 'policy-description', value: item ? item.description || '' : '' });
      const filters = POLICY_DATASETS.map((ds) => [ds, h('input', {
        id: `policy-${ds}`, class: 'mono', value: item && item.filters ? item.filters[ds] || '' : '',
        'aria-describedby': 'policy-unnamed-help',
      })]);
      // What a dataset left empty means is asked, not assumed: the server stores filters only
      // (the clients' wire format), so "visible without limit" is saved as * for each empty dataset.
      const choice = (value, label, checked) => h('label', { class: 'check' },
        h('input', { type: 'radio', name: 'policy-unnamed', value, checked, onChange: hints }), ` ${label}`);
      const unnamed = h('fieldset', { class: 'checks', id: 'policy-unnamed' },
        h('legend', null, 'Datasets left empty'),
        choice('hidden', 'are not visible to its holders (no records)', true),
        choice('all', 'are visible without limit (saved as *)', false),
        h('p', { class: 'muted small', id: 'policy-unnamed-help' },
          'A policy only lets through what it names: leave a dataset empty to hide it, or write * for all its records.'));
      const mode = () => (unnamed.querySelector('input[name="policy-unnamed"]:checked') || {}).value || 'hidden';
      function hints() {
        for (const [ds, input] of filters) {
          input.placeholder = mode() === 'all' ? '* (every record)' : ds === 'event' ? 'e.g. @customer:acme (empty: not visible)' : '(empty: not visible)';
        }
      }
      hints();
      return {
        element: h('div', { class: 'form-grid' },
          h('label', { for: 'policy-name' }, 'Name'), name,
          h('label', { for: 'policy-description' }, 'Description'), description,
          filters.map(([ds, input]) => [h('label', { for: `policy-${ds}` }, `Filter on ${ds}`), input]),
          h('span', null), unnamed),
        value: () => {
          const f = {};
          for (const [ds, input] of filters) {
            if (input.value.trim()) f[ds] = input.value.trim();
            else if (mode() === 'all') f[ds] = '*';
          }
          if (!Object.keys(f).length) throw new Error('Give a filter for at least one dataset (or * for all its records).');
          return { name: name.value.trim(), description: description.value.trim(), filters: f };
        },
      };
    },
  });
}

// -- audit log ----------------------------------------------------------------------

function auditTable(res) {
  const hits = res.hits.hits;
  if (!hits.length) return h('div', { class: 'empty-results' }, h('h2', null, 'No entries'), h('p', null, 'Nothing was recorded in this range.'));
  const rows = [];
  hits.forEach((hit, i) => {
    const e = hit._source || {};
    const detail = h('tr', { class: 'detail', id: `audit-${i}`, hidden: true }, h('td', { colspan: 8 }));
    const toggle = h('button', { type: 'button', class: 'expand icon', 'aria-expanded': 'false', 'aria-controls': `audit-${i}`, 'aria-label': 'Show the entry' }, '▸');
    toggle.addEventListener('click', () => {
      const opened = detail.hidden;
      detail.hidden = !opened;
      toggle.setAttribute('aria-expanded', String(opened));
      toggle.textContent = opened ? '▾' : '▸';
      if (opened && !detail.firstChild.firstChild) detail.firstChild.appendChild(recordView({ _id: hit._id, ...e }));
    });
    rows.push(h('tr', { class: ['hit', e.outcome && e.outcome !== 'OK' ? 'failed' : null] },
      h('td', { class: 'cell-toggle' }, toggle),
      h('td', { class: 'cell-time' }, when(e.createdOn)),
      h('td', null, e.username ?? '—'),
      h('td', null, h('code', null, e.call ?? '')),
      h('td', null, e.outcome ?? ''),
      h('td', { class: 'num' }, e.status ?? ''),
      h('td', null, e.client ?? ''),
      h('td', { class: 'cell-message' }, e.detail ?? '')), detail);
  });
  return h('table', { class: 'hits audit' },
    h('thead', null, h('tr', null, [h('span', { class: 'sr-only' }, 'Open'), 'Time', 'User', 'Call', 'Outcome', 'Status', 'Client', 'Detail'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', null, rows));
}

const auditPage = searchPage({
  name: 'audit',
  path: '/admin/audit',
  title: 'Audit log',
  call: 'ds/audit_search',
  placeholder: 'e.g. outcome:ERROR AND call:auth/*',
  defaults: { from: 'now-24h', size: 50 },
  histogram: true,
  histogramKey: 'createdOn',
  facets: () => [
    { field: 'username', title: 'User' },
    { field: 'call', title: 'Call' },
    { field: 'outcome', title: 'Outcome' },
    { field: 'kind', title: 'Kind' },
    { field: 'status', title: 'Status' },
  ],
  kargs: (state, options) => ({ options: { ...options, range_field: 'createdOn', sortField: 'createdOn', sortOrder: 'desc' } }),
  results: auditTable,
});

