// The graph view: vertices and edges drawn on one canvas, laid out by a force simulation.
//
// Hand-written rather than a graph library: what the interface needs is small (draw, pan,
// zoom, click to expand, colour and label by an attribute) and must stay responsive with
// 10,000 vertices, which this gets from two choices a general library does not make for us:
// repulsion is computed only between vertices in neighbouring cells of a uniform grid (about
// linear per step instead of quadratic), and the simulation runs in bounded slices of at most
// STEP_BUDGET_MS per animation frame, so input and drawing are never starved.

const STEP_BUDGET_MS = 8;
const MAX_NODES = 50000; // a bound on what one view holds; more is refused, not drawn slowly
const REDRAW_MS_PER_VERTEX = 0.02; // 10,000 vertices: one drawing per 200 ms
const MAX_REDRAW_MS = 250;
const CELL = 60; // grid cell size = repulsion range in layout units
const PALETTE = ['#2f6f4f', '#0b6bcb', '#c2185b', '#a36a00', '#6a3fb5', '#00838f', '#8d6e63', '#546e7a', '#d84315', '#558b2f'];

export class GraphView {
  constructor(container, { onNodeClick = () => {}, labelAttribute = '_key', colorAttribute = '_id' } = {}) {
    this.canvas = document.createElement('canvas');
    container.append(this.canvas);
    this.ctx = this.canvas.getContext('2d');
    this.nodes = [];
    this.byId = new Map();
    this.edges = [];
    this.edgeIds = new Set();
    this.labelAttribute = labelAttribute;
    this.colorAttribute = colorAttribute;
    this.colors = new Map();
    this.onNodeClick = onNodeClick;
    this.view = { x: 0, y: 0, scale: 1 };
    this.alpha = 1;
    this.pending = null;
    // The view follows the layout until the user pans, zooms or drags.
    this.autoFit = true;
    this.steps = 0;
    this.lastDrawAt = 0;
    this.lastDrawMs = 0;
    this.frames = 0;
    this.selected = null;
    this.firstFrameWaiters = [];
    this.dirty = true;
    this.running = true;
    this.bindInput();
    this.resize();
    this.resizeObserver = new ResizeObserver(() => { this.resize(); this.dirty = true; });
    this.resizeObserver.observe(container);
    const loop = () => {
      if (!this.running) return;
      this.tick();
      this.raf = requestAnimationFrame(loop);
    };
    this.raf = requestAnimationFrame(loop);
  }

  destroy() {
    this.running = false;
    cancelAnimationFrame(this.raf);
    this.resizeObserver.disconnect();
    window.removeEventListener('mousemove', this.onMove);
    window.removeEventListener('mouseup', this.onUp);
    this.canvas.remove();
  }

  resize() {
    const rect = this.canvas.getBoundingClientRect();
    const ratio = window.devicePixelRatio || 1;
    this.width = Math.max(rect.width, 100);
    this.height = Math.max(rect.height, 100);
    this.canvas.width = Math.round(this.width * ratio);
    this.canvas.height = Math.round(this.height * ratio);
    this.ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  }

  /** Resolves with performance.now() of the next drawn frame. */
  nextFrame() {
    return new Promise((resolve) => this.firstFrameWaiters.push(resolve));
  }

  clear() {
    this.nodes = [];
    this.byId.clear();
    this.edges = [];
    this.edgeIds.clear();
    this.colors = new Map();
    this.selected = null;
    this.pending = null;
    this.autoFit = true;
    this.view = { x: 0, y: 0, scale: 1 };
    this.dirty = true;
  }

  get stats() {
    return { nodes: this.nodes.length, edges: this.edges.length };
  }

  /**
   * Adds vertex documents (with _id) and edge documents (with _from/_to); known ones are
   * updated. New vertices start on a spiral around `near` (the expanded vertex) or the
   * centre, which is already close to a readable layout and keeps the simulation short.
   */
  add(vertices, edges, near = null) {
    const origin = near ? this.byId.get(near) : null;
    const cx = origin ? origin.x : 0;
    const cy = origin ? origin.y : 0;
    let fresh = 0;
    const ensure = (id, data) => {
      let node = this.byId.get(id);
      if (node) {
        if (data && !node.data) { node.data = data; node.colorFor = null; }
        return node;
      }
      if (this.nodes.length >= MAX_NODES) return null;
      // Phyllotaxis spiral: evenly spread, no two starting points alike.
      const i = fresh++;
      const r = 12 * Math.sqrt(i);
      const angle = i * 2.399963;
      node = { id, data, x: cx + r * Math.cos(angle), y: cy + r * Math.sin(angle), vx: 0, vy: 0, degree: 0 };
      this.nodes.push(node);
      this.byId.set(id, node);
      return node;
    };
    for (const v of vertices) if (v && v._id) ensure(v._id, v);
    for (const e of edges) {
      if (!e || !e._from || !e._to || this.edgeIds.has(e._id || `${e._from}>${e._to}`)) continue;
      const s = ensure(e._from, null);
      const t = ensure(e._to, null);
      if (!s || !t) continue;
      this.edgeIds.add(e._id || `${e._from}>${e._to}`);
      this.edges.push({ source: s, target: t, data: e });
      s.degree += 1;
      t.degree += 1;
    }
    this.pending = null; // the next step's grid must hold the new vertices
    this.alpha = Math.max(this.alpha, fresh > 0 ? 0.8 : 0.3);
    this.dirty = true;
    return fresh;
  }

  setLabel(attribute) { this.labelAttribute = attribute; this.dirty = true; }

  setColor(attribute) { this.colorAttribute = attribute; this.colors = new Map(); this.dirty = true; }

  valueOf(node, attribute) {
    if (!node.data) return attribute === '_id' ? node.id : undefined;
    if (attribute === '_id') return node.id.split('/')[0];
    let value = node.data;
    for (const part of attribute.split('.')) value = value == null ? undefined : value[part];
    return value;
  }

  colorOf(node) {
    if (node.colorFor === this.colorAttribute && node.colorOf === this.colors) return node.color;
    node.colorFor = this.colorAttribute;
    node.colorOf = this.colors;
    node.color = this.pickColor(node);
    return node.color;
  }

  pickColor(node) {
    const value = String(this.valueOf(node, this.colorAttribute));
    let color = this.colors.get(value);
    if (!color) {
      color = PALETTE[this.colors.size % PALETTE.length];
      this.colors.set(value, color);
    }
    return color;
  }

  /** One slice of simulation (at most STEP_BUDGET_MS) and, when anything moved, one drawing. */
  tick() {
    if (this.alpha > 0.005 && this.nodes.length) {
      const deadline = performance.now() + STEP_BUDGET_MS;
      while (this.alpha > 0.005 && performance.now() < deadline) {
        if (!this.pending) this.beginStep();
        if (this.repel(deadline)) this.endStep();
      }
      this.dirty = true;
    }
    // Rasterizing thousands of shapes costs the browser far more than the script that issues
    // them (measured: 10,000 vertices keep a software-rendered main thread fully busy at every
    // frame), so large graphs are redrawn at most every REDRAW_MS_PER_VERTEX × size ms (at
    // most MAX_REDRAW_MS) and the frames between stay free for input and the layout.
    const now0 = performance.now();
    const interval = Math.min(MAX_REDRAW_MS, this.nodes.length * REDRAW_MS_PER_VERTEX);
    const due = !this.lastDrawAt || this.firstFrameWaiters.length
      || now0 - this.lastDrawAt >= Math.max(interval, 2 * this.lastDrawMs);
    if (this.dirty && due) {
      this.draw();
      this.dirty = false;
      const now = performance.now();
      this.lastDrawMs = now - now0;
      this.lastDrawAt = now;
      const waiters = this.firstFrameWaiters;
      this.firstFrameWaiters = [];
      waiters.forEach((w) => w(now));
    }
  }

  /**
   * A simulation step is split so that a frame never waits for a whole step: the grid is built
   * once ([beginStep]), repulsion runs over as many vertices as the frame's budget allows
   * ([repel], resumed next frame), then springs and movement are applied ([endStep]).
   */
  beginStep() {
    // Uniform grid with numeric cell keys: each vertex only meets the vertices of the 9
    // cells around it.
    const grid = new Map();
    for (const n of this.nodes) {
      n.gx = Math.floor(n.x / CELL);
      n.gy = Math.floor(n.y / CELL);
      const key = n.gx * 1048576 + n.gy;
      let cell = grid.get(key);
      if (!cell) grid.set(key, (cell = []));
      cell.push(n);
    }
    this.pending = { grid, cursor: 0 };
  }

  /** Repulsion for the next vertices of the step; true when every vertex had its turn. */
  repel(deadline) {
    const { grid } = this.pending;
    const nodes = this.nodes;
    const force = 400 * this.alpha;
    let i = this.pending.cursor;
    for (; i < nodes.length; i++) {
      if ((i & 127) === 0 && performance.now() > deadline) break;
      const n = nodes[i];
      for (let dx = -1; dx <= 1; dx++) {
        for (let dy = -1; dy <= 1; dy++) {
          const cell = grid.get((n.gx + dx) * 1048576 + n.gy + dy);
          if (!cell) continue;
          // A crowded cell is sampled, not scanned whole, so one vertex's work is bounded.
          const stride = cell.length > 64 ? Math.ceil(cell.length / 64) : 1;
          for (let j = 0; j < cell.length; j += stride) {
            const m = cell[j];
            if (m === n) continue;
            let ddx = n.x - m.x;
            let ddy = n.y - m.y;
            let d2 = ddx * ddx + ddy * ddy;
            if (d2 > CELL * CELL) continue;
            if (d2 < 0.01) { ddx = Math.random() - 0.5; ddy = Math.random() - 0.5; d2 = 0.5; }
            const f = (stride * force) / d2;
            n.vx += ddx * f;
            n.vy += ddy * f;
          }
        }
      }
    }
    this.pending.cursor = i;
    return i >= nodes.length;
  }

  endStep() {
    this.pending = null;
    const alpha = this.alpha;
    // Springs along edges, pulling towards a rest length.
    for (const e of this.edges) {
      const dx = e.target.x - e.source.x;
      const dy = e.target.y - e.source.y;
      const d = Math.sqrt(dx * dx + dy * dy) || 1;
      const f = ((d - 40) / d) * 0.32 * alpha;
      const wS = 1 / Math.max(1, e.source.degree);
      const wT = 1 / Math.max(1, e.target.degree);
      e.source.vx += dx * f * wS; e.source.vy += dy * f * wS;
      e.target.vx -= dx * f * wT; e.target.vy -= dy * f * wT;
    }
    for (const n of this.nodes) {
      if (n.fixed) { n.vx = 0; n.vy = 0; continue; }
      n.vx -= n.x * 0.002 * alpha;
      n.vy -= n.y * 0.002 * alpha;
      n.vx *= 0.6; n.vy *= 0.6;
      const speed = Math.hypot(n.vx, n.vy);
      if (speed > 30) { n.vx *= 30 / speed; n.vy *= 30 / speed; }
      n.x += n.vx;
      n.y += n.vy;
    }
    this.alpha *= 0.985;
    this.steps += 1;
    if (this.autoFit && this.steps % 15 === 0) this.fit();
  }

  toScreen(x, y) {
    return [(x - this.view.x) * this.view.scale + this.width / 2, (y - this.view.y) * this.view.scale + this.height / 2];
  }

  toWorld(sx, sy) {
    return [(sx - this.width / 2) / this.view.scale + this.view.x, (sy - this.height / 2) / this.view.scale + this.view.y];
  }

  draw() {
    const { ctx, view } = this;
    this.frames += 1;
    ctx.clearRect(0, 0, this.width, this.height);
    ctx.save();
    ctx.translate(this.width / 2, this.height / 2);
    ctx.scale(view.scale, view.scale);
    ctx.translate(-view.x, -view.y);
    ctx.lineWidth = 1 / view.scale;
    ctx.strokeStyle = '#c3c9d0'; // opaque: no blending per pixel
    ctx.beginPath();
    for (const e of this.edges) {
      ctx.moveTo(e.source.x, e.source.y);
      ctx.lineTo(e.target.x, e.target.y);
    }
    ctx.stroke();
    // Vertices batched by colour: one fill per colour, not one per vertex.
    const batches = new Map();
    for (const n of this.nodes) {
      const color = this.colorOf(n);
      let list = batches.get(color);
      if (!list) batches.set(color, (list = []));
      list.push(n);
    }
    const radius = Math.max(3, 5 / Math.sqrt(view.scale));
    // Many small vertices are squares: a rectangle costs a fraction of an arc to rasterize.
    const squares = this.nodes.length > 2000 && radius * view.scale < 4;
    for (const [color, list] of batches) {
      ctx.fillStyle = color;
      ctx.beginPath();
      for (const n of list) {
        const r = (squares ? 1.5 / view.scale : radius) * (n === this.selected ? 1.8 : 1);
        if (squares) {
          ctx.rect(n.x - r, n.y - r, 2 * r, 2 * r);
        } else {
          ctx.moveTo(n.x + r, n.y);
          ctx.arc(n.x, n.y, r, 0, Math.PI * 2);
        }
      }
      ctx.fill();
    }
    ctx.restore();
    // Labels in screen space, only when they can be read and are few enough to draw.
    const onScreen = this.nodes.length * view.scale;
    if (this.nodes.length <= 300 || onScreen < 400 || view.scale > 2) {
      ctx.fillStyle = '#1d232b';
      ctx.font = '11px system-ui, sans-serif';
      let drawn = 0;
      for (const n of this.nodes) {
        const [sx, sy] = this.toScreen(n.x, n.y);
        if (sx < 0 || sy < 0 || sx > this.width || sy > this.height) continue;
        const label = this.valueOf(n, this.labelAttribute);
        ctx.fillText(label === undefined ? n.id : String(label), sx + radius * view.scale + 3, sy + 4);
        if (++drawn > 600) break;
      }
    }
  }

  /** The vertex under a screen point, if any. */
  hit(sx, sy) {
    const [x, y] = this.toWorld(sx, sy);
    const r = Math.max(8 / this.view.scale, 6);
    let best = null;
    let bestD = r * r;
    for (const n of this.nodes) {
      const d = (n.x - x) ** 2 + (n.y - y) ** 2;
      if (d < bestD) { best = n; bestD = d; }
    }
    return best;
  }

  /** Fits every vertex into the canvas. */
  fit() {
    if (!this.nodes.length) return;
    let minX = Infinity; let minY = Infinity; let maxX = -Infinity; let maxY = -Infinity;
    for (const n of this.nodes) {
      minX = Math.min(minX, n.x); maxX = Math.max(maxX, n.x);
      minY = Math.min(minY, n.y); maxY = Math.max(maxY, n.y);
    }
    this.view.x = (minX + maxX) / 2;
    this.view.y = (minY + maxY) / 2;
    this.view.scale = Math.min(4, 0.9 * Math.min(this.width / (maxX - minX + 40), this.height / (maxY - minY + 40)));
    this.dirty = true;
  }

  bindInput() {
    const c = this.canvas;
    let drag = null;
    c.addEventListener('wheel', (e) => {
      e.preventDefault();
      this.autoFit = false;
      const rect = c.getBoundingClientRect();
      const [wx, wy] = this.toWorld(e.clientX - rect.left, e.clientY - rect.top);
      const factor = Math.exp(-e.deltaY * 0.0015);
      this.view.scale = Math.min(20, Math.max(0.02, this.view.scale * factor));
      const [nx, ny] = this.toWorld(e.clientX - rect.left, e.clientY - rect.top);
      this.view.x += wx - nx;
      this.view.y += wy - ny;
      this.dirty = true;
    }, { passive: false });
    c.addEventListener('mousedown', (e) => {
      const rect = c.getBoundingClientRect();
      const node = this.hit(e.clientX - rect.left, e.clientY - rect.top);
      drag = { x: e.clientX, y: e.clientY, node, moved: false };
      if (node) node.fixed = true;
    });
    window.addEventListener('mousemove', this.onMove = (e) => {
      if (!drag) return;
      const dx = e.clientX - drag.x;
      const dy = e.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) { drag.moved = true; this.autoFit = false; }
      if (drag.node) {
        const rect = c.getBoundingClientRect();
        [drag.node.x, drag.node.y] = this.toWorld(e.clientX - rect.left, e.clientY - rect.top);
      } else {
        this.view.x -= dx / this.view.scale;
        this.view.y -= dy / this.view.scale;
        drag.x = e.clientX;
        drag.y = e.clientY;
      }
      this.dirty = true;
    });
    window.addEventListener('mouseup', this.onUp = () => {
      if (!drag) return;
      if (drag.node) {
        drag.node.fixed = false;
        if (!drag.moved) {
          this.selected = drag.node;
          this.onNodeClick(drag.node);
        }
      }
      drag = null;
      this.dirty = true;
    });
  }
}
