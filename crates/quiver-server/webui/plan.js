// Execution plans as a tree: explain's nodes with their estimated costs, and a profile's
// per-node calls, items and run times.

import { h } from './dom.js';

/** One line saying what a plan node does. */
export function describe(node) {
  const v = (x) => (x && x.name) || '';
  switch (node.type) {
    case 'EnumerateCollectionNode': return `FOR ${v(node.outVariable)} IN ${node.collection}${node.random ? ' (random)' : ''}`;
    case 'IndexNode': return `FOR ${v(node.outVariable)} IN ${node.collection} (${(node.indexes || []).map((i) => `${i.type} index ${i.name || i.id}`).join(', ')})`;
    case 'EnumerateListNode': return `FOR ${v(node.outVariable)} IN ${v(node.inVariable)}`;
    case 'CalculationNode': return `LET ${v(node.outVariable)} = …${node.expressionType ? ` (${node.expressionType})` : ''}`;
    case 'FilterNode': return `FILTER ${v(node.inVariable)}`;
    case 'ReturnNode': return `RETURN ${v(node.inVariable)}`;
    case 'LimitNode': return `LIMIT ${node.offset}, ${node.limit}`;
    case 'SortNode': return `SORT ${(node.elements || []).map((e) => `${v(e.inVariable)} ${e.ascending ? 'ASC' : 'DESC'}`).join(', ')}`;
    case 'CollectNode': return `COLLECT ${(node.groups || []).map((g) => v(g.outVariable)).join(', ')}${node.collectOptions ? ` (${node.collectOptions.method})` : ''}`;
    case 'TraversalNode': return `FOR ${[node.vertexOutVariable, node.edgeOutVariable, node.pathOutVariable].filter(Boolean).map(v).join(', ')} IN ${node.minDepth ?? ''}..${node.maxDepth ?? ''} ${node.direction === 1 ? 'INBOUND' : node.direction === 2 ? 'OUTBOUND' : 'ANY'}`;
    case 'ShortestPathNode': return 'SHORTEST_PATH';
    case 'InsertNode': case 'UpdateNode': case 'ReplaceNode': case 'RemoveNode': case 'UpsertNode':
      return `${node.type.replace('Node', '').toUpperCase()} ${node.collection || ''}`;
    case 'SubqueryStartNode': return 'subquery begin';
    case 'SubqueryEndNode': return `subquery end → ${v(node.outVariable)}`;
    default: return '';
  }
}

/** Orders nodes from the root (ReturnNode) down through dependencies, with their depth. */
function ordered(nodes) {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const dependedOn = new Set(nodes.flatMap((n) => n.dependencies || []));
  const roots = nodes.filter((n) => !dependedOn.has(n.id));
  const out = [];
  const seen = new Set();
  const walk = (node, depth) => {
    if (!node || seen.has(node.id) || out.length > 10000) return;
    seen.add(node.id);
    out.push([node, depth]);
    const deps = node.dependencies || [];
    deps.forEach((d, i) => walk(byId.get(d), depth + (deps.length > 1 && i > 0 ? 1 : 0)));
  };
  roots.forEach((r) => walk(r, 0));
  return out.reverse();
}

/** The plan as a table; `profile` maps node id → {calls, items, runtime} when profiled. */
export function planView(plan, profile = null) {
  if (!plan || !plan.nodes) return h('p', { class: 'muted' }, 'no plan');
  const rows = ordered(plan.nodes);
  const cols = ['id', 'node', 'est. items', 'est. cost'];
  if (profile) cols.push('calls', 'items', 'runtime (s)');
  cols.push('details');
  return h('div', { class: 'plan', id: 'plan-view' },
    h('table', {},
      h('thead', {}, h('tr', {}, cols.map((c) => h('th', {}, c)))),
      h('tbody', {}, rows.map(([n, depth]) => {
        const p = profile && profile.get(n.id);
        return h('tr', { 'data-node-type': n.type },
          h('td', {}, n.id),
          h('td', {}, `${'  '.repeat(depth)}${n.type}`),
          h('td', {}, n.estimatedNrItems ?? ''),
          h('td', {}, typeof n.estimatedCost === 'number' ? n.estimatedCost.toFixed(2) : ''),
          profile ? [h('td', {}, p ? p.calls : ''), h('td', {}, p ? p.items : ''), h('td', {}, p ? Number(p.runtime).toFixed(5) : '')] : null,
          h('td', {}, describe(n)));
      }))),
    h('p', {}, h('strong', {}, 'Rules applied: '), (plan.rules || []).join(', ') || 'none'),
    h('p', {}, h('strong', {}, 'Estimated cost: '), typeof plan.estimatedCost === 'number' ? plan.estimatedCost.toFixed(2) : '-',
      '  ', h('strong', {}, 'Collections: '), (plan.collections || []).map((c) => `${c.name} (${c.type})`).join(', ')));
}
