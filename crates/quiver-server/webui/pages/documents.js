// The document browser of one collection. Pages by `_key` with keyset pagination through AQL
// (FILTER d._key > @after SORT d._key LIMIT @n): the primary index starts each page at its
// key, so page 10,000 of a 10-million-document collection costs what page 1 costs. Sorting
// by another attribute pages with LIMIT @offset, @n, which the page says is slower. "Start at
// key" jumps straight to any depth (FILTER d._key >= @from) at the cost of a first page. Each
// page shown sets data-page-render-ms (query and render) on the root for the browser test.

import { h, mount, notify, dialog, confirmAction, download, field } from '../dom.js';
import { api, get, post, put, del, query, seg } from '../api.js';
import { jsonEditor, mustBeObject } from '../json-editor.js';

const PREVIEW_CHARS = 240;
const DOWNLOAD_MAX = 1000000; // a bound on "download all": beyond it use quiver dump

export async function render(root, { collection, info }) {
  const started = performance.now();
  const state = { pageSize: 50, sortBy: '_key', descending: false, example: null, starts: [null], from: null, page: 0, offset: 0, last: [] };
  const exampleInput = h('input', { id: 'document-filter', placeholder: 'filter by example: {"name": "Ann"}', size: 40 });
  const fromInput = h('input', { id: 'document-from', placeholder: 'start at _key', size: 14, title: 'show documents from this _key on' });
  const sortInput = h('input', { id: 'document-sort', value: '_key', size: 12, title: 'attribute to sort by' });
  const order = h('select', {}, h('option', { value: 'asc' }, 'ascending'), h('option', { value: 'desc' }, 'descending'));
  const pageSize = h('select', {}, [10, 50, 100, 500].map((n) => h('option', { value: n, selected: n === 50 }, n)));
  const counter = h('span', { class: 'muted', id: 'document-count' });
  const pager = h('span', { class: 'pager' });
  const list = h('div', { id: 'documents-list' });
  const fileInput = h('input', { type: 'file', accept: '.json,.jsonl,.ndjson,application/json', hidden: true, onchange: () => upload(fileInput.files[0]) });

  const bind = () => {
    const vars = { '@c': collection };
    let text = 'FOR d IN @@c';
    if (state.example) { text += ' FILTER MATCHES(d, @example)'; vars.example = state.example; }
    const dir = state.descending ? 'DESC' : 'ASC';
    if (state.sortBy === '_key') {
      const after = state.starts[state.page];
      if (after !== null) {
        text += ` FILTER d._key ${state.descending ? '<' : '>'} @after`;
        vars.after = after;
      } else if (state.from !== null) {
        text += ` FILTER d._key ${state.descending ? '<=' : '>='} @from`;
        vars.from = state.from;
      }
      text += ` SORT d._key ${dir} LIMIT @n RETURN d`;
    } else {
      vars.attr = state.sortBy.split('.');
      vars.offset = state.page * state.pageSize;
      text += ` SORT d.@attr ${dir} LIMIT @offset, @n RETURN d`;
    }
    vars.n = state.pageSize + 1; // one more tells whether a next page exists
    return [text, vars];
  };

  const load = async () => {
    const pageStarted = performance.now();
    const [text, vars] = bind();
    let docs;
    try {
      docs = (await query(text, vars, { limit: state.pageSize + 1, batchSize: state.pageSize + 1 })).result;
    } catch (err) {
      mount(list, h('p', { class: 'error' }, err.message));
      return;
    }
    const more = docs.length > state.pageSize;
    docs = docs.slice(0, state.pageSize);
    state.last = docs;
    if (more && state.sortBy === '_key') state.starts[state.page + 1] = docs[docs.length - 1]._key;
    mount(list, h('table', { id: 'documents-table' },
      h('thead', {}, h('tr', {}, h('th', {}, '_key'), h('th', {}, 'content'), h('th', {}))),
      h('tbody', {}, docs.map((d) => h('tr', { class: 'clickable', 'data-key': d._key, onclick: () => edit(d._key) },
        h('td', {}, d._key),
        h('td', { class: 'json' }, preview(d)),
        h('td', {}, h('button', { class: 'danger', onclick: (e) => { e.stopPropagation(); remove(d._key); } }, 'Delete')))))));
    if (!docs.length) list.append(h('p', { class: 'muted' }, 'No documents.'));
    mount(pager,
      h('button', { disabled: state.page === 0, id: 'page-prev', onclick: () => { state.page -= 1; load(); } }, '‹ Previous'),
      h('span', {}, `page ${state.page + 1}`),
      h('button', { disabled: !more, id: 'page-next', onclick: () => { state.page += 1; load(); } }, 'Next ›'));
    root.dataset.pageRenderMs = String(Math.round(performance.now() - pageStarted));
    root.dataset.pageFirstKey = docs.length ? docs[0]._key : '';
    if (!root.dataset.firstRenderMs) {
      root.dataset.firstRenderMs = String(Math.round(performance.now() - started));
      performance.mark('documents-first-render');
    }
  };

  const count = async () => {
    try {
      const c = await get(`/_api/collection/${seg(collection)}/count`);
      counter.textContent = `${c.count.toLocaleString()} documents${state.example ? ' (unfiltered)' : ''}`;
    } catch { counter.textContent = ''; }
  };

  const reset = () => {
    state.page = 0;
    state.starts = [null];
    let example = null;
    if (exampleInput.value.trim()) {
      try {
        example = JSON.parse(exampleInput.value);
        if (mustBeObject(example)) throw new Error('the example must be a JSON object');
      } catch (err) { notify(`filter: ${err.message}`, 'error'); return; }
    }
    state.example = example;
    state.sortBy = sortInput.value.trim() || '_key';
    state.from = state.sortBy === '_key' && fromInput.value.trim() ? fromInput.value.trim() : null;
    state.descending = order.value === 'desc';
    state.pageSize = Number(pageSize.value);
    load();
  };

  const edit = async (key) => {
    let doc;
    try { doc = await get(`/_api/document/${seg(collection)}/${seg(key)}`); } catch (err) { return notify(err.message, 'error'); }
    const editor = jsonEditor(doc, mustBeObject);
    const choice = await dialog(`${collection}/${key}`, editor, [
      { label: 'Delete', value: 'delete', danger: true },
      { label: 'Save', value: 'save', primary: true, check: () => editor.valid || (notify('not a valid document', 'error'), false) },
    ]);
    if (choice === 'delete') return remove(key);
    if (choice !== 'save') return;
    try {
      await put(`/_api/document/${seg(collection)}/${seg(key)}?ignoreRevs=false`, editor.parsed());
      notify('document saved');
      load();
    } catch (err) { notify(err.message, 'error'); }
  };

  const remove = async (key) => {
    if (!(await confirmAction(`Delete document ${key}?`))) return;
    try { await del(`/_api/document/${seg(collection)}/${seg(key)}`); notify('document deleted'); load(); count(); } catch (err) { notify(err.message, 'error'); }
  };

  const create = async () => {
    const template = info.type === 3 ? { _from: '', _to: '' } : {};
    const editor = jsonEditor(template, mustBeObject);
    editor.id = 'new-document-editor';
    const ok = await dialog(`New document in ${collection}`, editor, [{
      label: 'Create', value: true, primary: true,
      check: async () => {
        if (!editor.valid) { notify('not a valid document', 'error'); return false; }
        try { await post(`/_api/document/${seg(collection)}`, editor.parsed()); return true; } catch (err) { notify(err.message, 'error'); return false; }
      },
    }]);
    if (ok) { notify('document created'); load(); count(); }
  };

  const upload = async (file) => {
    if (!file) return;
    const text = await file.text();
    const type = text.trimStart().startsWith('[') ? 'list' : 'documents';
    try {
      const r = await api('POST', `/_api/import?collection=${seg(collection)}&type=${type}&details=true`, undefined, { raw: text, contentType: 'application/json' });
      notify(`imported: ${r.created} created, ${r.errors} errors, ${r.empty} empty${r.details && r.details.length ? ` — ${r.details[0]}` : ''}`, r.errors ? 'error' : 'info');
      fileInput.value = '';
      load(); count();
    } catch (err) { notify(err.message, 'error'); }
  };

  const downloadAll = async () => {
    const lines = [];
    let after = null;
    while (lines.length < DOWNLOAD_MAX) {
      const vars = { '@c': collection, n: 5000 };
      let text = 'FOR d IN @@c';
      if (after !== null) { text += ' FILTER d._key > @after'; vars.after = after; }
      text += ' SORT d._key LIMIT @n RETURN d';
      const { result } = await query(text, vars, { limit: 5000, batchSize: 5000 });
      for (const d of result) lines.push(JSON.stringify(d));
      if (result.length < 5000) break;
      after = result[result.length - 1]._key;
    }
    if (lines.length >= DOWNLOAD_MAX) notify(`download stopped at ${DOWNLOAD_MAX} documents; use quiver dump for more`, 'error');
    download(`${collection}.jsonl`, `${lines.join('\n')}\n`, 'application/x-ndjson');
  };

  mount(root,
    h('div', { class: 'toolbar' },
      h('button', { class: 'primary', id: 'new-document', onclick: create }, 'New document'),
      exampleInput, h('label', {}, 'sort ', sortInput), order, h('label', {}, 'per page ', pageSize), fromInput,
      h('button', { id: 'apply-filter', onclick: reset }, 'Apply'),
      h('span', { class: 'spacer' }),
      h('button', { onclick: () => fileInput.click(), id: 'upload-documents' }, 'Upload JSON/JSONL'), fileInput,
      h('button', { onclick: () => download(`${collection}-page${state.page + 1}.json`, JSON.stringify(state.last, null, 2)) }, 'Download page'),
      h('button', { onclick: downloadAll }, 'Download all')),
    h('div', { class: 'toolbar' }, counter, pager),
    list);
  exampleInput.addEventListener('keydown', (e) => { if (e.key === 'Enter') reset(); });
  fromInput.addEventListener('keydown', (e) => { if (e.key === 'Enter') reset(); });
  count();
  await load();
}

function preview(doc) {
  const { _key, _id, _rev, ...rest } = doc;
  const text = JSON.stringify(rest);
  return text.length > PREVIEW_CHARS ? `${text.slice(0, PREVIEW_CHARS)}…` : text;
}
