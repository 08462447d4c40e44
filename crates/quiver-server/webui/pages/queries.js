// The AQL editor: bind parameters, run with results as JSON, table or graph, explain and
// profile, saved queries, and the running and slow queries with kill.

import { h, mount, notify, dialog, download, table } from '../dom.js';
import { get, post, del, query, seg, session } from '../api.js';
import { aqlEditor, bindParameters } from '../aql.js';
import { jsonEditor } from '../json-editor.js';
import { planView } from '../plan.js';
import { GraphView } from '../graph-canvas.js';

const RESULT_LIMITS = [100, 1000, 10000];

/** Saved queries live in this browser's localStorage, per database. */
const savedKey = () => `quiver.queries.${session.database}`;
const loadSaved = () => { try { return JSON.parse(localStorage.getItem(savedKey()) || '[]'); } catch { return []; } };
const storeSaved = (list) => localStorage.setItem(savedKey(), JSON.stringify(list));

export async function render(root) {
  let collections = [];
  get('/_api/collection?excludeSystem=true').then((r) => { collections = r.result.map((c) => c.name); editor.refresh(); }).catch(() => {});
  let graphView = null;
  const editor = aqlEditor({
    value: sessionStorage.getItem('quiver.aql') || 'FOR doc IN @@collection\n  LIMIT 10\n  RETURN doc',
    collections: () => collections,
    onRun: () => run(),
    onChange: (text) => { sessionStorage.setItem('quiver.aql', text); syncBinds(text); },
  });
  const binds = jsonEditor('{}', (v) => (v && typeof v === 'object' && !Array.isArray(v) ? null : 'bind parameters are a JSON object'));
  binds.id = 'bind-parameters';
  binds.textarea.style.minHeight = '140px';
  const limit = h('select', { id: 'result-limit' }, RESULT_LIMITS.map((n) => h('option', { value: n, selected: n === 1000 }, n)));
  const savedSelect = h('select', { id: 'saved-queries' });
  const status = h('span', { class: 'muted', id: 'query-status' });
  const output = h('div', { id: 'query-output' });
  const tabs = h('div', { class: 'tabs' });
  let last = null; // { result, extra, plan?, profile? }
  let view = 'json';

  function syncBinds(text) {
    let current = {};
    try { current = JSON.parse(binds.value); } catch { return; }
    const names = bindParameters(text);
    const next = {};
    for (const n of names) next[n] = n in current ? current[n] : (n.startsWith('@') ? (collections[0] || '') : null);
    if (JSON.stringify(next) !== JSON.stringify(current)) binds.value = JSON.stringify(next, null, 2);
  }

  const drawSaved = () => {
    mount(savedSelect, h('option', { value: '' }, `saved queries (${loadSaved().length})`),
      loadSaved().map((q, i) => h('option', { value: i }, q.name)));
  };
  savedSelect.addEventListener('change', () => {
    const q = loadSaved()[Number(savedSelect.value)];
    if (!q) return;
    editor.value = q.query;
    binds.value = JSON.stringify(q.bindVars || {}, null, 2);
  });

  const save = async () => {
    const name = h('input', { id: 'saved-query-name', placeholder: 'name' });
    if (!(await dialog('Save query', h('div', {}, name, h('p', { class: 'muted' }, 'Saved in this browser for this database.'))))) return;
    if (!name.value.trim()) return notify('a saved query needs a name', 'error');
    const list = loadSaved().filter((q) => q.name !== name.value.trim());
    list.push({ name: name.value.trim(), query: editor.value, bindVars: binds.valid ? binds.parsed() : {} });
    storeSaved(list.sort((a, b) => a.name.localeCompare(b.name)));
    drawSaved();
    notify('query saved');
  };
  const removeSaved = () => {
    const i = Number(savedSelect.value);
    if (savedSelect.value === '') return;
    const list = loadSaved();
    list.splice(i, 1);
    storeSaved(list);
    drawSaved();
  };

  const bindVars = () => {
    if (!binds.valid) throw new Error('the bind parameters are not a valid JSON object');
    return binds.parsed();
  };

  const run = async (profile = false) => {
    status.textContent = 'running…';
    try {
      const r = await query(editor.value, bindVars(), { limit: Number(limit.value), options: profile ? { profile: 2 } : {} });
      last = { ...r, plan: profile ? r.extra.plan : null, profiled: profile };
      const stats = r.extra.stats || {};
      status.textContent = `${r.result.length}${r.truncated ? '+' : ''} results in ${(r.elapsed).toFixed(1)} ms` +
        (stats.executionTime !== undefined ? ` (server ${(stats.executionTime * 1000).toFixed(1)} ms, ${stats.scannedFull ?? 0} full scans, ${stats.scannedIndex ?? 0} index scans)` : '') +
        ((r.extra.warnings || []).length ? ` — warnings: ${r.extra.warnings.map((w) => w.message).join('; ')}` : '');
      view = profile ? 'profile' : (graphOf(r.result) ? 'graph' : (tabular(r.result) ? 'table' : 'json'));
      show();
    } catch (err) {
      status.textContent = '';
      last = null;
      mount(output, h('p', { class: 'error', id: 'query-error' }, err.message));
      mount(tabs);
    }
  };

  const explain = async () => {
    status.textContent = 'explaining…';
    try {
      const r = await post('/_api/explain', { query: editor.value, bindVars: bindVars() });
      last = { result: null, plan: r.plan, explain: r };
      status.textContent = `plan with ${r.plan.nodes.length} nodes${(r.warnings || []).length ? `, warnings: ${r.warnings.map((w) => w.message).join('; ')}` : ''}`;
      view = 'plan';
      show();
    } catch (err) {
      status.textContent = '';
      mount(output, h('p', { class: 'error', id: 'query-error' }, err.message));
    }
  };

  function show() {
    if (graphView) { graphView.destroy(); graphView = null; }
    const available = [];
    if (last.result) available.push('json', 'table');
    if (last.result && graphOf(last.result)) available.push('graph');
    if (last.plan) available.push(last.profiled ? 'profile' : 'plan');
    mount(tabs, available.map((t) => h('button', { class: t === view ? 'active' : '', 'data-view': t, onclick: () => { view = t; show(); } }, t)),
      last.result ? h('button', { onclick: () => download('result.json', JSON.stringify(last.result, null, 2)) }, 'Download') : null);
    if (view === 'json') {
      const text = JSON.stringify(last.result, null, 2);
      mount(output, h('pre', { class: 'json panel', id: 'result-json' }, text.length > 2e6 ? `${text.slice(0, 2e6)}\n… (cut; download for all)` : text));
    } else if (view === 'table') {
      mount(output, resultTable(last.result));
    } else if (view === 'graph') {
      const box = h('div', { class: 'graph-view', id: 'result-graph' });
      mount(output, box);
      const { vertices, edges } = graphOf(last.result);
      graphView = new GraphView(box, { onNodeClick: (n) => notify(JSON.stringify(n.data || n.id).slice(0, 300)) });
      graphView.add(vertices, edges);
      box.dataset.nodes = graphView.stats.nodes;
      box.dataset.edges = graphView.stats.edges;
    } else if (view === 'plan') {
      mount(output, planView(last.plan));
    } else if (view === 'profile') {
      const nodes = new Map(((last.extra.stats || {}).nodes || []).map((n) => [n.id, n]));
      const phases = last.extra.profile || {};
      mount(output, planView(last.plan, nodes),
        h('p', {}, h('strong', {}, 'Phases (s): '), Object.entries(phases).map(([k, v]) => `${k} ${Number(v).toFixed(5)}`).join(', ')));
    }
  }

  const running = h('div', { id: 'running-queries' });
  const refreshRunning = async () => {
    try {
      const [current, slow] = await Promise.all([get('/_api/query/current'), get('/_api/query/slow')]);
      const cols = (kill) => [
        ['ID', (q) => q.id], ['Query', (q) => h('span', { class: 'json' }, q.query.slice(0, 200))],
        ['User', (q) => q.user || ''], ['Started', (q) => q.started], ['Run time (s)', (q) => Number(q.runTime).toFixed(3)],
        ['State', (q) => q.state],
        ['', (q) => (kill ? h('button', { class: 'danger', onclick: () => del(`/_api/query/${seg(q.id)}`).then(() => { notify(`query ${q.id} killed`); refreshRunning(); }, (e) => notify(e.message, 'error')) }, 'Kill') : '')],
      ];
      mount(running, h('h2', {}, `Running queries (${current.length})`), table(cols(true), current),
        h('h2', {}, `Slow queries (${slow.length})`), table(cols(false), slow),
        slow.length ? h('button', { onclick: () => del('/_api/query/slow').then(refreshRunning) }, 'Clear slow query list') : null);
    } catch (err) { mount(running, h('p', { class: 'error' }, err.message)); }
  };

  mount(root,
    h('h1', {}, 'Queries'),
    h('div', { class: 'toolbar' },
      h('button', { class: 'primary', id: 'run-query', onclick: () => run(false) }, 'Execute'),
      h('button', { id: 'explain-query', onclick: explain }, 'Explain'),
      h('button', { id: 'profile-query', onclick: () => run(true) }, 'Profile'),
      h('label', {}, 'limit ', limit),
      h('span', { class: 'spacer' }),
      savedSelect, h('button', { onclick: save, id: 'save-query' }, 'Save'), h('button', { onclick: removeSaved }, 'Delete saved')),
    h('div', { style: { display: 'grid', gridTemplateColumns: '3fr 1fr', gap: '12px' } },
      editor, h('div', {}, h('small', { class: 'muted' }, 'Bind parameters'), binds)),
    h('p', { class: 'muted' }, 'Ctrl+Enter runs the query. ', status),
    tabs, output,
    h('details', { id: 'query-list', ontoggle: (e) => { if (e.target.open) refreshRunning(); } }, h('summary', {}, 'Running and slow queries'), running));
  drawSaved();
  syncBinds(editor.value);
  const timer = setInterval(() => { if (document.getElementById('query-list')?.open) refreshRunning(); }, 3000);
  return () => { clearInterval(timer); if (graphView) graphView.destroy(); };
}

/** Whether every row is an object (or a scalar), so columns make sense. */
function tabular(rows) {
  return rows.length > 0 && rows.every((r) => r !== null && typeof r === 'object' && !Array.isArray(r));
}

function resultTable(rows) {
  const columns = [];
  const seen = new Set();
  for (const r of rows.slice(0, 1000)) {
    const keys = r !== null && typeof r === 'object' && !Array.isArray(r) ? Object.keys(r) : ['(value)'];
    for (const k of keys) if (!seen.has(k) && columns.length < 50) { seen.add(k); columns.push(k); }
  }
  const cell = (v) => (v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v));
  return h('div', { style: { overflow: 'auto', maxHeight: '60vh' } },
    h('table', { id: 'result-table' },
      h('thead', {}, h('tr', {}, columns.map((c) => h('th', {}, c)))),
      h('tbody', {}, rows.slice(0, 5000).map((r) => h('tr', {}, columns.map((c) => h('td', { class: 'json' },
        c === '(value)' && (r === null || typeof r !== 'object' || Array.isArray(r)) ? cell(r) : cell(r && r[c]))))))));
}

/**
 * The vertices and edges in a result, when it has edges: edge documents (_from/_to), paths
 * ({vertices, edges}) or objects holding them one level down ({v, e, p}). Null otherwise.
 */
export function graphOf(rows) {
  const vertices = new Map();
  const edges = new Map();
  const visit = (value, depth) => {
    if (!value || typeof value !== 'object' || depth > 3) return;
    if (Array.isArray(value)) { value.forEach((x) => visit(x, depth + 1)); return; }
    if (typeof value._from === 'string' && typeof value._to === 'string') { edges.set(value._id || `${value._from}>${value._to}`, value); return; }
    if (typeof value._id === 'string') { vertices.set(value._id, value); return; }
    for (const v of Object.values(value)) visit(v, depth + 1);
  };
  for (const r of rows) visit(r, 0);
  if (!edges.size) return null;
  return { vertices: [...vertices.values()], edges: [...edges.values()] };
}
