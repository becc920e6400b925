/* The UI's flame graph on a <canvas> (docs/ui.md): a tree from /api/v1/flamegraph
 * or /api/v1/diff (format=json) flattened into arrays in depth-first order, so a
 * node's subtree is one contiguous run and a frame too narrow to see skips its
 * whole subtree: 50,000 nodes draw in a few milliseconds. Flame (root at the
 * bottom) or icicle (root on top); hover tooltip; click or Enter zooms (the
 * ancestors stay full width, a breadcrumb leads back); a highlight (search regex
 * or one function) and its share; colours by frame kind, or for a diff red for
 * what grew and blue for what shrank (shares of each side's samples, so two
 * ranges of different sizes compare); what a pruned answer (max_nodes) left
 * out under each frame, drawn as a hatched box after its children. Keyboard:
 * arrows move a focus frame, Enter zooms, Escape zooms out. Loaded before
 * app.js, which drives it. */
'use strict';

(function () {
  const ROW = 18; /* px per frame row */
  const MIN_PX = 0.5; /* narrower frames (and their subtrees) are not drawn */
  const TEXT_PX = 24; /* frames at least this wide carry their name */
  const KIND_HUES = {
    python: [95, 150],
    native: [15, 45],
    kernel: [190, 215],
    jit: [265, 295],
    process: [0, 0],
    root: [0, 0],
  };

  function hash(s) {
    let h = 2166136261;
    for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
    return (h >>> 0) / 4294967296;
  }

  function kindColour(kind, name, dark) {
    const r = KIND_HUES[kind] || KIND_HUES.native;
    const v = hash(name);
    if (r[0] === r[1]) return dark ? 'hsl(0,0%,38%)' : 'hsl(0,0%,78%)';
    const hue = r[0] + (r[1] - r[0]) * v;
    return 'hsl(' + hue.toFixed(0) + ',' + (55 + 20 * v).toFixed(0) + '%,' + (dark ? 42 : 62) + '%)';
  }

  /* red (grew) or blue (shrank), stronger the larger the change against the
   * largest in the tree; near zero, grey */
  function diffColour(delta, maxAbs, dark) {
    const t = maxAbs > 0 ? Math.min(1, Math.abs(delta) / maxAbs) : 0;
    const base = dark ? 60 : 215;
    if (Math.abs(delta) < 1e-4) return 'rgb(' + base + ',' + base + ',' + base + ')';
    const hi = dark ? 225 : 235;
    const lo = Math.round(base - (base - (dark ? 30 : 60)) * t);
    const mid = Math.round(base + (hi - base) * t);
    return delta > 0 ? 'rgb(' + mid + ',' + lo + ',' + lo + ')' : 'rgb(' + lo + ',' + lo + ',' + mid + ')';
  }

  function fmtCount(n) {
    return Math.round(n).toLocaleString('en-US');
  }

  function fmtPct(p) {
    return (100 * p).toFixed(2) + '%';
  }

  function fmtSeconds(s) {
    if (s >= 100) return s.toFixed(0) + ' s';
    if (s >= 1) return s.toFixed(2) + ' s';
    return (s * 1000).toFixed(1) + ' ms';
  }

  /* A value in a profile type's unit (the meta's "unit"), as a person reads it:
   * time in ns, \u00b5s, ms or s, memory in B, KiB, MiB, GiB or TiB (powers of
   * 1024), about three significant digits, counts whole with separators; the
   * rule of common/ptype.c's ptype__format(), the C side's one formatter.
   * "200 MiB", "12.3 ms", "1,234 objects", "12,345 samples". */
  function fmtUnit(v, unit) {
    const sig3 = (x) => x.toFixed(x >= 99.95 ? 0 : x >= 9.995 ? 1 : 2);
    const count = (x) => (x < 1e6 && x !== Math.floor(x) ? sig3(x) : fmtCount(x));
    v = v > 0 ? v : 0;
    if (unit === 'nanoseconds') {
      const steps = [[1e9, 's'], [1e6, 'ms'], [1e3, '\u00b5s']];
      for (const [ns, name] of steps) if (v >= ns * 0.9995) return sig3(v / ns) + ' ' + name;
      return v.toFixed(0) + ' ns';
    }
    if (unit === 'bytes') {
      const names = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
      let i = 0;
      for (; i + 1 < names.length && v >= 1023.5; i++) v /= 1024;
      return (i ? sig3(v) : v.toFixed(0)) + ' ' + names[i];
    }
    if (unit === 'samples' || unit === 'objects') return count(v) + ' ' + unit;
    return count(v);
  }

  /* A native name as a person reads it: template arguments collapsed
   * (std::__introsort_loop<\u2026>), a Rust qualified path's brackets kept, operator
   * names left alone; the rule of query/shortname.c. The full name is in the
   * tooltip, the JSON and the exports. */
  function shortName(name, kind) {
    if (kind !== 'native' || name.indexOf('<') < 0) return name;
    const opAt = (i) => {
      let k = i;
      while (k > 0 && '<>=-!'.includes(name[k - 1])) k--;
      if (k > 0 && name[k - 1] === ' ' && name.slice(0, k - 1).endsWith('operator')) k--;
      return name.slice(0, k).endsWith('operator');
    };
    const opens = (i) => {
      const p = i ? name[i - 1] : '';
      if (/[A-Za-z0-9_]/.test(p)) return true;
      return p === ' ' && i >= 2 && '<>='.includes(name[i - 2]) && opAt(i - 1);
    };
    const closing = (i) => {
      let depth = 0;
      for (; i < name.length; i++) {
        if (name[i] === '<' && !opAt(i)) depth++;
        else if (name[i] === '>' && name[i - 1] !== '-' && !opAt(i) && --depth === 0) return i + 1;
      }
      return 0;
    };
    let out = '', start = 0, i = 0;
    while (i < name.length) {
      const end = name[i] === '<' && !opAt(i) && opens(i) ? closing(i) : 0;
      if (!end) {
        i++;
        continue;
      }
      out += name.slice(start, i) + '<\u2026>';
      i = start = end;
    }
    return out + name.slice(start);
  }

  function escapeHtml(s) {
    return String(s).replace(/[&<>"']/g, (c) => '&#' + c.charCodeAt(0) + ';');
  }

  class FlameGraph {
    /* canvas: the <canvas>; tip: a positioned element for the tooltip; crumbs: an
     * element for the breadcrumb; onZoom(path): called when the zoom changes. */
    constructor(canvas, tip, crumbs, onZoom) {
      this.canvas = canvas;
      this.tip = tip;
      this.crumbs = crumbs;
      this.onZoom = onZoom || (() => {});
      this.icicle = true;
      this.n = 0;
      this.zoom = 0;
      this.focus = -1;
      this.hover = -1;
      this.hl = null; /* Uint8Array: 1 = highlighted */
      this.drawn = []; /* [node, x, y, w] of the frames last drawn */
      this.dark = false;
      canvas.addEventListener('mousemove', (e) => this.onMove(e));
      canvas.addEventListener('mouseleave', () => this.hideTip());
      canvas.addEventListener('click', (e) => this.onClick(e));
      canvas.addEventListener('keydown', (e) => this.onKey(e));
      canvas.addEventListener('blur', () => this.hideTip());
      new ResizeObserver(() => this.draw()).observe(canvas.parentElement);
    }

    /* tree: the json answer; diff: whether it is /api/v1/diff's. */
    setData(tree, diff) {
      const meta = tree.meta || {};
      this.diff = diff;
      this.period = meta.period_ns || 0;
      this.offcpu = meta.type === 'offcpu'; /* values are nanoseconds blocked */
      this.unit = meta.unit || 'samples'; /* what a value counts (common/ptype.h) */
      this.sides = diff ? [meta.before.total || 0, meta.after.total || 0] : null;
      /* a first walk counts the nodes, so that the columns are typed arrays of
       * their final size (a day's tree is 650,000 nodes) */
      let n = 0;
      const count = (node) => {
        n++;
        const kids = node.children;
        if (kids) for (let k = 0; k < kids.length; k++) count(kids[k]);
      };
      count(tree);
      const name = new Array(n), kind = new Array(n), lines = new Array(n);
      const self = new Float64Array(n), total = new Float64Array(n), x = new Float64Array(n),
        w = new Float64Array(n), delta = new Float64Array(n);
      const depth = new Int32Array(n), parent = new Int32Array(n), size = new Int32Array(n),
        repeat = new Int32Array(n), fid = new Int32Array(n);
      const before = diff ? new Array(n) : null, after = diff ? new Array(n) : null;
      /* each node's function (kind and name) as a small integer, for the tables */
      const fnames = [], fkinds = [], byKind = new Map();
      let maxDepth = 0, maxAbs = 0, next = 0;
      const B = diff ? this.sides[0] || 1 : 1, A = diff ? this.sides[1] || 1 : 1;
      /* depth-first, recursively: the query layer caps a stack at 2,048 frames
       * (FLAME_MAX_DEPTH), well within the JS stack */
      const visit = (node, par, d, x0) => {
        const i = next++;
        name[i] = node.name;
        kind[i] = node.kind;
        self[i] = node.self;
        total[i] = node.total;
        depth[i] = d;
        parent[i] = par;
        if (node.lines) lines[i] = node.lines;
        repeat[i] = node.repeat || 0;
        x[i] = x0;
        let names = byKind.get(node.kind);
        if (!names) byKind.set(node.kind, (names = new Map()));
        let f = names.get(node.name);
        if (f === undefined) {
          names.set(node.name, (f = fnames.length));
          fnames.push(node.name);
          fkinds.push(node.kind);
        }
        fid[i] = f;
        if (diff) {
          before[i] = node.before;
          after[i] = node.after;
          w[i] = node.before.total / B + node.after.total / A;
          delta[i] = node.delta || 0;
          if (d > 0) maxAbs = Math.max(maxAbs, Math.abs(delta[i]));
        } else {
          w[i] = node.total;
        }
        if (d > maxDepth) maxDepth = d;
        const kids = node.children;
        if (kids) {
          let cx = x0;
          for (let k = 0; k < kids.length; k++) {
            const c = next;
            visit(kids[k], i, d + 1, cx);
            cx += w[c];
          }
        }
        size[i] = next - i;
      };
      visit(tree, -1, 0, 0);
      /* a pruned answer (max_nodes): what each node's children left out, as the
       * node's width minus its self and its children's (in the diff, each side
       * has its own self), and below each node the sum of that over its subtree */
      const cut = new Float64Array(n), cutBelow = new Float64Array(n);
      if (tree.pruned) {
        for (let i = 0; i < n; i++) {
          const own = diff ? before[i].self / B + after[i].self / A : self[i];
          cut[i] = Math.max(0, w[i] - own);
        }
        for (let i = 1; i < n; i++) cut[parent[i]] -= w[i];
        for (let i = 0; i < n; i++) {
          if (cut[i] < 1e-9 * (w[0] || 1)) cut[i] = 0; /* rounding of the diff's shares */
          cutBelow[i] = cut[i];
        }
        for (let i = n - 1; i > 0; i--) cutBelow[parent[i]] += cutBelow[i];
      }
      /* each subtree's height (a row more for a hatched box of what was left
       * out), so a zoom sizes the canvas without walking it */
      const height = new Int32Array(n);
      for (let i = 0; i < n; i++) if (cut[i] > 0) height[i] = 1;
      for (let i = n - 1; i > 0; i--)
        if (height[i] + 1 > height[parent[i]]) height[parent[i]] = height[i] + 1;
      Object.assign(this, { name, kind, self, total, depth, parent, size, x, w, lines, repeat,
        delta, before, after, maxDepth, maxAbs, height, fid, fnames, fkinds, cut, cutBelow });
      this.pruned = tree.pruned || null;
      this.n = name.length;
      this.zoom = 0;
      this.focus = -1;
      this.hl = null;
      this.rootTotal = this.n ? total[0] : 0;
      this.colours = new Array(this.n); /* made on first draw, per theme */
      this.coloursDark = null;
    }

    /* node i's fill (kind and name, or the diff's change), computed once */
    colour(i) {
      if (this.coloursDark !== this.dark) {
        this.colours = new Array(this.n);
        this.coloursDark = this.dark;
      }
      let c = this.colours[i];
      if (c === undefined)
        c = this.colours[i] = this.diff ? diffColour(this.delta[i], this.maxAbs, this.dark)
          : kindColour(this.kind[i], this.name[i], this.dark);
      return c;
    }

    /* the path of names from the root's child to the zoomed node */
    zoomPath() {
      const p = [];
      for (let i = this.zoom; i > 0; i = this.parent[i]) p.unshift(this.name[i]);
      return p;
    }

    /* zooms to the node a name path leads to (as far as it leads) */
    zoomTo(path, quiet) {
      let i = 0;
      for (const nm of path || []) {
        let found = -1;
        for (let c = i + 1; c < i + this.size[i]; c += this.size[c])
          if (this.name[c] === nm) {
            found = c;
            break;
          }
        if (found < 0) break;
        i = found;
      }
      this.setZoom(i, quiet);
    }

    setZoom(i, quiet) {
      if (!this.n) return;
      this.zoom = i;
      this.focus = i;
      this.draw();
      this.renderCrumbs();
      if (!quiet) this.onZoom(this.zoomPath());
    }

    renderCrumbs() {
      const el = this.crumbs;
      el.textContent = '';
      if (!this.n) return;
      const chain = [];
      for (let i = this.zoom; i >= 0; i = this.parent[i]) chain.unshift(i);
      chain.forEach((i, k) => {
        const b = document.createElement('button');
        b.type = 'button';
        b.textContent = this.label(i);
        b.title = this.name[i];
        if (k === chain.length - 1) b.setAttribute('aria-current', 'true');
        b.addEventListener('click', () => this.setZoom(i));
        el.appendChild(b);
      });
    }

    /* a frame's name as drawn (short: shortName()); full, for the tooltip */
    label(i, full) {
      const name = full ? this.name[i] : shortName(this.name[i], this.kind[i]);
      return this.repeat[i] > 1 ? name + ' \u00d7' + this.repeat[i] : name;
    }

    /* marks the nodes pred(name, kind) accepts; returns {samples, share} of the
     * root's total, each sample counted once (a match under a match is not added) */
    highlight(pred) {
      if (!pred || !this.n) {
        this.hl = null;
        this.draw();
        return null;
      }
      const hl = new Uint8Array(this.n);
      let samples = 0, nodes = 0;
      const val = (i) => (this.diff ? this.after[i].total : this.total[i]);
      for (let i = 0; i < this.n; i++) {
        if (i > 0 && pred(this.name[i], this.kind[i])) {
          hl[i] = 1;
          nodes++;
          let under = false;
          for (let p = this.parent[i]; p > 0; p = this.parent[p])
            if (hl[p]) {
              under = true;
              break;
            }
          if (!under) samples += val(i);
        }
      }
      this.hl = hl;
      this.draw();
      const whole = this.diff ? this.sides[1] : this.rootTotal;
      return { samples, nodes, share: whole ? samples / whole : 0 };
    }

    draw() {
      const t0 = performance.now();
      this.paint();
      this.drawMs = performance.now() - t0;
    }

    paint() {
      const c = this.canvas, ctx = c.getContext('2d');
      const cssW = c.parentElement.clientWidth;
      this.dark = matchMedia('(prefers-color-scheme: dark)').matches;
      this.drawn = [];
      if (!this.n || !cssW) {
        c.width = 0;
        c.height = 0;
        return;
      }
      const z = this.zoom, zd = this.depth[z];
      const rows = zd + this.height[z] + 1; /* the ancestors, the zoomed subtree */
      const dpr = window.devicePixelRatio || 1, cssH = rows * ROW;
      c.style.height = cssH + 'px';
      c.width = Math.round(cssW * dpr);
      c.height = Math.round(cssH * dpr);
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.clearRect(0, 0, cssW, cssH);
      ctx.font = '11px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace';
      ctx.textBaseline = 'middle';
      const charW = ctx.measureText('abcdefghijklmnopqrstuvwxyz').width / 26;
      const scale = cssW / (this.w[z] || 1), x0 = this.x[z];
      const y = (d) => (this.icicle ? d * ROW : cssH - (d + 1) * ROW);
      this.charW = charW;
      this.drawnAt = new Map(); /* node -> its entry in drawn, for a hover's repaint */
      const box = (i, px, pw) => {
        this.drawnAt.set(i, this.drawn.length);
        this.drawn.push([i, px, y(this.depth[i]), pw, null]);
        this.paintBox(ctx, this.drawn.length - 1, true);
      };
      for (let a = this.parent[z]; a >= 0; a = this.parent[a]) box(a, 0, cssW);
      const end = z + this.size[z];
      this.cutDrawn = [];
      for (let i = z; i < end;) {
        const pw = this.w[i] * scale;
        if (pw < MIN_PX) {
          i += this.size[i];
          continue;
        }
        box(i, (this.x[i] - x0) * scale, pw);
        const cw = this.cut[i] * scale;
        if (cw >= MIN_PX) this.cutDrawn.push([i, (this.x[i] - x0) * scale, cw]);
        i++;
      }
      /* what a pruned answer left out: a hatched box after each node's children */
      for (const [i, px, cw] of this.cutDrawn) {
        let kids = 0;
        for (let c = i + 1; c < i + this.size[i]; c += this.size[c]) kids += this.w[c];
        this.paintCut(ctx, px + kids * scale, y(this.depth[i] + 1), cw);
      }
    }

    paintCut(ctx, px, py, pw) {
      ctx.save();
      ctx.beginPath();
      ctx.rect(px, py, Math.max(pw - 0.5, 0.5), ROW - 1);
      ctx.clip();
      ctx.fillStyle = this.dark ? 'hsl(0,0%,24%)' : 'hsl(0,0%,88%)';
      ctx.fillRect(px, py, pw, ROW);
      ctx.strokeStyle = this.dark ? 'hsl(0,0%,40%)' : 'hsl(0,0%,70%)';
      ctx.lineWidth = 1;
      for (let s = px - ROW; s < px + pw; s += 6) {
        ctx.beginPath();
        ctx.moveTo(s, py + ROW);
        ctx.lineTo(s + ROW, py);
        ctx.stroke();
      }
      ctx.restore();
    }

    /* what a pruned answer left out under the zoomed node: {share, samples} of
     * the node's width (samples: null in a diff), or null when nothing is */
    prunedBelow() {
      if (!this.n || !this.pruned || !this.cutBelow[this.zoom]) return null;
      const z = this.zoom, share = this.w[z] ? this.cutBelow[z] / this.w[z] : 0;
      return { share, samples: this.diff ? null : this.cutBelow[z], name: this.name[z] };
    }

    /* paints entry k of drawn: fill, outline (hover, focus), name; over what was
     * there unless fresh (a full paint cleared the canvas already) */
    paintBox(ctx, k, fresh) {
      const r = this.drawn[k], [i, px, py, pw] = r;
      let fill = this.colour(i);
      if (this.hl && this.hl[i]) fill = this.dark ? '#d05ce3' : '#e040fb';
      r[4] = fill;
      if (!fresh) ctx.clearRect(px, py, pw, ROW);
      ctx.fillStyle = fill;
      ctx.fillRect(px, py, Math.max(pw - 0.5, 0.5), ROW - 1);
      if (i === this.focus || i === this.hover) {
        ctx.strokeStyle = this.dark ? '#fff' : '#000';
        ctx.lineWidth = 1.5;
        ctx.strokeRect(px + 0.75, py + 0.75, Math.max(pw - 2, 1), ROW - 2.5);
      }
      if (pw >= TEXT_PX) {
        const max = Math.floor((pw - 6) / this.charW);
        let t = this.label(i);
        if (t.length > max) t = max > 2 ? t.slice(0, max - 1) + '\u2026' : '';
        if (t) {
          ctx.fillStyle = this.dark ? '#f2f2f2' : '#111';
          ctx.fillText(t, px + 3, py + ROW / 2);
        }
      }
    }

    /* a hover moved from node a to node b: only their two frames are painted again */
    repaint(a, b) {
      const ctx = this.canvas.getContext('2d');
      for (const i of [a, b]) {
        const k = i >= 0 && this.drawnAt ? this.drawnAt.get(i) : undefined;
        if (k !== undefined) this.paintBox(ctx, k);
      }
    }

    nodeAt(e) {
      const r = this.canvas.getBoundingClientRect();
      const mx = e.clientX - r.left, my = e.clientY - r.top;
      for (const [i, px, py, pw] of this.drawn)
        if (mx >= px && mx < px + pw && my >= py && my < py + ROW) return i;
      return -1;
    }

    onMove(e) {
      const i = this.nodeAt(e);
      if (i !== this.hover) {
        const was = this.hover;
        this.hover = i;
        this.repaint(was, i);
      }
      if (i < 0) return this.hideTip();
      this.showTip(i, e.clientX, e.clientY);
    }

    onClick(e) {
      const i = this.nodeAt(e);
      if (i >= 0) this.setZoom(i === this.zoom ? Math.max(this.parent[i], 0) : i);
    }

    /* the focus frame's neighbours: up and down the stack, left and right on its row */
    onKey(e) {
      if (!this.n) return;
      let f = this.focus >= 0 ? this.focus : this.zoom;
      const row = (d) => this.drawn.filter((r) => this.depth[r[0]] === d).map((r) => r[0]);
      const towardLeaves = this.icicle ? 'ArrowDown' : 'ArrowUp';
      const towardRoot = this.icicle ? 'ArrowUp' : 'ArrowDown';
      if (e.key === towardLeaves) {
        const kids = row(this.depth[f] + 1).filter((c) => this.parent[c] === f);
        if (kids.length) f = kids[0];
      } else if (e.key === towardRoot) {
        if (this.parent[f] >= 0) f = this.parent[f];
      } else if (e.key === 'ArrowLeft' || e.key === 'ArrowRight') {
        const r = row(this.depth[f]), k = r.indexOf(f) + (e.key === 'ArrowLeft' ? -1 : 1);
        if (k >= 0 && k < r.length) f = r[k];
      } else if (e.key === 'Enter' || e.key === ' ') {
        this.setZoom(f);
      } else if (e.key === 'Escape') {
        this.setZoom(Math.max(this.parent[this.zoom], 0));
        this.hideTip();
      } else {
        return;
      }
      e.preventDefault();
      this.focus = f;
      this.draw();
      const d = this.drawn.find((r) => r[0] === f);
      if (d) {
        const cr = this.canvas.getBoundingClientRect();
        this.showTip(f, cr.left + d[1] + Math.min(d[3], 200) / 2, cr.top + d[2] + ROW);
      }
    }

    cpu(samples) {
      return this.period ? ' \u00b7 ' + fmtSeconds((samples * this.period) / 1e9) +
        (this.offcpu ? ' off CPU' : ' CPU') : '';
    }

    /* "12,345 samples \u00b7 1.2 s CPU", for off-CPU answers "1.2 s off CPU" (values
     * in ns), for other types the value in their unit ("200 MiB") */
    amount(v) {
      if (this.offcpu) return fmtSeconds(v / 1e9) + ' off CPU';
      if (this.unit !== 'samples') return fmtUnit(v, this.unit);
      return fmtCount(v) + ' samples' + this.cpu(v);
    }

    tipHtml(i) {
      const rows = [];
      rows.push('<b>' + escapeHtml(this.label(i, true)) + '</b> <span class="kind">' + escapeHtml(this.kind[i]) + '</span>');
      if (this.diff) {
        const b = this.before[i], a = this.after[i], B = this.sides[0], A = this.sides[1];
        const sb = B ? b.total / B : 0, sa = A ? a.total / A : 0;
        const u = (v) => fmtUnit(v, this.unit);
        rows.push('Before: ' + u(b.total) + ' (' + fmtPct(sb) + '), self ' + u(b.self));
        rows.push('After: ' + u(a.total) + ' (' + fmtPct(sa) + '), self ' + u(a.self));
        rows.push('Change: ' + ((sa - sb) * 100 >= 0 ? '+' : '') + ((sa - sb) * 100).toFixed(2) + ' pp');
      } else {
        const T = this.rootTotal || 1, Z = this.total[this.zoom] || 1;
        rows.push('Total: ' + this.amount(this.total[i]) + ' \u00b7 ' +
          fmtPct(this.total[i] / T) + (this.zoom ? ' (' + fmtPct(this.total[i] / Z) + ' of zoom)' : ''));
        rows.push('Self: ' + this.amount(this.self[i]) + ' \u00b7 ' +
          fmtPct(this.self[i] / T));
      }
      const lines = this.lines[i];
      if (lines && lines.length) {
        const tot = this.diff ? this.after[i].total + this.before[i].total : this.total[i];
        const sorted = lines.slice().sort((p, q) => q.total - p.total).slice(0, 5);
        rows.push('<span class="lines">' + sorted.map((l) => 'line ' + l.line + ': ' + fmtUnit(l.total, this.unit) +
          ', ' + fmtPct(tot ? l.total / tot : 0)).join('<br>') + '</span>');
      }
      rows.push('<span class="hint">click to zoom</span>');
      return rows.join('<br>');
    }

    showTip(i, cx, cy) {
      const t = this.tip;
      t.innerHTML = this.tipHtml(i);
      t.hidden = false;
      const r = t.getBoundingClientRect();
      let left = cx + 14, top = cy + 14;
      if (left + r.width > innerWidth - 4) left = Math.max(4, cx - r.width - 14);
      if (top + r.height > innerHeight - 4) top = Math.max(4, cy - r.height - 14);
      t.style.left = left + 'px';
      t.style.top = top + 'px';
    }

    hideTip() {
      this.tip.hidden = true;
      if (this.hover >= 0) {
        const was = this.hover;
        this.hover = -1;
        this.repaint(was, -1);
      }
    }

    /* the functions of the tree, as /api/v1/top counts them: self summed, total
     * counted once per stack (a recursive function's inner calls are inside its
     * outer one), the root and the process frames left out; one walk in
     * depth-first order with the names on the current path */
    functions() {
      const nf = this.fnames.length, T = this.rootTotal || 1;
      const fself = new Float64Array(nf), ftotal = new Float64Array(nf);
      const on = new Int32Array(nf), seen = new Uint8Array(nf);
      const path = new Int32Array(this.maxDepth + 1);
      let top = 0;
      for (let i = 1; i < this.n; i++) {
        const d = this.depth[i], f = this.fid[i];
        while (top && this.depth[path[top - 1]] >= d) on[this.fid[path[--top]]]--;
        path[top++] = i;
        if (this.kind[i] !== 'process') {
          seen[f] = 1;
          fself[f] += this.self[i];
          if (!on[f]) ftotal[f] += this.total[i];
        }
        on[f]++;
      }
      const out = [];
      for (let f = 0; f < nf; f++)
        if (seen[f])
          out.push({ name: this.fnames[f], kind: this.fkinds[f], self: fself[f], total: ftotal[f],
            self_pct: (100 * fself[f]) / T, total_pct: (100 * ftotal[f]) / T });
      return out;
    }

    /* The sandwich of function fn: {callers, callees}, two trees rooted at fn. Each
     * outermost call of fn (not inside another call of it) adds its total to both
     * roots, its subtree to the callees and its stack, read upwards, to the
     * callers. Null when no frame is fn. */
    sandwich(fn) {
      const node = (name, kind) => ({ name, kind, self: 0, total: 0, children: [], by: new Map() });
      const child = (t, i) => {
        const k = this.kind[i] + '\0' + this.name[i];
        let c = t.by.get(k);
        if (!c) {
          t.by.set(k, (c = node(this.name[i], this.kind[i])));
          t.children.push(c);
        }
        return c;
      };
      let callers = null, callees = null;
      const merge = (t, i) => {
        for (let c = i + 1; c < i + this.size[i]; c += this.size[c]) {
          const m = child(t, c);
          m.total += this.total[c];
          m.self += this.self[c];
          merge(m, c);
        }
      };
      for (let i = 1; i < this.n; i++) {
        if (this.name[i] !== fn) continue;
        let outer = true;
        for (let p = this.parent[i]; p > 0 && outer; p = this.parent[p]) outer = this.name[p] !== fn;
        if (!outer) continue;
        if (!callers) {
          callers = node(fn, this.kind[i]);
          callees = node(fn, this.kind[i]);
        }
        for (const r of [callers, callees]) r.total += this.total[i];
        callees.self += this.self[i];
        merge(callees, i);
        let t = callers;
        for (let p = this.parent[i]; p > 0; p = this.parent[p]) {
          t = child(t, p);
          t.total += this.total[i];
        }
      }
      if (!callers) return null;
      /* a caller's own share: what none of its callers above it account for */
      const finish = (t) => {
        let sum = 0;
        t.children.sort((a, b) => b.total - a.total);
        for (const c of t.children) {
          finish(c);
          sum += c.total;
        }
        if (t.self === 0) t.self = Math.max(0, t.total - sum);
        delete t.by;
      };
      finish(callers);
      finish(callees);
      const meta = { period_ns: this.period, type: this.offcpu ? 'offcpu' : undefined, unit: this.unit };
      callers.meta = meta;
      callees.meta = meta;
      return { callers, callees };
    }

    /* the frames last drawn, for the permalink check and the tests */
    frames() {
      return this.drawn.map(([i, x, y, w, fill]) => ({
        name: this.name[i], kind: this.kind[i], depth: this.depth[i], x, y, w, fill,
        total: this.diff ? this.after[i].total : this.total[i],
        delta: this.diff ? this.delta[i] : undefined,
        highlighted: !!(this.hl && this.hl[i]), zoomed: i === this.zoom,
      }));
    }
  }

  window.SmolderFlame = { FlameGraph, fmtCount, fmtPct, fmtSeconds, fmtUnit, escapeHtml, shortName };
})();
