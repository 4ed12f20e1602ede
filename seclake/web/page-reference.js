// The API reference: every call with what it takes and what it answers,
// drawn from the server's own /api/openapi.json (made from the pydantic
// models in seclake/api/request.py and reply.py), so it cannot drift from the service.

import { h, notice, replace } from './dom.js';

/** A JSON schema in one short line: "string", "array of UserRecord", ... */
function typeOf(schema, defs) {
  if (!schema) return 'any';
  if (schema.$ref) return schema.$ref.split('/').pop();
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(' | ');
  if (schema.anyOf || schema.oneOf) return (schema.anyOf || schema.oneOf).map((s) => typeOf(s, defs)).join(' | ');
  if (schema.type === 'array') return `array of ${typeOf(schema.items, defs)}`;
  if (schema.type === 'object' && schema.additionalProperties && typeof schema.additionalProperties === 'object') {
    return `object of ${typeOf(schema.additionalProperties, defs)}`;
  }
  return schema.type || (schema.properties ? 'object' : 'any');
}

/** A table of an object schema's members (a $ref is looked up once). */
function members(schema, defs) {
  const target = schema && schema.$ref ? defs[schema.$ref.split('/').pop()] : schema;
  if (!target || !target.properties) return h('p', { class: 'muted' }, typeOf(schema, defs));
  const required = new Set(target.required || []);
  return h('table', { class: 'admin-table reference-fields' },
    h('thead', null, h('tr', null, ['Field', 'Type', ''].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', null, Object.entries(target.properties).map(([name, s]) => h('tr', null,
      h('td', null, h('code', null, name), required.has(name) ? ' *' : ''),
      h('td', null, typeOf(s, defs)),
      h('td', { class: 'muted' }, s.description || '')))));
}

export function referencePage(root) {
  const list = h('div', { id: 'reference' }, h('p', { class: 'muted' }, 'Loading…'));
  replace(root, h('main', { id: 'main', class: 'padded' },
    h('h1', null, 'API reference'),
    h('p', null, 'Every call is a POST of ', h('code', null, '{"kargs": {...}}'), ' with a token in ',
      h('code', null, 'Servicetoken'), ', answered ', h('code', null, '{"verdict": "OK", "response": ...}'),
      ' or an ERROR whose status is in ', h('code', null, 'X-Seclake-Status'), '. The machine-readable document: ',
      h('a', { href: '/api/openapi.json' }, '/api/openapi.json'), ' (OpenAPI 3.1).'),
    list));
  fetch('/api/openapi.json', { credentials: 'omit', cache: 'no-store' })
    .then((r) => r.json())
    .then((doc) => {
      const defs = (doc.components && doc.components.schemas) || {};
      replace(list, Object.entries(doc.paths).map(([path, item]) => {
        const op = item.post;
        const body = op.requestBody.content['application/json'];
        const ok = op.responses['200'].content['application/json'].schema.oneOf[0];
        return h('section', { class: 'reference-call', id: op.operationId },
          h('h2', null, h('code', null, path)),
          h('p', null, op.summary),
          h('h3', null, 'kargs'),
          body ? members(body.schema.properties.kargs, defs) : h('p', { class: 'muted' }, 'A raw body (text or gzip); options in the query string.'),
          h('h3', null, 'response'),
          members(ok.properties.response, defs));
      }));
    })
    .catch((e) => replace(list, notice('error', `The reference could not be loaded (${e.message}).`)));
  return {};
}
