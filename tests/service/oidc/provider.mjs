// A real OpenID provider for seclake's sign-in tests: the certified
// oidc-provider package, configured from a JSON file (argv[2]):
//
//   { "port": 0, "clientId": "...", "clientSecret": "...", "redirectUris": [...],
//     "accounts": { "alice": { "email": ..., "groups": [...] } }, "login": "alice",
//     "key": {<an RSA private JWK>}, "kid": "key-1", "idTokenTtl": 300, "idTokenAgeSeconds": 0 }
//
// It prints one line {"issuer": ...} on stdout once it listens. It signs
// with the key of the file: restarting it with another key and kid on the
// same port is a key rotation. The login and consent interaction signs
// in the account named by "login" without a form (tests choose another with
// GET /test/login-as/<id>), so that a plain HTTP client following redirects
// can run the flow; "idTokenAgeSeconds" signs ID tokens as if that long ago
// (iat and exp in the past: expired when they arrive, as from an IdP whose
// clock is behind).

import { readFileSync } from 'node:fs';
import http from 'node:http';

import Provider from 'oidc-provider';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));

// The signing key comes with the configuration (the test makes it): key
// generation inside this process (generateKeyPairSync) was seen to hang on
// a loaded machine, the main thread in a futex wait, once in a few dozen starts.
const jwk = { ...config.key, kid: config.kid || 'key-1', use: 'sig', alg: 'RS256' };

const accounts = config.accounts || {};
let current = config.login || Object.keys(accounts)[0];

async function findAccount(ctx, id) {
  const account = accounts[id];
  if (!account) return undefined;
  return {
    accountId: id,
    async claims() {
      return { sub: id, preferred_username: id, ...account };
    },
  };
}

const server = http.createServer();
server.listen(config.port || 0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [{
      client_id: config.clientId,
      client_secret: config.clientSecret,
      redirect_uris: config.redirectUris,
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    }],
    jwks: { keys: [jwk] },
    findAccount,
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['preferred_username', 'name', 'given_name', 'family_name'],
      groups: ['groups'],
    },
    // The claims asked for by scope go in the ID token, as Okta, Entra ID
    // and Keycloak put groups there.
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    features: { devInteractions: { enabled: false } },
    ttl: { IdToken: config.idTokenTtl || 300 },
    cookies: { keys: ['seclake-tests-cookie-key'] },
  });
  if (config.idTokenAgeSeconds) {
    const issue = provider.IdToken.prototype.issue;
    provider.IdToken.prototype.issue = async function issueEarlier(...args) {
      const realNow = Date.now;
      Date.now = () => realNow() - config.idTokenAgeSeconds * 1000;
      try {
        return await issue.apply(this, args);
      } finally {
        Date.now = realNow;
      }
    };
  }
  provider.on('server_error', (ctx, err) => console.error('provider error', err));

  const callback = provider.callback();
  server.on('request', async (req, res) => {
    try {
      const loginAs = /^\/test\/login-as\/([^/?]+)$/.exec(req.url);
      if (loginAs) {
        current = decodeURIComponent(loginAs[1]);
        res.end('ok');
        return;
      }
      if (req.url.startsWith('/interaction/')) {
        await interact(provider, req, res);
        return;
      }
      callback(req, res);
    } catch (err) {
      console.error(err);
      res.statusCode = 500;
      res.end(String(err));
    }
  });
  process.stdout.write(`${JSON.stringify({ issuer, kid: jwk.kid })}\n`);
});

// Login: the current account; consent: every scope and claim asked for.
async function interact(provider, req, res) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session } = details;
  if (prompt.name === 'login') {
    await provider.interactionFinished(req, res, { login: { accountId: current } }, { mergeWithLastSubmission: false });
    return;
  }
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  if (prompt.details.missingOIDCScope) grant.addOIDCScope(prompt.details.missingOIDCScope.join(' '));
  if (prompt.details.missingOIDCClaims) grant.addOIDCClaims(prompt.details.missingOIDCClaims);
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => process.exit(0));
