// The one place that talks to the server: the session (JWT in sessionStorage), the selected
// database, ArangoDB's error envelope, and AQL cursors.

const TOKEN = 'quiver.jwt';
const USER = 'quiver.user';
const DATABASE = 'quiver.database';

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.errorMessage) || `HTTP ${status}`);
    this.status = status;
    this.errorNum = body && body.errorNum;
  }
}

const listeners = [];

export const session = {
  get token() { return sessionStorage.getItem(TOKEN); },
  get user() { return sessionStorage.getItem(USER); },
  get database() {
    return sessionStorage.getItem(DATABASE) || databaseOfAddress() || '_system';
  },
  /** Switches the database; the page's address follows, so a reload stays in it. */
  set database(name) {
    sessionStorage.setItem(DATABASE, name);
    if (databaseOfAddress() !== name) {
      history.replaceState(null, '', `/_db/${encodeURIComponent(name)}/_admin/aardvark/index.html${location.hash}`);
    }
  },
  /** Called with the reason when the session ends: a 401 from the server, or a log out. */
  onEnd(fn) { listeners.push(fn); },
  logout(reason = '') {
    sessionStorage.removeItem(TOKEN);
    sessionStorage.removeItem(USER);
    listeners.forEach((fn) => fn(reason));
  },
};

/** The database of the page's own address (/_db/{db}/_admin/aardvark/index.html), if any. */
export function databaseOfAddress() {
  const m = location.pathname.match(/^\/_db\/([^/]+)\//);
  return m ? decodeURIComponent(m[1]) : null;
}

/** POST /_open/auth; keeps the JWT for this browser tab. */
export async function login(username, password) {
  const response = await fetch('/_open/auth', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username, password }),
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok || !body.jwt) throw new ApiError(response.status, body);
  sessionStorage.setItem(TOKEN, body.jwt);
  sessionStorage.setItem(USER, username);
}

/**
 * One API call against the selected database (or `db`). `body` is JSON unless `raw` is set.
 * Answers the parsed JSON, or the text with `text: true`.
 */
export async function api(method, path, body, options = {}) {
  const db = options.db ?? session.database;
  const url = (options.absolute ? '' : `/_db/${encodeURIComponent(db)}`) + path;
  const headers = { 'x-omit-www-authenticate': 'true' };
  if (session.token) headers.authorization = `bearer ${session.token}`;
  let payload;
  if (options.raw !== undefined) {
    payload = options.raw;
    headers['content-type'] = options.contentType || 'application/octet-stream';
  } else if (body !== undefined) {
    payload = JSON.stringify(body);
    headers['content-type'] = 'application/json';
  }
  const response = await fetch(url, { method, headers, body: payload, signal: options.signal });
  if (response.status === 401) {
    session.logout('Your session ended; please log in again.');
    throw new ApiError(401, { errorMessage: 'not authorized, please log in' });
  }
  const text = await response.text();
  if (options.text && response.ok) return text;
  let parsed = null;
  try { parsed = text ? JSON.parse(text) : null; } catch { parsed = null; }
  if (!response.ok || (parsed && parsed.error === true)) {
    throw new ApiError(response.status, parsed || { errorMessage: text.slice(0, 200) });
  }
  return parsed;
}

export const get = (path, options) => api('GET', path, undefined, options);
export const post = (path, body, options) => api('POST', path, body, options);
export const put = (path, body, options) => api('PUT', path, body, options);
export const patch = (path, body, options) => api('PATCH', path, body, options);
export const del = (path, options) => api('DELETE', path, undefined, options);

/** Path segment encoding. */
export const seg = (s) => encodeURIComponent(s);

/**
 * Runs an AQL query and collects up to `limit` results across batches. Answers
 * { result, extra, truncated, elapsed } where elapsed is the wall time in ms.
 */
export async function query(text, bindVars = {}, options = {}) {
  const started = performance.now();
  const { limit = 10000, batchSize = 1000, ...rest } = options;
  let cursor = await post('/_api/cursor', { query: text, bindVars, batchSize, options: rest.options || {}, count: rest.count });
  const result = [...cursor.result];
  while (cursor.hasMore && result.length < limit) {
    cursor = await post(`/_api/cursor/${seg(cursor.id)}`);
    result.push(...cursor.result);
  }
  const truncated = Boolean(cursor.hasMore) || result.length > limit;
  if (cursor.hasMore) await del(`/_api/cursor/${seg(cursor.id)}`).catch(() => {});
  return { result: result.slice(0, limit), extra: cursor.extra || {}, truncated, elapsed: performance.now() - started };
}
