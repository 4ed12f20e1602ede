// Sign-in: username and password -> auth/login; the session record is kept
// in sessionStorage. A flash message says why we are here (session ended...).

import { ApiError, flash, login } from './api.js';
import { h, notice, replace } from './dom.js';
import { navigate } from './router.js';

export function loginPage(root) {
  const message = flash();
  const username = h('input', { id: 'username', name: 'username', autocomplete: 'username', required: true, autofocus: true });
  const password = h('input', { id: 'password', name: 'password', type: 'password', autocomplete: 'current-password', required: true });
  const problem = h('div', { class: 'login-problem' });
  const submit = h('button', { type: 'submit', class: 'primary wide', id: 'sign-in' }, 'Sign in');
  const form = h('form', { class: 'login-form', 'aria-labelledby': 'login-title', onSubmit: async (e) => {
    e.preventDefault();
    submit.disabled = true;
    replace(problem);
    try {
      await login(username.value.trim(), password.value);
      const next = new URLSearchParams(location.search).get('next');
      // Only a path of this site: never an address elsewhere.
      navigate(next && next.startsWith('/') && !next.startsWith('//') && !next.startsWith('/login') ? next : '/search', { replace: true });
    } catch (err) {
      submit.disabled = false;
      password.value = '';
      password.focus();
      replace(problem, notice('error', err instanceof ApiError && err.status === 401
        ? `Sign-in failed: ${err.message}`
        : err instanceof ApiError ? `${err.message} (HTTP ${err.status})` : String(err)));
    }
  } },
  h('h1', { id: 'login-title' }, h('span', { class: 'brand-mark', 'aria-hidden': 'true' }, '◆'), ' seclake'),
  h('p', { class: 'muted' }, 'Security analytics. Sign in to search events, behaviors and summaries.'),
  message ? notice(/ended|sign in/i.test(message) && !/signed out/i.test(message) ? 'warning' : 'info', message) : null,
  h('label', { for: 'username' }, 'Username'), username,
  h('label', { for: 'password' }, 'Password'), password,
  problem,
  submit);
  replace(root, h('main', { class: 'login-page', id: 'main' }, form));
  document.title = 'Sign in · seclake';
  username.focus();
  return {};
}
