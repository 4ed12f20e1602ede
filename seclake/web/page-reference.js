// The API reference: every call with what it takes and what it answers,
// drawn from the server's own /api/openapi.json (made from the pydantic
// models in seclake/api/request.py and reply.py, their descriptions
// included), so it cannot drift from the service. A contents list leads to
// each call; a type name links to its definition under "Types".

import { h, notice, replace } from './dom.js';

const typeId = (name) => `type-${name}`;

/** A JSON schema as short inline content: "string", "array of <a>UserRecord</a>", ... */
function typeOf(schema) {
  if (!schema) return ['any'];
  if (schema.$ref) {
    const name = schema.$ref.split('/').pop();
    return [h('a', { href: `#${typeId(name)}`, class: 'type-link' }, name)];
  }
  if (schema.const !== undefined) return [JSON.stringify(schema.const)];
  if (schema.enum) return [schema.enum.map((v) => JSON.stringify(v)).join(' | ')];
  const alternatives = schema.anyOf || schema.oneOf;
  if (alternatives) return alternatives.flatMap((s, i) => [...(i ? [' | '] : []), ...typeOf(s)]);
  if (schema.type === 'array') return ['array of ', ...typeOf(schema.items)];
  if (schema.type === 'object' && schema.additionalProperties && typeof schema.additionalProperties === 'object') {
    return ['object of ', ...typeOf(schema.additionalProperties)];
  }
  return [schema.type || (schema.properties ? 'object' : 'any')];
}

/** A table of an object schema's members; a reference to a type links to it. */
function members(schema) {
  if (schema && schema.properties && !Object.keys(schema.properties).length) return h('p', { class: 'muted' }, 'None: send {}.');
  if (!schema || !schema.properties) {
    return h('p', null, h('span', { class: 'muted' }, 'Type: '), ...typeOf(schema),
      schema && schema.description ? ` — ${schema.description}` : '');
  }
  const required = new Set(schema.required || []);
  return h('table', { class: 'admin-table reference-fields' },
    h('thead', null, h('tr', null, ['Field', 'Type', 'Description'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', null, Object.entries(schema.properties).map(([name, s]) => h('tr', { dataset: { field: name } },
      h('td', null, h('code', null, name), required.has(name) ? h('span', { title: 'required' }, ' *') : ''),
      h('td', null, ...typeOf(s)),
      h('td', null, s.description || '')))));
}

/** A call's kargs or response: its type's name (a link) and, for an object, its members at once. */
function shape(schema, defs) {
  if (!schema || !schema.$ref) return members(schema);
  const target = defs[schema.$ref.split('/').pop()];
  return [h('p', { class: 'muted' }, 'Type: ', ...typeOf(schema)), target && target.properties ? members(target) : null];
}

/** A raw call (an import): its body and its parameters in the path, query string and headers. */
function parameters(op) {
  return [
    h('p', null, op.requestBody.description ? `The body: ${op.requestBody.description}.` : 'A raw body.'),
    h('table', { class: 'admin-table reference-fields' },
      h('thead', null, h('tr', null, ['Parameter', 'In', 'Type', 'Description'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', null, (op.parameters || []).map((p) => h('tr', { dataset: { field: p.name } },
        h('td', null, h('code', null, p.name), p.required ? h('span', { title: 'required' }, ' *') : ''),
        h('td', null, p.in), h('td', null, ...typeOf(p.schema)), h('td', null, p.description || '')))))];
}

function callSection(path, op, defs) {
  const body = op.requestBody.content['application/json'];
  const ok = op.responses['200'].content['application/json'].schema.oneOf[0];
  return h('section', { class: 'reference-call', id: op.operationId, 'aria-labelledby': `${op.operationId}-title` },
    h('h2', { id: `${op.operationId}-title` }, h('code', null, path)),
    h('p', null, op.summary),
    h('h3', null, body ? 'kargs' : 'request'),
    body ? shape(body.schema.properties.kargs, defs) : parameters(op),
    h('h3', null, 'response'),
    shape(ok.properties.response, defs));
}

function contents(doc, defs) {
  const groups = new Map();
  for (const [path, item] of Object.entries(doc.paths)) {
    const tag = (item.post.tags || ['other'])[0];
    if (!groups.has(tag)) groups.set(tag, []);
    groups.get(tag).push([path, item.post]);
  }
  return h('nav', { class: 'reference-contents', 'aria-label': 'Contents' },
    h('h2', null, 'Contents'),
    h('ul', null,
      [...groups].map(([tag, ops]) => h('li', null, h('strong', null, tag),
        h('ul', null, ops.map(([path, op]) => h('li', null, h('a', { href: `#${op.operationId}` }, path)))))),
      h('li', null, h('a', { href: '#types' }, h('strong', null, 'Types')), ` (${Object.keys(defs).length})`)));
}

function scrollToHash() {
  const id = decodeURIComponent(location.hash.slice(1));
  const target = id && document.getElementById(id);
  if (target) target.scrollIntoView();
}

export function referencePage(root) {
  const list = h('div', { id: 'reference' }, h('p', { class: 'muted' }, 'Loading…'));
  replace(root, h('main', { id: 'main', class: 'padded' },
    h('h1', null, 'API reference'),
    h('p', null, 'Every call is a POST of ', h('code', null, '{"kargs": {...}}'), ' with a token in ',
      h('code', null, 'Servicetoken'), ', answered ', h('code', null, '{"verdict": "OK", "response": ...}'),
      ' or an ERROR whose status is in ', h('code', null, 'X-Seclake-Status'), '. The machine-readable document: ',
      h('a', { href: '/api/openapi.json' }, '/api/openapi.json'), ' (OpenAPI 3.1). Fields marked * are required.'),
    list));
  document.title = 'API reference · seclake';
  fetch('/api/openapi.json', { credentials: 'omit', cache: 'no-store' })
    .then((r) => r.json())
    .then((doc) => {
      const defs = (doc.components && doc.components.schemas) || {};
      replace(list,
        contents(doc, defs),
        Object.entries(doc.paths).map(([path, item]) => callSection(path, item.post, defs)),
        h('section', { id: 'types', 'aria-labelledby': 'types-title' },
          h('h2', { id: 'types-title' }, 'Types'),
          Object.keys(defs).sort().map((name) => h('section', { class: 'reference-type', id: typeId(name) },
            h('h3', null, h('code', null, name)),
            defs[name].description ? h('p', null, defs[name].description) : null,
            members(defs[name])))));
      scrollToHash();
    })
    .catch((e) => replace(list, notice('error', `The reference could not be loaded (${e.message}).`)));
  // A contents link changes only the fragment: scroll there, do not draw the page again.
  return { update: scrollToHash };
}
