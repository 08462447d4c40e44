// The single page application: login, the frame (navigation, database switcher) and the
// hash router that hands each route to one page module.

import { h, mount, notify } from './dom.js';
import { api, databaseOfAddress, get, login, session } from './api.js';

const PAGES = [
  { route: 'dashboard', label: 'Dashboard', load: () => import('./pages/dashboard.js') },
  { route: 'collections', label: 'Collections', load: () => import('./pages/collections.js') },
  { route: 'queries', label: 'Queries', load: () => import('./pages/queries.js') },
  { route: 'graphs', label: 'Graphs', load: () => import('./pages/graphs.js') },
  { route: 'users', label: 'Users', load: () => import('./pages/users.js') },
  { route: 'logs', label: 'Logs', load: () => import('./pages/logs.js') },
];

/** Sub-routes that belong to a page: #collection/{name}/... → collections, #graph/{name} → graphs. */
const OWNER = { collection: 'collections', graph: 'graphs' };

const root = document.getElementById('app');
let current = null; // the page's cleanup function, if it registered one

session.onEnd((reason) => showLogin(reason));
// The address names the database to open (a bookmark, a link, a reload).
if (databaseOfAddress()) session.database = databaseOfAddress();

function parseHash() {
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  return { name: parts[0] || 'collections', args: parts.slice(1) };
}

function showLogin(message) {
  stopPage();
  const user = h('input', { id: 'login-user', value: 'root', autocomplete: 'username' });
  const password = h('input', { id: 'login-password', type: 'password', autocomplete: 'current-password' });
  const error = h('p', { class: 'error' }, message || '');
  const form = h('form', {
    class: 'login',
    onsubmit: async (e) => {
      e.preventDefault();
      error.textContent = '';
      try {
        await login(user.value, password.value);
        await showFrame();
      } catch (err) {
        error.textContent = err.status === 401 ? 'Wrong user name or password.' : err.message;
      }
    },
  },
  h('h1', {}, 'QuiverDB'),
  h('label', {}, 'User', user),
  h('label', {}, 'Password', password),
  h('button', { class: 'primary', type: 'submit', id: 'login-submit' }, 'Log in'),
  error);
  mount(root, h('div', { class: 'login-page' }, form));
  user.focus();
}

async function showFrame() {
  let databases = [session.database];
  try {
    databases = (await get('/_api/database/user', { db: '_system' })).result;
  } catch (err) {
    if (err.status === 401) return;
    notify(`cannot list databases: ${err.message}`, 'error');
  }
  if (!databases.includes(session.database)) session.database = databases[0] || '_system';
  const switcher = h('select', {
    id: 'database-switcher',
    title: 'database',
    onchange: () => { session.database = switcher.value; route(); },
  }, databases.sort().map((db) => h('option', { value: db, selected: db === session.database }, db)));
  const nav = h('nav', {}, PAGES.map((p) => h('a', { href: `#${p.route}`, 'data-route': p.route }, p.label)));
  const main = h('main', { id: 'page' });
  mount(root, h('div', { class: 'frame' },
    h('header', {},
      h('span', { class: 'brand' }, 'QuiverDB'),
      h('label', { class: 'db' }, 'Database ', switcher),
      h('span', { class: 'spacer' }),
      h('span', { class: 'user' }, session.user || ''),
      h('button', { id: 'logout', onclick: () => session.logout() }, 'Log out')),
    h('div', { class: 'body' }, nav, main)));
  await route();
}

function stopPage() {
  if (typeof current === 'function') current();
  current = null;
}

async function route() {
  const main = document.getElementById('page');
  if (!session.token) return showLogin();
  if (!main) return showFrame();
  const { name, args } = parseHash();
  const owner = OWNER[name] || name;
  const page = PAGES.find((p) => p.route === owner) || PAGES[1];
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('active', a.dataset.route === page.route);
  stopPage();
  mount(main, h('p', { class: 'muted' }, 'Loading…'));
  try {
    const module = await page.load();
    mount(main);
    current = await module.render(main, { route: name, args, database: session.database });
  } catch (err) {
    if (err.status === 401) return;
    mount(main, h('p', { class: 'error' }, err.message));
  }
}

window.addEventListener('hashchange', route);

// A token kept from earlier in this tab is checked once; a stale one leads to the login form.
if (session.token) {
  api('GET', '/_api/version').then(showFrame, (err) => { if (err.status !== 401) showFrame(); });
} else {
  showLogin();
}
