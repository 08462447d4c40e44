// Server logs (/_admin/log/entries) with a level filter, search and paging, and the log
// levels per topic (/_admin/log/level).

import { h, mount, notify, table } from '../dom.js';
import { get, put } from '../api.js';

const LEVELS = ['fatal', 'error', 'warning', 'info', 'debug', 'trace'];
const PAGE = 100;

export async function render(root) {
  const upto = h('select', { id: 'log-level' }, LEVELS.map((l) => h('option', { value: l, selected: l === 'info' }, `up to ${l}`)));
  const search = h('input', { placeholder: 'search', id: 'log-search' });
  const auto = h('input', { type: 'checkbox', checked: true });
  const body = h('div', { id: 'log-entries' });
  const levels = h('div', { id: 'log-levels' });
  let offset = 0;
  const load = async () => {
    try {
      const params = new URLSearchParams({ upto: upto.value, size: PAGE, offset, sort: 'desc' });
      if (search.value) params.set('search', search.value);
      const r = await get(`/_admin/log/entries?${params}`, { db: '_system' });
      mount(body,
        h('div', { class: 'pager' },
          h('button', { disabled: offset === 0, onclick: () => { offset = Math.max(0, offset - PAGE); load(); } }, '‹ Newer'),
          h('span', { class: 'muted' }, `${r.total} entries, showing ${offset + 1}–${offset + r.messages.length}`),
          h('button', { disabled: offset + PAGE >= r.total, onclick: () => { offset += PAGE; load(); } }, 'Older ›')),
        table([['Date', (m) => m.date], ['Level', (m) => h('span', { class: `level-${m.level}` }, m.level)], ['Topic', (m) => m.topic],
          ['Message', (m) => h('span', { class: 'json' }, m.message)]], r.messages));
    } catch (err) {
      mount(body, h('p', { class: 'error' }, err.status === 404 ? 'This server does not serve /_admin/log/entries.' : err.message));
    }
  };
  const loadLevels = async () => {
    try {
      const topics = await get('/_admin/log/level', { db: '_system' });
      mount(levels, h('h2', {}, 'Log levels'), table([['Topic', ([t]) => t], ['Level', ([t, l]) => {
        const s = h('select', {}, ['FATAL', 'ERROR', 'WARNING', 'INFO', 'DEBUG', 'TRACE'].map((x) => h('option', { selected: x === l }, x)));
        s.addEventListener('change', () => put('/_admin/log/level', { [t]: s.value }, { db: '_system' }).then(() => notify(`${t}: ${s.value}`), (e) => notify(e.message, 'error')));
        return s;
      }]], Object.entries(topics).sort()));
    } catch (err) { mount(levels, h('p', { class: 'muted' }, `log levels: ${err.message}`)); }
  };
  upto.addEventListener('change', () => { offset = 0; load(); });
  search.addEventListener('keydown', (e) => { if (e.key === 'Enter') { offset = 0; load(); } });
  mount(root, h('h1', {}, 'Logs'), h('div', { class: 'toolbar' }, upto, search, h('label', {}, auto, ' refresh every 5 s'), h('button', { onclick: load }, 'Refresh')), body,
    h('details', { ontoggle: (e) => e.target.open && loadLevels() }, h('summary', {}, 'Log levels per topic'), levels));
  await load();
  const timer = setInterval(() => { if (auto.checked && offset === 0) load(); }, 5000);
  return () => clearInterval(timer);
}
