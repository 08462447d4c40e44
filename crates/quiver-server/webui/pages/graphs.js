// Named graphs (gharial): the list, creation, edge definitions and orphans, and the
// interactive viewer (start vertex, depth, expand on click, labels and colours by attribute).

import { h, mount, notify, dialog, confirmAction, field, table } from '../dom.js';
import { get, post, put, del, query, seg } from '../api.js';
import { GraphView } from '../graph-canvas.js';

export async function render(root, { route, args }) {
  if (route === 'graph' && args[0]) return renderViewer(root, args[0]);
  return renderList(root);
}

const list = (s) => s.split(',').map((x) => x.trim()).filter(Boolean);

async function renderList(root) {
  const body = h('div');
  const load = async () => {
    const { graphs } = await get('/_api/gharial');
    mount(body, table([
      ['Name', (g) => h('a', { href: `#graph/${encodeURIComponent(g._key || g.name)}`, class: 'graph-link' }, g._key || g.name)],
      ['Edge definitions', (g) => h('div', {}, (g.edgeDefinitions || []).map((d) => h('div', { class: 'json' }, `${d.from.join(', ')} —${d.collection}→ ${d.to.join(', ')}`)))],
      ['Orphans', (g) => (g.orphanCollections || []).join(', ')],
      ['', (g) => h('span', {},
        h('button', { onclick: () => editDialog(g).then(load) }, 'Edit'), ' ',
        h('button', { class: 'danger', onclick: () => drop(g._key || g.name).then(load) }, 'Drop'))],
    ], graphs, { id: 'graphs-table' }));
  };
  mount(root, h('h1', {}, 'Graphs'),
    h('div', { class: 'toolbar' }, h('button', { class: 'primary', id: 'create-graph', onclick: () => createDialog().then(load) }, 'New graph')),
    body);
  await load();
}

function definitionRow(def = { collection: '', from: [], to: [] }) {
  const collection = h('input', { placeholder: 'edge collection', value: def.collection, class: 'def-collection' });
  const from = h('input', { placeholder: 'from: a, b', value: def.from.join(', '), class: 'def-from' });
  const to = h('input', { placeholder: 'to: c', value: def.to.join(', '), class: 'def-to' });
  const row = h('div', { class: 'toolbar definition' }, collection, from, to);
  row.read = () => ({ collection: collection.value.trim(), from: list(from.value), to: list(to.value) });
  return row;
}

async function createDialog() {
  const name = h('input', { id: 'new-graph-name' });
  const defs = h('div', {}, definitionRow());
  const orphans = h('input', { placeholder: 'vertex collections without edges' });
  const form = h('div', {}, field('Name', name), h('p', {}, 'Edge definitions'), defs,
    h('button', { onclick: () => defs.append(definitionRow()) }, '+ edge definition'),
    field('Orphan collections', orphans));
  await dialog('New graph', form, [{
    label: 'Create', value: true, primary: true,
    check: async () => {
      const edgeDefinitions = [...defs.children].map((r) => r.read()).filter((d) => d.collection);
      try {
        await post('/_api/gharial', { name: name.value.trim(), edgeDefinitions, orphanCollections: list(orphans.value) });
        notify('graph created');
        return true;
      } catch (err) { notify(err.message, 'error'); return false; }
    },
  }]);
}

async function editDialog(graph) {
  const name = graph._key || graph.name;
  const rows = (graph.edgeDefinitions || []).map((d) => definitionRow(d));
  const defs = h('div', {}, rows);
  const orphans = h('input', { value: (graph.orphanCollections || []).join(', ') });
  const ok = await dialog(`Graph ${name}`, h('div', {}, h('p', {}, 'Edge definitions (clear a collection name to remove it)'), defs,
    h('button', { onclick: () => defs.append(definitionRow()) }, '+ edge definition'), field('Orphan collections', orphans)),
  [{ label: 'Save', value: true, primary: true }]);
  if (!ok) return;
  const before = new Map((graph.edgeDefinitions || []).map((d) => [d.collection, d]));
  const after = [...defs.children].map((r) => r.read());
  try {
    for (const [i, d] of after.entries()) {
      const old = graph.edgeDefinitions[i];
      if (old && !d.collection) await del(`/_api/gharial/${seg(name)}/edge/${seg(old.collection)}`);
      else if (d.collection && before.has(d.collection)) {
        const prev = before.get(d.collection);
        if (JSON.stringify(prev.from) !== JSON.stringify(d.from) || JSON.stringify(prev.to) !== JSON.stringify(d.to)) {
          await put(`/_api/gharial/${seg(name)}/edge/${seg(d.collection)}`, d);
        }
      } else if (d.collection) await post(`/_api/gharial/${seg(name)}/edge`, d);
    }
    const wanted = new Set(list(orphans.value));
    const had = new Set(graph.orphanCollections || []);
    for (const c of wanted) if (!had.has(c)) await post(`/_api/gharial/${seg(name)}/vertex`, { collection: c });
    for (const c of had) if (!wanted.has(c)) await del(`/_api/gharial/${seg(name)}/vertex/${seg(c)}`);
    notify('graph saved');
  } catch (err) { notify(err.message, 'error'); }
}

async function drop(name) {
  const withCollections = h('input', { type: 'checkbox' });
  const ok = await dialog(`Drop graph ${name}?`, h('label', {}, withCollections, ' also drop its collections'), [{ label: 'Drop', value: true, danger: true }]);
  if (!ok) return;
  try { await del(`/_api/gharial/${seg(name)}?dropCollections=${withCollections.checked}`); notify('graph dropped'); } catch (err) { notify(err.message, 'error'); }
}

async function renderViewer(root, name) {
  const { graph } = await get(`/_api/gharial/${seg(name)}`);
  const vertexCollections = [...new Set([...(graph.edgeDefinitions || []).flatMap((d) => [...d.from, ...d.to]), ...(graph.orphanCollections || [])])];
  const start = h('input', { id: 'graph-start', placeholder: 'collection/key', size: 28 });
  const depth = h('input', { id: 'graph-depth', type: 'number', min: 0, max: 10, value: 2, style: { width: '4em' } });
  const limit = h('input', { id: 'graph-limit', type: 'number', min: 1, max: 50000, value: 2000, style: { width: '6em' } });
  const label = h('input', { id: 'graph-label', value: '_key', size: 10 });
  const color = h('input', { id: 'graph-color', value: '_id', size: 10, title: '_id colours by collection' });
  const box = h('div', { class: 'graph-view', id: 'graph-viewer' });
  const legend = h('div', { class: 'legend', id: 'graph-legend' });
  const info = h('div', { class: 'info', hidden: true, id: 'graph-info' });
  box.append(legend, info);
  const view = new GraphView(box, {
    labelAttribute: '_key',
    colorAttribute: '_id',
    onNodeClick: (node) => {
      info.hidden = false;
      mount(info, h('strong', {}, node.id), h('pre', { class: 'json' }, JSON.stringify(node.data, null, 2)));
      expand(node.id);
    },
  });
  const status = () => { legend.textContent = `${view.stats.nodes} vertices, ${view.stats.edges} edges — click a vertex to expand, drag to move, wheel to zoom`; };

  const neighbourhood = async (from, min, max) => {
    const r = await query(`FOR v, e IN ${min}..@depth ANY @start GRAPH @graph LIMIT @limit RETURN {v, e}`,
      { depth: max, start: from, graph: name, limit: Number(limit.value) }, { limit: Number(limit.value), batchSize: 5000 });
    return { vertices: r.result.map((x) => x.v).filter(Boolean), edges: r.result.map((x) => x.e).filter(Boolean) };
  };

  const load = async () => {
    const begun = performance.now();
    try {
      if (!start.value) {
        const first = vertexCollections.length ? (await query('FOR v IN @@c LIMIT 1 RETURN v._id', { '@c': vertexCollections[0] })).result[0] : null;
        if (!first) { legend.textContent = 'the graph has no vertices'; return; }
        start.value = first;
      }
      const { vertices, edges } = await neighbourhood(start.value, 0, Number(depth.value));
      const received = performance.now();
      view.clear();
      view.setLabel(label.value || '_key');
      view.setColor(color.value || '_id');
      view.add(vertices, edges);
      view.fit();
      const drawn = await view.nextFrame();
      box.dataset.firstRenderMs = String(Math.round(drawn - begun));
      box.dataset.renderMs = String(Math.round(drawn - received));
      box.dataset.nodes = view.stats.nodes;
      status();
    } catch (err) { notify(err.message, 'error'); }
  };

  const expand = async (id) => {
    try {
      const { vertices, edges } = await neighbourhood(id, 1, 1);
      view.add(vertices, edges, id);
      box.dataset.nodes = view.stats.nodes;
      status();
    } catch (err) { notify(err.message, 'error'); }
  };

  label.addEventListener('change', () => view.setLabel(label.value || '_key'));
  color.addEventListener('change', () => view.setColor(color.value || '_id'));
  mount(root,
    h('h1', {}, h('a', { href: '#graphs' }, 'Graphs'), ' / ', name),
    h('div', { class: 'toolbar' },
      field('Start vertex', start), field('Depth', depth), field('Limit', limit),
      field('Label by', label), field('Colour by', color),
      h('button', { class: 'primary', id: 'graph-load', onclick: load }, 'Show'),
      h('button', { onclick: () => view.fit() }, 'Fit')),
    box);
  await load();
  return () => view.destroy();
}
