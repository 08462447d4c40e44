// Users and their permissions on databases and collections (/_api/user).

import { h, mount, notify, dialog, confirmAction, field, table } from '../dom.js';
import { get, post, patch, put, del, seg } from '../api.js';
import { jsonEditor } from '../json-editor.js';

const LEVELS = ['rw', 'ro', 'none'];

export async function render(root) {
  const body = h('div');
  const perms = h('div', { id: 'user-permissions' });
  const load = async () => {
    const users = (await get('/_api/user', { db: '_system' })).result;
    mount(body, table([
      ['User', (u) => h('a', { href: '#users', onclick: (e) => { e.preventDefault(); showPermissions(perms, u.user); } }, u.user)],
      ['Active', (u) => (u.active ? 'yes' : 'no')],
      ['Extra', (u) => h('span', { class: 'json' }, JSON.stringify(u.extra || {}))],
      ['', (u) => h('span', {},
        h('button', { onclick: () => editUser(u).then(load) }, 'Edit'), ' ',
        u.user === 'root' ? null : h('button', {
          class: 'danger',
          onclick: async () => {
            if (!(await confirmAction(`Delete user ${u.user}?`))) return;
            try { await del(`/_api/user/${seg(u.user)}`, { db: '_system' }); notify('user deleted'); load(); } catch (err) { notify(err.message, 'error'); }
          },
        }, 'Delete'))],
    ], users, { id: 'users-table' }));
  };
  mount(root, h('h1', {}, 'Users'),
    h('div', { class: 'toolbar' }, h('button', { class: 'primary', id: 'create-user', onclick: () => editUser(null).then(load) }, 'New user')),
    body, perms);
  await load();
}

async function editUser(user) {
  const name = h('input', { value: user ? user.user : '', disabled: Boolean(user), id: 'user-name' });
  const password = h('input', { type: 'password', placeholder: user ? 'unchanged' : '', id: 'user-password' });
  const active = h('input', { type: 'checkbox', checked: user ? user.active : true });
  const extra = jsonEditor(user ? user.extra || {} : {});
  extra.textarea.style.minHeight = '60px';
  await dialog(user ? `User ${user.user}` : 'New user', h('div', {}, field('Name', name), field('Password', password), field('Active', active), field('Extra (JSON)', extra)), [{
    label: 'Save', value: true, primary: true,
    check: async () => {
      if (!extra.valid) { notify('extra must be JSON', 'error'); return false; }
      const body = { active: active.checked, extra: extra.parsed() };
      if (password.value || !user) body.passwd = password.value;
      try {
        if (user) await patch(`/_api/user/${seg(user.user)}`, body, { db: '_system' });
        else await post('/_api/user', { user: name.value.trim(), ...body }, { db: '_system' });
        notify('user saved');
        return true;
      } catch (err) { notify(err.message, 'error'); return false; }
    },
  }]);
}

async function showPermissions(root, user) {
  let grants;
  try { grants = (await get(`/_api/user/${seg(user)}/database?full=true`, { db: '_system' })).result; } catch (err) { return notify(err.message, 'error'); }
  const select = (value, onchange) => {
    const s = h('select', {}, ['undefined', ...LEVELS].map((l) => h('option', { value: l, selected: l === (value || 'undefined') }, l === 'undefined' ? '(default)' : l)));
    s.addEventListener('change', () => onchange(s.value));
    return s;
  };
  const grant = async (path, level) => {
    try {
      if (level === 'undefined') await del(`/_api/user/${seg(user)}/database/${path}`, { db: '_system' });
      else await put(`/_api/user/${seg(user)}/database/${path}`, { grant: level }, { db: '_system' });
      notify('permission saved');
    } catch (err) { notify(err.message, 'error'); }
  };
  const rows = [];
  for (const [db, g] of Object.entries(grants).sort()) {
    const level = typeof g === 'string' ? g : g.permission;
    rows.push({ db, collection: '', level, path: seg(db) });
    for (const [c, l] of Object.entries((g && g.collections) || {})) rows.push({ db, collection: c, level: l, path: `${seg(db)}/${seg(c)}` });
  }
  mount(root, h('h2', {}, `Permissions of ${user}`),
    table([['Database', (r) => r.db], ['Collection', (r) => r.collection || (r.db === '*' ? '' : '(database)')],
      ['Level', (r) => select(r.level, (l) => grant(r.path, l))]], rows, { id: 'permissions-table' }));
}
