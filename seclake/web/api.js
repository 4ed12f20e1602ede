// Calls to seclake's public API (POST /api/<name> with {kargs}), and the
// session kept in sessionStorage (gone when the tab closes).

const KEY = 'seclake.session';
const FLASH = 'seclake.flash';

export class ApiError extends Error {
  constructor(status, message, call) {
    super(message);
    this.status = status;
    this.call = call;
  }
  /** Where a query syntax error is: "... at position N: ..." -> N. */
  get position() {
    const m = /at position (\d+)/.exec(this.message);
    return m ? Number(m[1]) : null;
  }
}

export function session() {
  try {
    return JSON.parse(sessionStorage.getItem(KEY) || 'null');
  } catch {
    return null;
  }
}

export function isAdmin(s = session()) {
  return !!s && ((s.roles || []).includes('admin') || s.rights === 'admin');
}

export function flash(message) {
  if (message === undefined) {
    const m = sessionStorage.getItem(FLASH);
    sessionStorage.removeItem(FLASH);
    return m;
  }
  sessionStorage.setItem(FLASH, message);
  return message;
}

let onSessionEnded = () => {};
export function whenSessionEnds(fn) {
  onSessionEnded = fn;
}

export async function login(username, password) {
  const record = await call('auth/login', { username, password }, { anonymous: true });
  sessionStorage.setItem(KEY, JSON.stringify(record));
  return record;
}

/** Sign-in with an identity provider: the callback's one-time code -> the session (api/sso.py). */
export async function ssoSession(code) {
  const record = await call('auth/ssoSession', { code }, { anonymous: true });
  sessionStorage.setItem(KEY, JSON.stringify(record));
  return record;
}

export function signOut() {
  sessionStorage.removeItem(KEY);
}

/**
 * Make a call; resolves to `response`, rejects with ApiError.
 * A 401 on a signed-in call ends the session (the page returns to sign-in),
 * unless it is a `background` call the user did not ask for (suggestions):
 * the user's next action meets the 401 and says why.
 */
export async function call(name, kargs = {}, { signal, anonymous = false, background = false } = {}) {
  const headers = { 'Content-Type': 'application/json' };
  const s = session();
  if (!anonymous) {
    if (!s) {
      onSessionEnded('Please sign in.');
      throw new ApiError(401, 'not signed in', name);
    }
    headers.Servicetoken = s.sessionToken;
  }
  let response;
  try {
    response = await fetch(`/api/${name}`, {
      method: 'POST', headers, body: JSON.stringify({ kargs }), signal, credentials: 'omit', cache: 'no-store',
    });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, `The server could not be reached (${e.message}).`, name);
  }
  let body = null;
  try {
    body = await response.json();
  } catch {
    throw new ApiError(response.status, `The server answered ${response.status} without a JSON body.`, name);
  }
  if (response.ok && body && body.verdict === 'OK') return body.response;
  // Errors come as HTTP 200 with verdict ERROR by default (what this
  // interface's clients read), the status they stand for in a header; with
  // the server's http_error_status setting, as the real status.
  const status = Number(response.headers.get('X-Seclake-Status')) || response.status;
  const message = (body && (body.error || body.exception)) || `HTTP ${status}`;
  if (status === 401 && !anonymous && !background) {
    signOut();
    onSessionEnded(`Your session ended: ${stripCall(message, name)}. Please sign in again.`);
  }
  throw new ApiError(status, stripCall(message, name), name);
}

/** "ds/x: query error at ..." -> "query error at ..." (positions stay those of the query). */
function stripCall(message, name) {
  const prefix = `${name}: `;
  return message.startsWith(prefix) ? message.slice(prefix.length) : message;
}

/** Is a call served here? false when the server answers 404 "unknown call". */
export async function available(name) {
  try {
    await call(name, {}, {});
    return true;
  } catch (e) {
    if (e instanceof ApiError && e.status === 404 && /unknown call/.test(e.message)) return false;
    return true; // it exists; it refused these arguments
  }
}
