// Collections: the list (type, count, size, status), creation with every option, and one
// collection's tabs: documents, indexes, properties, figures, and truncate/drop.

import { h, mount, notify, dialog, confirmAction, field, formatBytes, table } from '../dom.js';
import { get, post, put, del, seg } from '../api.js';
import { jsonEditor } from '../json-editor.js';

const TYPES = { 2: 'document', 3: 'edge' };
const STATUS = { 1: 'new born', 2: 'unloaded', 3: 'loaded', 4: 'unloading', 5: 'deleted', 6: 'loading' };

export async function render(root, { route, args }) {
  if (route === 'collection' && args[0]) return renderCollection(root, args[0], args[1] || 'documents', args.slice(2));
  return renderList(root);
}

async function renderList(root) {
  const showSystem = h('input', { type: 'checkbox', id: 'show-system' });
  const filter = h('input', { placeholder: 'filter by name', id: 'collection-filter' });
  const body = h('div');
  mount(root,
    h('h1', {}, 'Collections'),
    h('div', { class: 'toolbar' },
      h('button', { class: 'primary', id: 'create-collection', onclick: () => createDialog().then((ok) => ok && load()) }, 'New collection'),
      filter, h('label', {}, showSystem, ' system collections'),
      h('span', { class: 'spacer' }),
      h('button', { onclick: () => load() }, 'Refresh')),
    body);
  let all = [];
  const draw = () => {
    const needle = filter.value.toLowerCase();
    const rows = all.filter((c) => (showSystem.checked || !c.isSystem) && c.name.toLowerCase().includes(needle));
    mount(body, table([
      ['Name', (c) => h('a', { href: `#collection/${encodeURIComponent(c.name)}/documents`, class: 'collection-link' }, c.name)],
      ['Type', (c) => TYPES[c.type] || c.type],
      ['Status', (c) => STATUS[c.status] || c.status],
      ['Documents', (c) => h('span', { 'data-count': c.name }, '…')],
      ['Size', (c) => h('span', { 'data-size': c.name }, '…')],
    ], rows, { id: 'collections-table' }));
    // Counts and sizes arrive one collection at a time, at most 4 requests in flight.
    const queue = rows.slice(0, 500);
    const worker = async () => {
      while (queue.length) {
        const c = queue.shift();
        try {
          const f = await get(`/_api/collection/${seg(c.name)}/figures`);
          const count = body.querySelector(`[data-count="${CSS.escape(c.name)}"]`);
          const size = body.querySelector(`[data-size="${CSS.escape(c.name)}"]`);
          if (count) count.textContent = f.count.toLocaleString();
          if (size) size.textContent = formatBytes((f.figures.documentsSize || 0) + ((f.figures.indexes && f.figures.indexes.size) || 0));
        } catch { /* a collection dropped meanwhile */ }
      }
    };
    Promise.all([worker(), worker(), worker(), worker()]);
  };
  const load = async () => {
    all = (await get('/_api/collection?excludeSystem=false')).result.sort((a, b) => a.name.localeCompare(b.name));
    draw();
  };
  filter.addEventListener('input', draw);
  showSystem.addEventListener('change', draw);
  await load();
}

/** The creation dialog: every option ArangoDB 3.12's POST /_api/collection takes. */
export async function createDialog() {
  const name = h('input', { id: 'new-collection-name', required: true });
  const type = h('select', { id: 'new-collection-type' }, h('option', { value: 2 }, 'document'), h('option', { value: 3 }, 'edge'));
  const waitForSync = h('input', { type: 'checkbox', id: 'new-collection-sync' });
  const cacheEnabled = h('input', { type: 'checkbox' });
  const journalSize = h('input', { type: 'number', min: 1048576, placeholder: 'server default' });
  const keyType = h('select', {}, ['traditional', 'autoincrement', 'padded', 'uuid'].map((t) => h('option', { value: t }, t)));
  const allowUserKeys = h('input', { type: 'checkbox', checked: true });
  const increment = h('input', { type: 'number', min: 1, placeholder: '1' });
  const offset = h('input', { type: 'number', min: 0, placeholder: '0' });
  const schema = jsonEditor('null', (v) => (v === null || (typeof v === 'object' && !Array.isArray(v)) ? null : 'an object or null'));
  const computed = jsonEditor('[]', (v) => (Array.isArray(v) ? null : 'an array of computed values'));
  const extra = jsonEditor('{}', (v) => (v && typeof v === 'object' && !Array.isArray(v) ? null : 'an object'));
  for (const e of [schema, computed, extra]) e.textarea.style.minHeight = '70px';
  const form = h('div', {},
    h('div', { class: 'grid2' },
      field('Name', name), field('Type', type),
      field('Key generator', keyType), field('Allow user keys', allowUserKeys),
      field('Increment (autoincrement)', increment), field('Offset (autoincrement)', offset),
      field('Wait for sync', waitForSync), field('Cache enabled', cacheEnabled),
      field('Journal size (bytes)', journalSize)),
    field('Schema (JSON: rule, level, message; null for none)', schema),
    field('Computed values (JSON array)', computed),
    field('Further options (JSON object, merged last)', extra));
  const ok = await dialog('New collection', form, [{
    label: 'Create', value: true, primary: true,
    check: async () => {
      if (!schema.valid || !computed.valid || !extra.valid) { notify('fix the JSON fields first', 'error'); return false; }
      const body = { name: name.value.trim(), type: Number(type.value), waitForSync: waitForSync.checked, cacheEnabled: cacheEnabled.checked };
      body.keyOptions = { type: keyType.value, allowUserKeys: allowUserKeys.checked };
      if (increment.value) body.keyOptions.increment = Number(increment.value);
      if (offset.value) body.keyOptions.offset = Number(offset.value);
      if (journalSize.value) body.journalSize = Number(journalSize.value);
      if (schema.parsed() !== null) body.schema = schema.parsed();
      if (computed.parsed().length) body.computedValues = computed.parsed();
      Object.assign(body, extra.parsed());
      try {
        await post('/_api/collection', body);
        notify(`collection ${body.name} created`);
        return true;
      } catch (err) {
        notify(err.message, 'error');
        return false;
      }
    },
  }]);
  return ok;
}

const TABS = ['documents', 'indexes', 'properties', 'figures', 'settings'];

async function renderCollection(root, name, tab, rest) {
  const info = await get(`/_api/collection/${seg(name)}`);
  const body = h('div', { id: `tab-${tab}` });
  mount(root,
    h('h1', {}, h('a', { href: '#collections' }, 'Collections'), ' / ', name, ' ', h('span', { class: 'badge' }, TYPES[info.type])),
    h('div', { class: 'tabs' }, TABS.map((t) => h('button', {
      class: t === tab ? 'active' : '',
      'data-tab': t,
      onclick: () => { location.hash = `#collection/${encodeURIComponent(name)}/${t}`; },
    }, t))),
    body);
  switch (tab) {
    case 'documents': return (await import('./documents.js')).render(body, { collection: name, info, args: rest });
    case 'indexes': return renderIndexes(body, name);
    case 'properties': return renderProperties(body, name);
    case 'figures': return renderFigures(body, name);
    default: return renderSettings(body, name);
  }
}

/** Index types with the fields their creation form asks for. */
const INDEX_TYPES = {
  persistent: { fields: true, unique: true, sparse: true, extra: '{"deduplicate": true, "estimates": true, "cacheEnabled": false, "storedValues": []}' },
  geo: { fields: true, extra: '{"geoJson": false, "legacyPolygons": false}' },
  fulltext: { fields: true, extra: '{"minLength": 2}' },
  ttl: { fields: true, extra: '{"expireAfter": 3600}' },
  mdi: { fields: true, unique: true, sparse: true, extra: '{"fieldValueTypes": "double"}' },
  'mdi-prefixed': { fields: true, unique: true, sparse: true, extra: '{"fieldValueTypes": "double", "prefixFields": []}' },
  inverted: { fields: true, extra: '{"analyzer": "identity"}' },
  vector: { fields: true, extra: '{"params": {"metric": "cosine", "dimension": 3, "nLists": 1}}' },
  hash: { fields: true, unique: true, sparse: true, extra: '{}' },
  skiplist: { fields: true, unique: true, sparse: true, extra: '{}' },
};

async function renderIndexes(root, name) {
  const list = h('div');
  const load = async () => {
    const { indexes } = await get(`/_api/index?collection=${seg(name)}`);
    mount(list, table([
      ['ID', (i) => i.id], ['Name', (i) => i.name || ''], ['Type', (i) => i.type],
      ['Fields', (i) => (i.fields || []).map((f) => (typeof f === 'string' ? f : f.name || JSON.stringify(f))).join(', ')],
      ['Unique', (i) => (i.unique ? 'yes' : '')], ['Sparse', (i) => (i.sparse ? 'yes' : '')],
      ['Selectivity', (i) => (i.selectivityEstimate === undefined ? '' : i.selectivityEstimate.toFixed(3))],
      ['', (i) => (i.type === 'primary' || i.type === 'edge' ? '' : h('button', {
        class: 'danger',
        onclick: async () => {
          if (!(await confirmAction(`Drop index ${i.name || i.id}?`))) return;
          try { await del(`/_api/index/${i.id.split('/').map(seg).join('/')}`); notify('index dropped'); load(); } catch (err) { notify(err.message, 'error'); }
        },
      }, 'Drop'))],
    ], indexes, { id: 'indexes-table' }));
  };
  const type = h('select', { id: 'index-type' }, Object.keys(INDEX_TYPES).map((t) => h('option', { value: t }, t)));
  const fields = h('input', { id: 'index-fields', placeholder: 'a, b.c' });
  const indexName = h('input', { placeholder: 'optional' });
  const unique = h('input', { type: 'checkbox' });
  const sparse = h('input', { type: 'checkbox' });
  const extra = jsonEditor(INDEX_TYPES.persistent.extra);
  extra.textarea.style.minHeight = '60px';
  type.addEventListener('change', () => { extra.value = INDEX_TYPES[type.value].extra; });
  const create = async () => {
    if (!extra.valid) return notify('the options are not valid JSON', 'error');
    const body = { type: type.value, fields: fields.value.split(',').map((f) => f.trim()).filter(Boolean), ...extra.parsed() };
    if (indexName.value) body.name = indexName.value;
    if (INDEX_TYPES[type.value].unique) body.unique = unique.checked;
    if (INDEX_TYPES[type.value].sparse) body.sparse = sparse.checked;
    try { await post(`/_api/index?collection=${seg(name)}`, body); notify('index created'); load(); } catch (err) { notify(err.message, 'error'); }
  };
  mount(root, list, h('h2', {}, 'New index'),
    h('div', { class: 'panel' },
      h('div', { class: 'grid2' }, field('Type', type), field('Fields (comma separated)', fields), field('Name', indexName),
        h('div', {}, h('label', {}, unique, ' unique'), ' ', h('label', {}, sparse, ' sparse'))),
      field('Options of the type (JSON)', extra),
      h('button', { class: 'primary', id: 'create-index', onclick: create }, 'Create index')));
  await load();
}

async function renderProperties(root, name) {
  const props = await get(`/_api/collection/${seg(name)}/properties`);
  const waitForSync = h('input', { type: 'checkbox', checked: props.waitForSync });
  const cacheEnabled = h('input', { type: 'checkbox', checked: props.cacheEnabled });
  const schema = jsonEditor(JSON.stringify(props.schema ?? null, null, 2));
  const computed = jsonEditor(JSON.stringify(props.computedValues ?? [], null, 2));
  for (const e of [schema, computed]) e.textarea.style.minHeight = '80px';
  const save = async () => {
    if (!schema.valid || !computed.valid) return notify('fix the JSON first', 'error');
    try {
      await put(`/_api/collection/${seg(name)}/properties`, { waitForSync: waitForSync.checked, cacheEnabled: cacheEnabled.checked, schema: schema.parsed(), computedValues: computed.parsed() });
      notify('properties saved');
      renderProperties(root, name);
    } catch (err) { notify(err.message, 'error'); }
  };
  mount(root,
    h('div', { class: 'panel' },
      h('div', { class: 'grid2' }, field('Wait for sync', waitForSync), field('Cache enabled', cacheEnabled)),
      field('Schema', schema), field('Computed values', computed),
      h('button', { class: 'primary', onclick: save }, 'Save')),
    h('h2', {}, 'All properties'), h('pre', { class: 'json panel', id: 'collection-properties' }, JSON.stringify(props, null, 2)));
}

async function renderFigures(root, name) {
  const f = await get(`/_api/collection/${seg(name)}/figures`);
  const fig = f.figures || {};
  const rows = [
    ['documents', f.count], ['alive', `${fig.alive?.count} (${formatBytes(fig.alive?.size)})`],
    ['dead', `${fig.dead?.count} (${formatBytes(fig.dead?.size)})`],
    ['datafiles', `${fig.datafiles?.count} (${formatBytes(fig.datafiles?.fileSize)})`],
    ['journals', `${fig.journals?.count} (${formatBytes(fig.journals?.fileSize)})`],
    ['indexes', `${fig.indexes?.count} (${formatBytes(fig.indexes?.size)})`],
    ['uncollected WAL entries', fig.uncollectedLogfileEntries], ['compaction', fig.compactionStatus?.message],
  ];
  mount(root, table([['Figure', (r) => r[0]], ['Value', (r) => String(r[1] ?? '-')]], rows, { id: 'figures-table' }),
    h('h2', {}, 'Raw'), h('pre', { class: 'json panel' }, JSON.stringify(f.figures, null, 2)));
}

function renderSettings(root, name) {
  const newName = h('input', { value: name });
  mount(root, h('div', { class: 'panel' },
    h('p', {}, 'Rename'), h('div', { class: 'toolbar' }, newName, h('button', {
      onclick: async () => {
        try { await put(`/_api/collection/${seg(name)}/rename`, { name: newName.value }); location.hash = `#collection/${encodeURIComponent(newName.value)}/settings`; } catch (err) { notify(err.message, 'error'); }
      },
    }, 'Rename')),
    h('p', {}, 'Remove every document, keep indexes and properties.'),
    h('button', {
      class: 'danger', id: 'truncate-collection',
      onclick: async () => {
        if (!(await confirmAction(`Truncate ${name}?`))) return;
        try { await put(`/_api/collection/${seg(name)}/truncate`); notify(`${name} truncated`); } catch (err) { notify(err.message, 'error'); }
      },
    }, 'Truncate'),
    h('p', {}, 'Drop the collection with its documents and indexes.'),
    h('button', {
      class: 'danger', id: 'drop-collection',
      onclick: async () => {
        if (!(await confirmAction(`Drop ${name}? This cannot be undone.`))) return;
        try {
          await del(`/_api/collection/${seg(name)}${name.startsWith('_') ? '?isSystem=true' : ''}`);
          notify(`${name} dropped`);
          location.hash = '#collections';
        } catch (err) { notify(err.message, 'error'); }
      },
    }, 'Drop')));
}
