// The public npm client `ingext-api` (0.1.0, unmodified, from package-lock.json)
// against a running seclake: every call it has that seclake serves, read the
// way the client reads it, and the calls seclake does not serve answering an
// error the client can show.
//
//   node tests/clients/ingext.mjs <base url> <admin token>
//
// Prints one "ok"/"not ok" line per check and "N passed, M failed" last;
// exits non-zero on any failure.
import { Ingext, IngextRpcError } from 'ingext-api';

const [url, token] = process.argv.slice(2);
if (!url || !token) {
  console.error('usage: node ingext.mjs <base url> <admin token>');
  process.exit(2);
}
// The clients keep a trailing slash in some set-ups; this one strips it.
const ingext = new Ingext({ url: `${url}/`, token, timeoutMs: 60_000 });
const DAY = 86_400_000;
let passed = 0;
let failed = 0;

function check(cond, what) {
  if (!cond) throw new Error(what);
}

async function step(name, fn) {
  try {
    await fn();
    passed += 1;
    console.log(`ok - ${name}`);
  } catch (e) {
    failed += 1;
    console.log(`not ok - ${name}\n  ${String(e && e.stack || e).split('\n').join('\n  ')}`);
  }
}

async function rpcError(fn) {
  try {
    await fn();
  } catch (e) {
    if (e instanceof IngextRpcError) return e;
    throw new Error(`expected an RPC error the client can show, got ${e}`);
  }
  throw new Error('expected an RPC error, the call succeeded');
}

const user = `client-${Date.now()}@example.com`;

await step('auth.listUser reads response.users', async () => {
  const users = await ingext.auth.listUser();
  check(Array.isArray(users) && users.some((u) => u.username === 'admin'), 'admin is not listed');
  check(users.every((u) => Array.isArray(u.roles)), 'a user without roles');
});

await step('auth.addUser with the clients\' model (no password, OAuth fields)', async () => {
  await ingext.auth.addUser({
    user: { username: user, email: user, firstName: 'Client', roles: ['analyst'], oauthProvider: 'Azure AD', oauthFlag: true },
  });
});

await step('auth.getUser reads response.user', async () => {
  const got = await ingext.auth.getUser(user);
  check(got && got.username === user, `getUser gave ${JSON.stringify(got)}`);
  check(got.oauthProvider === 'Azure AD' && got.oauthFlag === true, 'OAuth fields were not kept');
});

await step('auth.setUserSitePolicy: a clear error, not an HTTP failure', async () => {
  const e = await rpcError(() => ingext.auth.setUserSitePolicy(user, 'all-sites'));
  check(e.verdict === 'ERROR' && /not supported by this server/.test(e.rpcError), e.message);
});

await step('auth.deleteUser', async () => {
  await ingext.auth.deleteUser(user);
  const e = await rpcError(() => ingext.auth.getUser(user));
  check(/no user named/.test(e.rpcError), e.message);
});

const tokenName = `client-token-${Date.now()}`;
let secret;

await step('auth.addToken returns the token, which works', async () => {
  secret = await ingext.auth.addToken(tokenName, 'made by the npm client', 'analyst');
  check(typeof secret === 'string' && secret.startsWith('slk_'), `token ${secret}`);
  const asIt = new Ingext({ url, token: secret });
  const res = await asIt.eventwatch.ruleSearch('');
  check(res.hits.total > 0, 'the new token cannot search rules');
  // An analyst token may not manage users: the error reaches the client.
  const e = await rpcError(() => asIt.auth.listUser());
  check(/admin permission/.test(e.rpcError), e.message);
});

await step('auth.listToken reads response.entries with string ids', async () => {
  const entries = await ingext.auth.listToken();
  const mine = entries.filter((t) => t.name === tokenName);
  check(mine.length === 1, `found ${mine.length} tokens named ${tokenName}`);
  const t = mine[0];
  check(typeof t.id === 'string' && t.description === 'made by the npm client', JSON.stringify(t));
  check(JSON.stringify(t.roles) === '["analyst"]' && t.disabled === false && !('token' in t), JSON.stringify(t));
});

await step('auth.deleteToken by name: the token stops working and leaves listToken', async () => {
  await ingext.auth.deleteToken(tokenName);
  const e = await rpcError(() => new Ingext({ url, token: secret }).eventwatch.ruleSearch(''));
  check(/revoked/.test(e.rpcError), e.message);
  const left = (await ingext.auth.listToken()).filter((x) => x.name === tokenName);
  check(left.length === 0, `deleted, yet listed: ${JSON.stringify(left)}`);
});

const now = Date.now();

await step('eventwatch.summarySearch: the search-hit wrapper, values as strings', async () => {
  const res = await ingext.eventwatch.summarySearch('', now - 3 * DAY, now + DAY);
  check(res.hits.total > 0 && res.hits.hits.length > 0, 'no summaries');
  for (const h of res.hits.hits) {
    check(typeof h._id === 'string' && h._source.id === h._id, 'summary id');
    for (const e of h._source.summaryList) {
      for (const a of e.attributeSummaries) {
        check(a.values.every((v) => typeof v === 'string'), `attribute values ${JSON.stringify(a.values)}`);
      }
    }
  }
  const tos = res.hits.hits.map((h) => h._source.to);
  check(tos.every((t, i) => i === 0 || tos[i - 1] >= t), 'not sorted by to, descending');
});

await step('eventwatch.summarySearch: a query error reaches the client with its position', async () => {
  const e = await rpcError(() => ingext.eventwatch.summarySearch('riskScore:[3000 TO', now - DAY, now));
  check(e.verdict === 'ERROR' && /position \d+/.test(e.rpcError), e.message);
});

await step('eventwatch.timelineSearch', async () => {
  const res = await ingext.eventwatch.timelineSearch('riskScore:[100 TO *]', now - 3 * DAY, now + DAY);
  check(res.hits.total > 0, 'no behaviors');
  check(res.hits.hits.every((h) => h._source.riskScore >= 100 && typeof h._source.behavior === 'string'), 'behavior hits');
  const e = await rpcError(() => ingext.eventwatch.timelineSearch('behavior:(brute', now - DAY, now));
  check(/position \d+/.test(e.rpcError), e.message);
});

await step('eventwatch.ruleSearch: one rule per hits.hits[]._source', async () => {
  const res = await ingext.eventwatch.ruleSearch('brute');
  check(res.hits.total >= 1 && res.hits.hits.every((h) => h._source.name === h._id), JSON.stringify(res).slice(0, 300));
  check(res.hits.hits.every((h) => /brute/i.test(h._source.name + h._source.description)), 'a rule without brute');
});

await step('search.kqlSearch and kqlValidate: a clear error', async () => {
  for (const call of [() => ingext.search.kqlSearch('T | take 1'), () => ingext.search.kqlValidate('T | take 1')]) {
    const e = await rpcError(call);
    check(/not supported by this server: KQL/.test(e.rpcError), e.message);
  }
});

await step('collector.collectorList reads the listeners as entries; collectorStatus: a clear error', async () => {
  const entries = await ingext.collector.collectorList();
  check(Array.isArray(entries) && entries.length === 1, JSON.stringify(entries));
  check(/^syslog\+udp:\/\/127\.0\.0\.1:\d+$/.test(entries[0].name) && entries[0].local === true
        && typeof entries[0].lastPoll === 'number', JSON.stringify(entries[0]));
  const e = await rpcError(() => ingext.collector.collectorStatus('c1', {}));
  check(/not supported by this server/.test(e.rpcError), e.message);
});

await ingext.client.close();
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
