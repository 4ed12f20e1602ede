// Sign-in: "Sign in with <provider>" per identity provider of the server
// (auth/ssoProviders; the flow runs through /auth/oidc/..., docs/sso.md), and
// username and password -> auth/login. Back from a provider, the URL's
// fragment holds a one-time code (#sso=...), traded at once for the session
// (auth/ssoSession) and removed from the address bar. The session record is
// kept in sessionStorage. A flash message says why we are here (session ended...).

import { ApiError, call, flash, login, ssoSession } from './api.js';
import { h, notice, replace } from './dom.js';
import { navigate } from './router.js';

/** Only a path of this site: never an address elsewhere. */
function nextPath() {
  const next = new URLSearchParams(location.search).get('next');
  return next && next.startsWith('/') && !next.startsWith('//') && !next.startsWith('/login') ? next : '/search';
}

function failure(err) {
  return notice('error', err instanceof ApiError && err.status === 401
    ? `Sign-in failed: ${err.message}`
    : err instanceof ApiError ? `${err.message} (HTTP ${err.status})` : String(err));
}

export function loginPage(root) {
  const code = new URLSearchParams(location.hash.slice(1)).get('sso');
  if (code) {
    // The code must not stay in the address bar nor in the history.
    history.replaceState(null, '', location.pathname + location.search);
    const waiting = h('main', { class: 'login-page', id: 'main' },
      h('div', { class: 'login-form' }, h('p', { class: 'muted', id: 'sso-waiting' }, 'Signing in…')));
    replace(root, waiting);
    ssoSession(code).then(
      () => navigate(nextPath(), { replace: true }),
      (err) => { flash(`Sign-in failed: ${err.message}`); loginPage(root); },
    );
    return {};
  }

  const message = flash();
  const username = h('input', { id: 'username', name: 'username', autocomplete: 'username', required: true, autofocus: true });
  const password = h('input', { id: 'password', name: 'password', type: 'password', autocomplete: 'current-password', required: true });
  const problem = h('div', { class: 'login-problem' });
  const submit = h('button', { type: 'submit', class: 'primary wide', id: 'sign-in' }, 'Sign in');
  const providers = h('div', { class: 'login-providers', id: 'sso-providers' });
  const passwordPart = h('div', { class: 'login-passwords' },
    h('label', { for: 'username' }, 'Username'), username,
    h('label', { for: 'password' }, 'Password'), password,
    problem,
    submit);
  const form = h('form', { class: 'login-form', 'aria-labelledby': 'login-title', onSubmit: async (e) => {
    e.preventDefault();
    submit.disabled = true;
    replace(problem);
    try {
      await login(username.value.trim(), password.value);
      navigate(nextPath(), { replace: true });
    } catch (err) {
      submit.disabled = false;
      password.value = '';
      password.focus();
      replace(problem, failure(err));
    }
  } },
  h('h1', { id: 'login-title' }, h('span', { class: 'brand-mark', 'aria-hidden': 'true' }, '◆'), ' seclake'),
  h('p', { class: 'muted' }, 'Security analytics. Sign in to search events, behaviors and summaries.'),
  message ? notice(/ended|sign in|failed/i.test(message) && !/signed out/i.test(message) ? (/failed/i.test(message) ? 'error' : 'warning') : 'info', message) : null,
  providers,
  passwordPart);
  replace(root, h('main', { class: 'login-page', id: 'main' }, form));
  document.title = 'Sign in · seclake';
  username.focus();

  call('auth/ssoProviders', {}, { anonymous: true }).then((offer) => {
    const next = encodeURIComponent(nextPath());
    // Full page loads, not client-side routes: the server sends the browser to the provider.
    replace(providers, (offer.providers || []).map((p) => h('a', {
      class: 'button primary wide sso-provider', href: `${p.signInUrl}?next=${next}`, 'data-provider': p.name,
    }, `Sign in with ${p.displayName}`)));
    if (offer.localPasswords === false && (offer.providers || []).length) {
      // Passwords are for the break-glass admin only: folded away, still reachable.
      const folded = h('details', { class: 'login-break-glass' },
        h('summary', {}, 'Administrator sign-in (break-glass)'));
      passwordPart.replaceWith(folded);
      folded.appendChild(passwordPart);
    }
  }, () => {});  // an older server without the call: passwords only
  return {};
}
