// The dashboard: live charts of requests per second, latency, memory, connections, cursors,
// and the WAL and compaction state, sampled every POLL_MS from /_admin/metrics/v2 (Prometheus
// text) with /_admin/statistics as the fallback for the figures it has.

import { h, mount, formatBytes, table } from '../dom.js';
import { get } from '../api.js';

const POLL_MS = 2000;
const HISTORY = 150; // points kept per chart (5 minutes at POLL_MS)

/** Prometheus text format → Map(name → summed value over all label sets). */
export function parseMetrics(text) {
  const out = new Map();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/);
    if (!m) continue;
    const value = Number(m[3]);
    if (!Number.isFinite(value)) continue;
    out.set(m[1], (out.get(m[1]) || 0) + value);
  }
  return out;
}

class Chart {
  constructor(title, format) {
    this.format = format;
    this.points = [];
    this.value = h('span', { class: 'value' }, '–');
    this.canvas = h('canvas');
    this.el = h('div', { class: 'chart', 'data-chart': title }, h('h3', {}, title, this.value), this.canvas);
  }

  push(v) {
    if (v === undefined || v === null || !Number.isFinite(v)) return;
    this.points.push(v);
    if (this.points.length > HISTORY) this.points.shift();
    this.value.textContent = this.format(v);
    this.el.dataset.samples = String(this.points.length);
    this.draw();
  }

  draw() {
    const c = this.canvas;
    const ratio = window.devicePixelRatio || 1;
    const w = c.clientWidth || 300;
    const hgt = c.clientHeight || 120;
    c.width = w * ratio;
    c.height = hgt * ratio;
    const ctx = c.getContext('2d');
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, w, hgt);
    const max = Math.max(...this.points, 1e-9) * 1.1;
    ctx.strokeStyle = '#dde1e6';
    ctx.beginPath();
    for (let i = 1; i < 4; i++) { ctx.moveTo(0, (hgt * i) / 4); ctx.lineTo(w, (hgt * i) / 4); }
    ctx.stroke();
    ctx.fillStyle = '#6b7480';
    ctx.font = '10px system-ui';
    ctx.fillText(this.format(max), 2, 10);
    ctx.strokeStyle = '#2f6f4f';
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    this.points.forEach((p, i) => {
      const x = (i / (HISTORY - 1)) * w;
      const y = hgt - (p / max) * (hgt - 4) - 2;
      if (i) ctx.lineTo(x, y); else ctx.moveTo(x, y);
    });
    ctx.stroke();
  }
}

const num = (digits) => (v) => v.toLocaleString(undefined, { maximumFractionDigits: digits });

export async function render(root) {
  const charts = {
    requests: new Chart('Requests per second', num(1)),
    latency: new Chart('Average request time (ms)', num(2)),
    memory: new Chart('Resident memory', formatBytes),
    connections: new Chart('Open client connections', num(0)),
    cursors: new Chart('Open cursors', num(0)),
    queries: new Chart('Running AQL queries', num(0)),
    wal: new Chart('WAL: sealed segments waiting for the collector', num(0)),
    compaction: new Chart('Compactions run', num(0)),
  };
  const status = h('p', { class: 'muted', id: 'dashboard-status' });
  const storage = h('div', { id: 'storage-metrics' });
  mount(root, h('h1', {}, 'Dashboard'), status,
    h('div', { class: 'charts', id: 'dashboard-charts' }, Object.values(charts).map((c) => c.el)),
    h('h2', {}, 'WAL and compaction'), storage);
  let previous = null;
  let samples = 0;

  const sample = async () => {
    const now = performance.now();
    let metrics = null;
    let stats = null;
    const problems = [];
    try { metrics = parseMetrics(await get('/_admin/metrics/v2', { db: '_system', text: true })); } catch (err) { problems.push(`metrics: ${err.message}`); }
    try { stats = await get('/_admin/statistics', { db: '_system' }); } catch (err) { problems.push(`statistics: ${err.message}`); }
    const m = (name) => (metrics && metrics.has(name) ? metrics.get(name) : undefined);
    const cur = {
      t: now,
      requests: m('arangodb_http_request_statistics_total_requests_total') ?? stats?.http?.requestsTotal,
      timeSum: m('arangodb_client_connection_statistics_total_time_sum') ?? stats?.client?.totalTime?.sum,
      timeCount: m('arangodb_client_connection_statistics_total_time_count') ?? stats?.client?.totalTime?.count,
      memory: m('arangodb_process_statistics_resident_set_size') ?? stats?.system?.residentSize,
      connections: m('arangodb_client_connection_statistics_client_connections') ?? stats?.client?.httpConnections,
      cursors: m('arangodb_aql_cursors_active'),
      queries: m('arangodb_aql_current_query'),
      wal: m('quiver_wal_segments_pending'),
      compaction: m('quiver_compaction_runs_total'),
    };
    if (previous && cur.requests !== undefined && previous.requests !== undefined) {
      const seconds = (cur.t - previous.t) / 1000;
      charts.requests.push((cur.requests - previous.requests) / seconds);
      const count = cur.timeCount - previous.timeCount;
      if (Number.isFinite(count)) charts.latency.push(count > 0 ? ((cur.timeSum - previous.timeSum) / count) * 1000 : 0);
    }
    charts.memory.push(cur.memory);
    charts.connections.push(cur.connections);
    charts.cursors.push(cur.cursors);
    charts.queries.push(cur.queries);
    charts.wal.push(cur.wal);
    charts.compaction.push(cur.compaction);
    previous = cur;
    samples += 1;
    root.dataset.samples = String(samples);
    status.textContent = `${samples} samples, every ${POLL_MS / 1000} s${problems.length ? ` — ${problems.join('; ')}` : ''}`;
    if (metrics) {
      const rows = [...metrics.entries()].filter(([k]) => /^quiver_(wal|compaction|group_commit|collector)/.test(k) && !k.endsWith('_bucket')).sort();
      mount(storage, rows.length ? table([['Metric', ([k]) => k], ['Value', ([, v]) => num(3)(v)]], rows) : h('p', { class: 'muted' }, 'no quiver_wal_* or quiver_compaction_* metrics reported'));
    }
  };
  await sample();
  const timer = setInterval(sample, POLL_MS);
  return () => clearInterval(timer);
}
