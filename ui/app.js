/* The UI's page logic (docs/ui.md): the state in the URL's fragment (a link
 * reproduces the view), the calls to the query API the CLI uses (series, labels,
 * flamegraph, top, diff; the query token asked once and kept in sessionStorage;
 * the flame graph's query first, its graph painted before anything else waits),
 * the timeline (uPlot: drag to select, quick and absolute ranges, the selected
 * ranges drawn on it), label filters, the top table (counted from the flame
 * graph's tree as /api/v1/top counts: one query less; from /api/v1/top, after the
 * paint, when the graph was pruned), what a pruned graph left out and "More
 * detail", compare mode (two ranges, two label selections, or both) with its
 * movers table, exports, and the loading, empty and error states. The flame graph itself
 * is flame.js's, and so are the sandwich's two (the callers and callees of the
 * function picked in the table). */
'use strict';

(function () {
  /* flame.js's, once it ran (main): this file runs first (see the end) */
  let FlameGraph, fmtCount, fmtPct, fmtUnit, shortName;
  /* the unit of the values shown (the last answer's meta "unit": samples,
   * nanoseconds, bytes, objects, count) */
  let unit = 'samples';
  const QUICK = { '15m': 900, '1h': 3600, '6h': 21600, '24h': 86400, '7d': 604800 };
  /* series steps, seconds: the smallest giving at most MAX_POINTS points */
  const STEPS = [10, 20, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 86400];
  const MAX_POINTS = 400;
  const MOVERS = 25; /* rows of the movers table */
  /* The graph asks for the MAX_NODES heaviest frames only (the API's max_nodes): a
   * day of a busy host is 650 k frames, 85 MB of JSON, of which only 344 are half a
   * pixel wide or more on a 1440 px canvas (narrower ones are not drawn); the
   * 2,000 heaviest hold every frame down to 0.39 px there, are 1.2 MB of JSON and
   * parse and draw many times faster than 20,000 (bench/ui_bench.sh). What an answer
   * left out is drawn hatched; a zoom into it asks for more (autoDetail), and
   * "More detail" asks again for DETAIL_STEP times more
   * frames (20,000 frames of that day are 10.5 MB of JSON; past the collector's
   * answer cap, 64 MiB by default, its refusal is shown), up to the API's own
   * bound, MAX_DETAIL. Exports get all frames. */
  const MAX_NODES = 2000;
  const DETAIL_STEP = 10;
  const MAX_DETAIL = 10000000; /* the API's own upper bound of max_nodes */
  const TOKEN_KEY = 'smolder.token';
  /* How often the page asks /healthz (no token, no store read): a collector
   * watching its agents (smolder up does) says when one has sent nothing for 6
   * windows, 60 s at the defaults; a check every 5 s shows it within a twelfth
   * of that. */
  const HEALTH_MS = 5000;
  /* Rows of the top table added at a time: every function is in the table (a
   * dispatcher whose time is all in its callees has 0 self and sorts last by
   * self), the next TOP_CHUNK rows added as the last ones scroll into view. */
  const TOP_CHUNK = 200;
  const $ = (id) => document.getElementById(id);

  /* ---- state <-> URL fragment --------------------------------------------- */
  /* range: a QUICK key (relative to now) or absent with from/to (unix seconds);
   * sel/base: [from, to] or null; where: ["key=value"], both sides of a diff;
   * bwhere/awhere: a diff's baseline's and comparison's own filters; mode: "flame"
   * or "diff"; nodes: the graph's max_nodes. */
  const state = {
    range: '1h', from: 0, to: 0, sel: null, base: null, where: [], bwhere: [], awhere: [],
    type: 'cpu', mode: 'flame', icicle: true, q: '', zoom: [], fn: '', sort: 'self',
    target: 'base', sandwich: false, nodes: MAX_NODES, mix: false,
  };

  function pair(s) {
    const m = /^(\d+),(\d+)$/.exec(s || '');
    return m && +m[2] > +m[1] ? [+m[1], +m[2]] : null;
  }

  let rangeDefaulted = false; /* the page was opened without a range */
  function readHash() {
    const p = new URLSearchParams(location.hash.slice(1));
    state.range = QUICK[p.get('range')] ? p.get('range') : '';
    state.from = +p.get('from') || 0;
    state.to = +p.get('to') || 0;
    rangeDefaulted = !state.range && !(state.to > state.from);
    if (rangeDefaulted) state.range = '1h';
    state.sel = pair(p.get('sel'));
    state.base = pair(p.get('base'));
    const kv = (k) => p.getAll(k).filter((w) => /^[^=]+=/.test(w));
    state.where = kv('where');
    state.bwhere = kv('bwhere');
    state.awhere = kv('awhere');
    const nodes = Math.floor(+p.get('nodes'));
    state.nodes = nodes >= 16 && nodes <= MAX_DETAIL ? nodes : MAX_NODES;
    state.type = p.get('type') || 'cpu';
    state.mode = p.get('mode') === 'diff' ? 'diff' : 'flame';
    state.icicle = p.get('view') !== 'flame';
    state.q = p.get('q') || '';
    state.zoom = p.get('zoom') ? p.get('zoom').split('\u001f') : [];
    state.fn = p.get('fn') || '';
    state.sort = p.get('sort') || 'self';
    state.sandwich = p.get('sandwich') === '1';
    state.mix = p.get('mix') === '1';
  }

  function hashOf(s, absolute) {
    const p = new URLSearchParams();
    if (s.range && !absolute) {
      p.set('range', s.range);
    } else {
      const r = timeRange(s);
      p.set('from', r[0]);
      p.set('to', r[1]);
    }
    if (s.sel) p.set('sel', s.sel.join(','));
    if (s.base) p.set('base', s.base.join(','));
    for (const w of s.where) p.append('where', w);
    for (const w of s.bwhere) p.append('bwhere', w);
    for (const w of s.awhere) p.append('awhere', w);
    if (s.nodes !== MAX_NODES) p.set('nodes', s.nodes);
    if (s.type !== 'cpu') p.set('type', s.type);
    if (s.mode === 'diff') p.set('mode', 'diff');
    if (!s.icicle) p.set('view', 'flame');
    if (s.q) p.set('q', s.q);
    if (s.zoom.length) p.set('zoom', s.zoom.join('\u001f'));
    if (s.fn) p.set('fn', s.fn);
    if (s.sort !== 'self') p.set('sort', s.sort);
    if (s.sandwich && s.fn) p.set('sandwich', '1');
    if (s.mix) p.set('mix', '1');
    return '#' + p.toString();
  }

  function writeHash() {
    history.replaceState(null, '', hashOf(state, false));
  }

  /* ---- time ----------------------------------------------------------------- */
  function stepFor(seconds) {
    for (const s of STEPS) if (seconds / s <= MAX_POINTS) return s;
    return STEPS[STEPS.length - 1];
  }

  /* [from, to] of the timeline: a quick range ends at now rounded up to its step */
  function timeRange(s) {
    if (s.range) {
      const d = QUICK[s.range], st = stepFor(d);
      const to = Math.ceil(Date.now() / 1000 / st) * st;
      return [to - d, to];
    }
    return [s.from, s.to];
  }

  function pad(n) {
    return String(n).padStart(2, '0');
  }

  function localInput(t) {
    const d = new Date(t * 1000);
    return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + 'T' +
      pad(d.getHours()) + ':' + pad(d.getMinutes());
  }

  function fmtTime(t) {
    const d = new Date(t * 1000);
    return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + ' ' +
      pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
  }

  /* the end's date too when it is another day's */
  function fmtRange(r) {
    const a = fmtTime(r[0]), b = fmtTime(r[1]);
    return a + ' \u2013 ' + (a.slice(0, 10) === b.slice(0, 10) ? b.slice(11) : b);
  }

  /* A value of the answer's profile type with its unit: "12,345 samples" for
   * cpu, "12.3 ms", "200 MiB", "1,234 objects" (fmtUnit, flame.js). */
  function fmtValue(v, u) {
    return fmtUnit(v, u || 'samples');
  }

  /* The timeline's y axis: short labels that fit its 56 px (12k, 3.4M; other
   * units humanised: 12 ms, 200 MiB). */
  function fmtAxis(v, u) {
    if (u && u !== 'samples' && u !== 'objects' && u !== 'count') return v ? fmtUnit(v, u) : '0';
    const a = Math.abs(v);
    if (a >= 1e9) return (v / 1e9).toFixed(1) + 'G';
    if (a >= 1e6) return (v / 1e6).toFixed(1) + 'M';
    if (a >= 1e4) return (v / 1e3).toFixed(0) + 'k';
    return String(Math.round(v * 100) / 100);
  }

  /* A table cell of the answer's unit: a bare count for samples, else the value
   * humanised ("200 MiB", "12.3 ms"). */
  function fmtCell(v) {
    return unit === 'samples' ? fmtCount(v) : fmtUnit(v, unit);
  }

  /* The top table's Self and Total headers: the unit when it is not samples. */
  function renderTopHeads() {
    const word = { nanoseconds: 'time', bytes: 'bytes', objects: 'objects', count: 'count' }[unit];
    for (const th of $('top').tHead.rows[0].cells) {
      const base = { self: 'Self', total: 'Total' }[th.dataset.key];
      if (base) th.querySelector('button').textContent = word ? base + ' (' + word + ')' : base;
    }
  }

  /* A function name as a pattern the series API matches against names
   * (POSIX extended): the name itself, anchored; a long name by its first 100
   * characters (the API takes patterns up to 256 bytes). */
  function fnPattern(name) {
    const esc = (t) => t.replace(/[\\^$.|?*+()[\]{}]/g, '\\$&');
    return name.length > 100 ? '^' + esc(name.slice(0, 100)) : '^' + esc(name) + '$';
  }

  /* ---- API ------------------------------------------------------------------ */
  let tokenWait = null;

  function askToken(wrong) {
    if (tokenWait) return tokenWait;
    const dlg = $('token-dialog');
    $('token-wrong').hidden = !wrong;
    $('token').value = '';
    tokenWait = new Promise((resolve) => {
      const done = (e) => {
        e.preventDefault();
        const t = $('token').value.trim();
        if (!t) return;
        sessionStorage.setItem(TOKEN_KEY, t);
        $('token-form').removeEventListener('submit', done);
        dlg.close();
        tokenWait = null;
        resolve(t);
      };
      $('token-form').addEventListener('submit', done);
    });
    /* Escape would close it with the API calls still waiting for a token */
    dlg.oncancel = (e) => e.preventDefault();
    dlg.showModal();
    $('token').focus();
    return tokenWait;
  }

  function query(path, params) {
    const p = new URLSearchParams();
    for (const [k, v] of params) if (v !== undefined && v !== null && v !== '') p.append(k, v);
    return path + '?' + p.toString();
  }

  /* GETs url with the token (asked for on a 401) and returns the Response; an
   * error answer throws its {"error"} reason */
  async function get(url) {
    let wrong = false;
    for (;;) {
      const token = sessionStorage.getItem(TOKEN_KEY);
      const resp = await fetch(url, { headers: token ? { Authorization: 'Bearer ' + token } : {} });
      if (resp.status === 401) {
        await askToken(wrong || !!token);
        wrong = true;
        continue;
      }
      if (!resp.ok) {
        let why = resp.status + ' ' + resp.statusText;
        try {
          why = (await resp.json()).error || why;
        } catch (e) {
          /* not JSON: the status it is */
        }
        throw new Error(why);
      }
      return resp;
    }
  }

  async function getJson(url) {
    return (await get(url)).json();
  }

  function whereParams(s) {
    return s.where.map((w) => ['where', w]);
  }

  /* ---- status --------------------------------------------------------------- */
  let loading = 0;

  function busy(delta) {
    loading += delta;
    document.body.setAttribute('aria-busy', loading > 0 ? 'true' : 'false');
    $('loading').hidden = loading <= 0;
  }

  function showError(where, err) {
    const el = $('error');
    el.hidden = false;
    el.textContent = where + ': ' + err.message;
  }

  function clearError() {
    $('error').hidden = true;
    $('error').textContent = '';
  }

  /* ---- timeline ------------------------------------------------------------- */
  let plot = null, series = null;

  function css(name) {
    return getComputedStyle(document.body).getPropertyValue(name).trim();
  }

  function drawBands(u) {
    const ctx = u.ctx, { top, height } = u.bbox;
    const band = (r, colour) => {
      if (!r) return;
      const a = u.valToPos(r[0], 'x', true), b = u.valToPos(r[1], 'x', true);
      ctx.fillStyle = colour;
      ctx.fillRect(a, top, Math.max(b - a, 2), height);
    };
    ctx.save();
    if (state.mode === 'diff') {
      band(state.base, css('--base-band'));
      band(state.sel, css('--after-band'));
    } else {
      band(state.sel, css('--sel-band'));
    }
    ctx.restore();
  }

  function onSelect(u) {
    if (u.select.width < 2) return;
    const step = series ? series.step : 10;
    const a = u.posToVal(u.select.left, 'x'), b = u.posToVal(u.select.left + u.select.width, 'x');
    const r = [Math.floor(a / step) * step, Math.ceil(b / step) * step];
    u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
    if (r[1] <= r[0]) return;
    if (state.mode === 'diff' && state.target === 'base') {
      state.base = r;
      setTarget('after');
    } else {
      state.sel = r;
      if (state.mode === 'diff') setTarget(state.base ? 'after' : 'base');
    }
    state.zoom = [];
    state.nodes = MAX_NODES;
    writeHash();
    u.redraw(false, true);
    refreshProfile();
  }

  function makePlot(width) {
    const opts = {
      width, height: 150,
      legend: { show: false },
      scales: { x: { time: true } },
      cursor: { drag: { x: true, y: false, setScale: false }, points: { show: false } },
      select: { show: true },
      series: [{}, {
        label: 'all', stroke: css('--accent'), fill: css('--accent-fill'), width: 1.5,
        paths: uPlot.paths.stepped({ align: 1 }),
      }, {
        label: 'function', stroke: css('--fn-line'), width: 2,
        paths: uPlot.paths.stepped({ align: 1 }),
      }],
      axes: [
        { stroke: css('--fg-dim'), grid: { stroke: css('--grid'), width: 1 }, ticks: { show: false } },
        { stroke: css('--fg-dim'), grid: { stroke: css('--grid'), width: 1 }, ticks: { show: false }, size: 56,
          values: (u, vals) => vals.map((v) => fmtAxis(v, unit)) },
      ],
      hooks: { setSelect: [onSelect], draw: [drawBands] },
    };
    return new uPlot(opts, [[], [], []], $('timeline'));
  }

  async function refreshSeries() {
    const r = timeRange(state), step = stepFor(r[1] - r[0]);
    /* bucket edges on multiples of the step, so a window is never split */
    const from = Math.floor(r[0] / step) * step, to = Math.ceil(r[1] / step) * step;
    /* the picked function's line over the total: one query gives both */
    const fn = state.fn && state.mode !== 'diff' ? state.fn : '';
    const url = query('/api/v1/series', [['format', 'json'], ['from', from], ['to', to],
      ['step', step], ['type', state.type], ...whereParams(state),
      ...(fn ? [['function', fnPattern(fn)]] : [])]);
    busy(1);
    try {
      const s = await getJson(url);
      series = s;
      unit = s.meta.unit || unit; /* the axis' labels */
      const xs = s.points.map((p) => p[0]), ys = s.points.map((p) => p[1]);
      const fs = s.points.map((p) => (fn ? p[2] : null));
      /* a last point at the end, so the last step is drawn as wide as the others */
      if (xs.length) {
        xs.push(s.to);
        ys.push(ys[ys.length - 1]);
        fs.push(fs[fs.length - 1]);
      }
      plot.setData([xs, ys, fs]);
      plot.setScale('x', { min: from, max: to });
      let peak = -1;
      s.points.forEach((p, i) => {
        if (peak < 0 || p[1] > s.points[peak][1]) peak = i;
      });
      const info = $('peak');
      $('timeline').dataset.fn = fn;
      if (peak >= 0 && s.points[peak][1] > 0) {
        let text = fmtValue(s.meta.total, s.meta.unit) + ' \u00b7 peak ' + fmtValue(s.points[peak][1], s.meta.unit) +
          ' at ' + fmtTime(s.points[peak][0]) + ' (step ' + s.step + ' s)';
        if (fn) {
          /* the step where the function's share is highest, among steps with samples */
          let best = -1;
          s.points.forEach((p, i) => {
            if (p[1] && (best < 0 || p[2] / p[1] > s.points[best][2] / s.points[best][1])) best = i;
          });
          const b = s.points[best], all = s.points.reduce((n, p) => n + p[2], 0);
          text += ' \u00b7 ' + fn + ': ' + fmtPct(all / s.meta.total) + ' overall, ' +
            fmtPct(b[2] / b[1]) + ' at ' + fmtTime(b[0]);
        }
        info.textContent = text;
        info.dataset.peakT = s.points[peak][0];
        info.dataset.peak = s.points[peak][1];
      } else {
        info.textContent = 'no samples in this range' + (s.meta.empty_reason ? ': ' + s.meta.empty_reason : '');
        delete info.dataset.peak;
        delete info.dataset.peakT;
      }
      info.dataset.step = s.step;
      $('timeline').dataset.from = from;
      $('timeline').dataset.to = to;
      if (firstSeries) {
        firstSeries = false;
        if (fitYoungStore(s)) return;
      }
    } catch (e) {
      showError('timeline', e);
    } finally {
      busy(-1);
    }
    refreshMix(from, to, step);
  }

  /* The first timeline of a page opened on the default range: when all the
   * store's samples in it are in its last 15 minutes (a young store), the view
   * narrows to 15 minutes rather than show a blank hour. True when it did. */
  let firstSeries = true;
  function fitYoungStore(s) {
    if (!rangeDefaulted || state.range !== '1h') return false;
    const first = s.points.find((p) => p[1] > 0);
    if (!first || first[0] < s.to - QUICK['15m']) return false;
    state.range = '15m';
    changed(false);
    return true;
  }

  /* ---- what changed: the heaviest functions' shares, step by step ------------ */
  const MIX_FUNCTIONS = 8, MIX_ROW = 18, MIX_LABEL = 220;
  let mix = null;

  async function refreshMix(from, to, step) {
    const box = $('mix-box');
    box.hidden = !state.mix || state.mode === 'diff';
    $('mix-toggle').setAttribute('aria-pressed', state.mix ? 'true' : 'false');
    if (box.hidden) return;
    const url = query('/api/v1/series', [['format', 'json'], ['from', from], ['to', to],
      ['step', step], ['type', state.type], ...whereParams(state), ['breakdown', MIX_FUNCTIONS]]);
    if (mix && mix.url === url) { /* a redraw: the same answer */
      drawMix();
      return;
    }
    box.dataset.state = 'loading';
    try {
      mix = await getJson(url);
      mix.url = url;
      drawMix();
      box.dataset.state = 'ready';
    } catch (e) {
      showError('what changed', e);
    }
  }

  /* One row per function, one cell per step, as wide as the timeline's steps
   * above it; a cell's strength is the function's share of that step. */
  function drawMix() {
    const c = $('mix');
    if (!mix || !plot) return;
    const dpr = window.devicePixelRatio || 1, w = $('timeline').clientWidth || 800;
    const rows = mix.breakdown.length, h = Math.max(rows, 1) * MIX_ROW;
    c.style.width = w + 'px';
    c.style.height = h + 'px';
    c.width = Math.round(w * dpr);
    c.height = Math.round(h * dpr);
    const ctx = c.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, h);
    ctx.font = '12px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    const left = plot.bbox.left / dpr, width = plot.bbox.width / dpr;
    const x = (t) => left + ((t - mix.from) / (mix.to - mix.from)) * width;
    const accent = css('--accent'), fg = css('--fg-dim');
    mix.breakdown.forEach((f, r) => {
      const y = r * MIX_ROW;
      ctx.fillStyle = f.name === state.fn ? css('--fg') : fg;
      ctx.save();
      ctx.beginPath();
      ctx.rect(0, y, Math.max(left - 6, 0), MIX_ROW);
      ctx.clip();
      ctx.textAlign = 'right';
      ctx.fillText(f.text, Math.max(left - 6, 0), y + MIX_ROW / 2);
      ctx.restore();
      ctx.fillStyle = accent;
      for (const p of mix.points) {
        if (!p[1]) continue;
        ctx.globalAlpha = Math.min(1, p[2 + r] / p[1]);
        const a = x(p[0]), b = x(p[0] + mix.step);
        ctx.fillRect(a, y + 1, Math.max(b - a, 1), MIX_ROW - 2);
      }
      ctx.globalAlpha = 1;
    });
    if (!rows) {
      ctx.fillStyle = fg;
      ctx.fillText('no samples in this range', left, MIX_ROW / 2);
    }
  }

  /* the row under a click on the mix: its function, picked */
  function mixRowAt(e) {
    if (!mix) return null;
    const r = Math.floor((e.clientY - $('mix').getBoundingClientRect().top) / MIX_ROW);
    return mix.breakdown[r] || null;
  }

  /* One click from a selection: compare it with the range just before it, of
   * the same length. */
  function compareWithPrevious() {
    const r = state.sel;
    if (!r) return;
    state.mode = 'diff';
    state.base = [r[0] - (r[1] - r[0]), r[0]];
    state.fn = '';
    setTarget('after');
    changed(false);
  }

  /* ---- label filters -------------------------------------------------------- */
  async function refreshLabels() {
    const r = timeRange(state);
    try {
      const keys = await getJson(query('/api/v1/labels', [['from', r[0]], ['to', r[1]]]));
      const sel = $('fkey'), keep = sel.value;
      sel.textContent = '';
      sel.appendChild(new Option('label\u2026', ''));
      for (const k of keys) sel.appendChild(new Option(k, k));
      if (keys.includes(keep)) sel.value = keep;
      await refreshValues();
    } catch (e) {
      showError('labels', e);
    }
  }

  /* The profile selector: the types with data in the range and selection
   * (/api/v1/types), each by its title (a gauge's marked: it shows averages);
   * the type shown stays listed even when the range holds none of it. */
  async function refreshTypes() {
    const r = timeRange(state);
    try {
      const types = await getJson(query('/api/v1/types', [['from', r[0]], ['to', r[1]], ...whereParams(state)]));
      const sel = $('ptype');
      if (!types.some((t) => t.name === state.type))
        types.unshift({ name: state.type, title: state.type === 'cpu' ? 'CPU' : state.type });
      sel.textContent = '';
      for (const t of types) {
        const o = new Option(t.title + (t.aggregation === 'average' ? ' (average)' : ''), t.name);
        if (t.unit) o.title = t.unit;
        sel.appendChild(o);
      }
      sel.value = state.type;
    } catch (e) {
      showError('labels', e);
    }
  }

  async function refreshValues() {
    const key = $('fkey').value, sel = $('fval');
    sel.textContent = '';
    sel.appendChild(new Option('value\u2026', ''));
    sel.disabled = !key;
    if (!key) return;
    const r = timeRange(state);
    try {
      const vals = await getJson(query('/api/v1/labels/' + encodeURIComponent(key) + '/values',
        [['from', r[0]], ['to', r[1]], ...whereParams(state)]));
      for (const v of vals) sel.appendChild(new Option(v, v));
    } catch (e) {
      showError('labels', e);
    }
  }

  /* the filters as chips: the common ones, then a diff's baseline's and
   * comparison's own (in their colours) */
  function renderChips() {
    const ul = $('chips');
    ul.textContent = '';
    for (const [key, side] of [['where', ''], ['bwhere', 'baseline'], ['awhere', 'comparison']]) {
      for (const w of state[key]) {
        const li = document.createElement('li'), b = document.createElement('button');
        li.textContent = (side ? side + ': ' : '') + w + ' ';
        li.dataset.side = key;
        b.type = 'button';
        b.textContent = '\u00d7';
        b.setAttribute('aria-label', 'remove filter ' + (side ? side + ' ' : '') + w);
        b.addEventListener('click', () => {
          state[key] = state[key].filter((x) => x !== w);
          changed(key === 'where');
        });
        li.appendChild(b);
        ul.appendChild(li);
      }
    }
    $('fside').hidden = state.mode !== 'diff';
  }

  /* ---- flame graph, top table, diff ------------------------------------------ */
  let flame = null, callers = null, callees = null, topRows = [], moverRows = [], profileGen = 0;

  function profileRange() {
    return state.sel || timeRange(state);
  }

  function rangeParams(r) {
    return [['from', r[0]], ['to', r[1]]];
  }

  /* A diff compares two ranges, two selections (filters of the baseline or the
   * comparison alone: where= applies to both sides, before_where= and
   * after_where= to one), or both: without a baseline range, the baseline is the
   * comparison's range. */
  function diffReady() {
    return !!(state.base || state.bwhere.length || state.awhere.length);
  }

  function baseRange() {
    return state.base || profileRange();
  }

  function flameUrl(format) {
    const cap = format === 'json' ? [['max_nodes', state.nodes]] : [];
    if (state.mode === 'diff') {
      if (!diffReady()) return null;
      const a = profileRange(), b = baseRange();
      return query('/api/v1/diff', [['format', format], ['before_from', b[0]], ['before_to', b[1]],
        ['after_from', a[0]], ['after_to', a[1]], ['type', state.type], ...whereParams(state),
        ...state.bwhere.map((w) => ['before_where', w]), ...state.awhere.map((w) => ['after_where', w]),
        ...cap]);
    }
    return query('/api/v1/flamegraph', [['format', format], ...rangeParams(profileRange()),
      ['type', state.type], ...whereParams(state), ...cap]);
  }

  /* What a pruned graph left out, for the summary line. */
  function prunedNote(tree, total) {
    const p = tree.pruned;
    if (!p || !p.nodes) return '';
    return ' \u00b7 ' + fmtCount(p.nodes) + ' smallest frames not drawn (' +
      (total ? ((100 * p.samples) / total).toFixed(1) : '0') + '% of the total)';
  }

  /* Under the breadcrumb, when the answer was pruned (max_nodes) and the zoomed
   * frame has samples in frames the answer left out (drawn hatched): how many,
   * and a button that asks again for DETAIL_STEP times more frames (the API has
   * no way yet to ask for one frame's subtree alone). */
  function renderPruned() {
    const p = flame.prunedBelow();
    const el = $('pruned');
    el.hidden = !p;
    if (!p) {
      delete el.dataset.samples;
      return;
    }
    const what = p.samples === null ? fmtPct(p.share) + ' of its width'
      : fmtValue(p.samples, unit) + ' (' + fmtPct(p.share) + ')';
    $('pruned-text').textContent = 'Pruned view: ' + what + ' under ' + p.name + ' in frames too small ' +
      'to be loaded (the ' + fmtCount(flame.pruned.max_nodes) + ' heaviest frames of ' +
      fmtCount(flame.pruned.max_nodes + flame.pruned.nodes) + ' are), drawn hatched.';
    el.dataset.samples = p.samples === null ? '' : p.samples;
    el.dataset.share = p.share;
    $('more-detail').disabled = state.nodes >= MAX_DETAIL;
    $('more-detail').textContent = 'More detail (' + fmtCount(Math.min(state.nodes * DETAIL_STEP, MAX_DETAIL)) +
      ' frames)';
  }

  /* A click that zooms into a frame with samples the answer left out asks for
   * more detail at once (DETAIL_STEP times the frames) while the graph holds
   * fewer than AUTO_DETAIL frames; past that, the More detail button. The zoom
   * is drawn at once, the detail replaces it when it comes. */
  const AUTO_DETAIL = 20000;

  function autoDetail() {
    if (!flame.prunedBelow() || flame.zoom === 0 || state.nodes >= AUTO_DETAIL) return;
    state.nodes = Math.min(state.nodes * DETAIL_STEP, AUTO_DETAIL);
    writeHash();
    refreshProfile();
  }

  /* A graph taller than its box opens on its root: the bottom of a flame graph
   * (the top of an icicle), where the wide frames are, not on an empty corner
   * of narrow tips. */
  function showRoot() {
    const box = $('canvas-box');
    box.scrollTop = state.icicle ? 0 : box.scrollHeight;
  }

  function setSummary(text, empty) {
    $('summary').textContent = text;
    $('empty').hidden = !empty;
    if (empty) $('empty').textContent = empty;
  }

  async function refreshProfile() {
    const gen = ++profileGen;
    const url = flameUrl('json');
    renderRangeInfo();
    $('movers-box').hidden = state.mode !== 'diff';
    $('top-box').hidden = state.mode === 'diff';
    if (!url) {
      flame.setData({ name: 'all', kind: 'root', self: 0, total: 0, children: [] }, false);
      flame.n = 0;
      flame.draw();
      flame.renderCrumbs();
      setSummary('', 'Drag on the timeline to choose the baseline (blue) to compare the selection (red) ' +
        'with, or add a filter for the baseline or the comparison alone (e.g. service=a against ' +
        'service=b over the same range).');
      renderPruned();
      $('flame-box').dataset.state = 'waiting';
      return;
    }
    $('flame-box').dataset.state = 'loading';
    busy(1);
    const t0 = performance.now();
    try {
      /* text, then JSON.parse: the bench's breakdown tells the transfer from the parse */
      const text = await flameText(url);
      if (gen !== profileGen) return;
      const t1 = performance.now();
      performance.mark('smolder:flame-received');
      const tree = JSON.parse(text);
      performance.mark('smolder:flame-parsed');
      clearError();
      const diff = state.mode === 'diff';
      flame.icicle = state.icicle;
      flame.setData(tree, diff);
      flame.zoomTo(state.zoom, true);
      showRoot();
      const m = tree.meta;
      let top = null;
      unit = m.unit || 'samples';
      renderTopHeads();
      if (diff) {
        setSummary('before ' + fmtValue(m.before.total, m.unit) + ' \u00b7 after ' + fmtValue(m.after.total, m.unit) +
          ' \u00b7 red grew, blue shrank (shares of each side)' +
          prunedNote(tree, m.before.total + m.after.total),
        m.before.total + m.after.total ? '' : 'No samples in either range.');
        $('summary').dataset.total = m.after.total;
        $('summary').dataset.before = m.before.total;
        moverRows = movers(tree);
        renderMovers();
      } else {
        const cpu = m.cpu_seconds !== null && m.cpu_seconds !== undefined && m.period_ns
          ? ' \u00b7 ' + m.cpu_seconds.toFixed(2) + ' s CPU' : '';
        const amount = m.type === 'offcpu' ? (m.total / 1e9).toFixed(2) + ' s off CPU'
          : m.unit && m.unit !== 'samples'
            ? fmtValue(m.total, m.unit) + (m.aggregation === 'average' ? ' (average of snapshots)' : '')
            : fmtCount(m.total) + ' samples' + cpu;
        setSummary(amount + ' \u00b7 ' + fmtRange([m.from, m.to]) +
          prunedNote(tree, m.total),
          m.total ? '' : 'No samples in this range' + (m.empty_reason ? ': ' + m.empty_reason : '.'));
        $('summary').dataset.total = m.total;
        if (tree.pruned) {
          /* the pruned tree lacks the small frames' self time: the API counts
           * them, after the graph is painted (not before: the first paint
           * waits for one query, not two) */
          top = query('/api/v1/top', [['format', 'json'], ['limit', 1000],
            ...rangeParams(profileRange()), ['type', state.type], ...whereParams(state)]);
          if (lastTop && lastTop.url === top) {
            topRows = lastTop.rows; /* More detail: the same range, the same table */
            top = null;
            renderTop();
          } else {
            topRows = [];
            $('top-count').textContent = 'loading\u2026';
            $('top').tBodies[0].textContent = '';
          }
        } else {
          topRows = flame.functions(); /* the tree's own numbers: no second query */
          renderTop();
        }
        $('top-box').dataset.state = top ? 'loading' : 'ready';
      }
      applyHighlight();
      renderSandwich();
      renderPruned();
      performance.mark('smolder:flame-drawn');
      $('flame-box').dataset.state = 'ready';
      /* where the time went: the answer (server and transfer), the page (parse, tree, draw) */
      $('flame-box').dataset.fetchMs = Math.round(t1 - t0);
      $('flame-box').dataset.ms = Math.round(performance.now() - t0);
      if (top) await refreshTop(gen, top);
    } catch (e) {
      if (gen !== profileGen) return;
      $('flame-box').dataset.state = 'error';
      showError(state.mode === 'diff' ? 'diff' : 'flame graph', e);
    } finally {
      busy(-1);
    }
  }

  /* The first graph's answer is asked as soon as this file runs, before uPlot
   * and flame.js are parsed and run (askEarly): refreshProfile takes it when it
   * wants the same URL, else asks anew. */
  let early = null;

  function askEarly() {
    const url = flameUrl('json');
    if (!url) return;
    performance.mark('smolder:flame-asked');
    early = { url, text: get(url).then((r) => r.text()) };
    early.text.catch(() => {}); /* refreshProfile awaits it and shows its error */
  }

  function flameText(url) {
    const e = early;
    early = null;
    if (e && e.url === url) return e.text;
    performance.mark('smolder:flame-asked');
    return get(url).then((r) => r.text());
  }

  /* the top table of a pruned graph, from /api/v1/top (url); the last one is
   * kept for the next graph of the same range and filters */
  let lastTop = null;

  async function refreshTop(gen, url) {
    try {
      const t = await getJson(url);
      if (gen !== profileGen) return;
      topRows = t.functions;
      lastTop = { url, rows: topRows };
      renderTop();
      performance.mark('smolder:top-drawn');
      $('top-box').dataset.state = 'ready';
    } catch (e) {
      if (gen !== profileGen) return;
      $('top-box').dataset.state = 'error';
      $('top-count').textContent = '';
      showError('top functions', e);
    }
  }

  function applyHighlight() {
    let pred = null, label = '';
    const out = $('matched');
    if (state.fn) {
      pred = (n) => n === state.fn;
      label = state.fn;
    } else if (state.q) {
      let re;
      try {
        re = new RegExp(state.q);
        $('search').setCustomValidity('');
      } catch (e) {
        $('search').setCustomValidity('not a regular expression');
        out.textContent = 'not a regular expression';
        flame.highlight(null);
        return;
      }
      pred = (n) => re.test(n);
      label = '/' + state.q + '/';
    }
    const r = flame.highlight(pred);
    if (!r) {
      out.textContent = '';
      delete out.dataset.samples;
      return;
    }
    out.textContent = 'Matched ' + label + ': ' + fmtValue(r.samples, unit) + ' (' + fmtPct(r.share) + ')';
    out.dataset.samples = r.samples;
    out.dataset.share = r.share;
  }

  /* The rows of the top table in their order, and how many are in the page. */
  let topShown = [], topRendered = 0, topObserver = null;

  function renderTop() {
    const tbody = $('top').tBodies[0], f = $('top-filter').value.toLowerCase();
    const key = state.sort, dir = key === 'name' ? 1 : -1;
    const rows = topRows.filter((r) => !f || r.name.toLowerCase().includes(f));
    rows.sort((a, b) => (key === 'name' ? a.name.localeCompare(b.name) : b[key] - a[key] || a.name.localeCompare(b.name)) * (key === 'name' ? dir : 1));
    for (const th of $('top').tHead.rows[0].cells)
      th.setAttribute('aria-sort', th.dataset.key === key ? (key === 'name' ? 'ascending' : 'descending') : 'none');
    tbody.textContent = '';
    topShown = rows;
    topRendered = 0;
    appendTopRows();
    $('top-count').textContent = rows.length + ' of ' + topRows.length + ' functions';
  }

  /* Adds the next TOP_CHUNK rows; the last row, once it scrolls into view (the
   * aside's or the page's scroll), adds the next ones. */
  function appendTopRows() {
    const tbody = $('top').tBodies[0];
    const end = Math.min(topShown.length, topRendered + TOP_CHUNK);
    if (topObserver) topObserver.disconnect();
    for (const r of topShown.slice(topRendered, end)) {
      const tr = tbody.insertRow();
      tr.tabIndex = 0;
      tr.dataset.name = r.name;
      if (r.name === state.fn) tr.classList.add('picked');
      const cell = fmtCell;
      tr.insertCell().textContent = cell(r.self);
      tr.insertCell().textContent = r.self_pct.toFixed(2) + '%';
      tr.insertCell().textContent = cell(r.total);
      tr.insertCell().textContent = r.total_pct.toFixed(2) + '%';
      const c = tr.insertCell();
      c.textContent = shortName(r.name, r.kind);
      c.title = r.name;
      c.className = 'fn kind-' + r.kind;
    }
    topRendered = end;
    if (end < topShown.length && tbody.rows.length) {
      topObserver = topObserver || new IntersectionObserver((entries) => {
        if (entries.some((e) => e.isIntersecting)) appendTopRows();
      });
      topObserver.observe(tbody.rows[tbody.rows.length - 1]);
    }
  }

  /* /healthz: a banner while the collector says it is degraded (an agent that
   * has sent nothing for a while, the store out of reach), gone when it is ok. */
  async function checkHealth() {
    let resp;
    try {
      resp = await fetch('/healthz', { cache: 'no-store' });
    } catch (e) {
      return; /* the collector unreachable: the queries say so */
    }
    const box = $('health');
    if (resp.status === 503) {
      const why = (await resp.text()).trim().replace(/^degraded: /, '');
      box.textContent = 'Collector degraded: ' + why +
        (/sent nothing/.test(why) ? '. Recent steps lack its samples: they are missing, not idle.' : '');
      box.hidden = false;
    } else if (resp.ok) {
      box.hidden = true;
    }
  }

  function pickFunction(name) {
    state.fn = state.fn === name ? '' : name;
    if (!state.fn) state.sandwich = false;
    writeHash();
    renderTop();
    applyHighlight();
    renderSandwich();
    refreshSeries(); /* its line over the timeline */
  }

  /* callers (root fn at the bottom, its callers above) and callees (fn on top) of
   * the picked function, from the graph's tree */
  function renderSandwich() {
    const box = $('sandwich-box'), b = $('sandwich');
    b.disabled = !state.fn || state.mode === 'diff';
    b.setAttribute('aria-pressed', state.sandwich && !b.disabled ? 'true' : 'false');
    const sw = state.sandwich && !b.disabled ? flame.sandwich(state.fn) : null;
    box.hidden = !sw;
    if (!sw) return;
    $('sandwich-fn').textContent = state.fn;
    callers.icicle = false;
    callers.setData(sw.callers, false);
    callers.setZoom(0, true);
    callees.setData(sw.callees, false);
    callees.setZoom(0, true);
  }

  /* the functions whose share of each side's samples moved most (recursion
   * counted once; the process and placeholder frames are no functions) */
  function movers(tree) {
    const B = tree.meta.before.total, A = tree.meta.after.total, fns = new Map();
    const walk = (node, depth, seen) => {
      let added = false;
      if (depth >= 2 && !node.name.startsWith('[') && !seen.has(node.name)) {
        let f = fns.get(node.name);
        if (!f) fns.set(node.name, (f = { name: node.name, kind: node.kind, b: 0, a: 0 }));
        f.b += node.before.total;
        f.a += node.after.total;
        seen.add(node.name);
        added = true;
      }
      for (const c of node.children || []) walk(c, depth + 1, seen);
      if (added) seen.delete(node.name);
    };
    walk(tree, 0, new Set());
    const rows = [...fns.values()].map((f) => {
      const sb = B ? f.b / B : 0, sa = A ? f.a / A : 0;
      return { ...f, sb, sa, d: sa - sb };
    });
    rows.sort((p, q) => Math.abs(q.d) - Math.abs(p.d) || (p.name < q.name ? -1 : p.name > q.name ? 1 : 0));
    return rows.filter((r) => r.d !== 0).slice(0, MOVERS);
  }

  function renderMovers() {
    const tbody = $('movers').tBodies[0];
    tbody.textContent = '';
    for (const r of moverRows) {
      const tr = tbody.insertRow();
      tr.tabIndex = 0;
      tr.dataset.name = r.name;
      tr.className = r.d > 0 ? 'grew' : 'shrank';
      if (r.name === state.fn) tr.classList.add('picked');
      tr.insertCell().textContent = (100 * r.sb).toFixed(2) + '%';
      tr.insertCell().textContent = (100 * r.sa).toFixed(2) + '%';
      tr.insertCell().textContent = (r.d >= 0 ? '+' : '') + (100 * r.d).toFixed(2) + ' pp';
      const c = tr.insertCell();
      c.textContent = shortName(r.name, r.kind);
      c.title = r.name;
      c.className = 'fn kind-' + r.kind;
    }
    if (!moverRows.length) {
      const c = tbody.insertRow().insertCell();
      c.colSpan = 4;
      c.textContent = 'no function moved';
    }
  }

  /* ---- controls ------------------------------------------------------------- */
  function renderRangeInfo() {
    const r = timeRange(state);
    for (const b of $('ranges').querySelectorAll('button'))
      b.setAttribute('aria-pressed', b.dataset.range === state.range ? 'true' : 'false');
    $('from').value = localInput(r[0]);
    $('to').value = localInput(r[1]);
    const s = [];
    if (state.mode === 'diff') {
      const sides = (w) => (w.length ? ' where ' + w.join(', ') : '');
      s.push('baseline: ' + (state.base ? fmtRange(state.base) : diffReady() ? 'the same range' : 'not chosen') +
        sides(state.bwhere));
      s.push('comparison: ' + fmtRange(profileRange()) + sides(state.awhere));
    } else {
      s.push(state.sel ? 'selected ' + fmtRange(state.sel) : 'whole range (drag to select)');
    }
    $('selinfo').textContent = s.join(' \u00b7 ');
    $('clearsel').hidden = !state.sel && !state.base;
    $('compare-prev').hidden = !state.sel || state.mode === 'diff';
    $('compare').setAttribute('aria-pressed', state.mode === 'diff' ? 'true' : 'false');
    $('compare-targets').hidden = state.mode !== 'diff';
    $('flip').textContent = state.icicle ? 'Flame' : 'Icicle';
    $('flip').title = state.icicle ? 'root at the bottom' : 'root on top';
    for (const b of document.querySelectorAll('.export')) b.hidden = state.mode === 'diff' && !b.dataset.diff;
    if (plot && series) plot.redraw(false, true);
  }

  function setTarget(t) {
    state.target = t;
    for (const r of document.querySelectorAll('input[name=target]')) r.checked = r.value === t;
  }

  /* something that changes what is read: everything again */
  function changed(labelsToo) {
    state.zoom = [];
    state.nodes = MAX_NODES; /* "More detail" was for the view it was asked on */
    writeHash();
    renderChips();
    renderRangeInfo();
    /* the graph's query first: on a busy collector it is the one people wait for */
    refreshProfile();
    refreshSeries();
    if (labelsToo) refreshLabels();
    refreshTypes();
  }

  async function exportAs(format) {
    const url = flameUrl(format);
    if (!url) return;
    busy(1);
    try {
      const blob = await (await get(url)).blob();
      const a = document.createElement('a'), r = profileRange();
      const ext = { svg: 'svg', folded: 'folded', pprof: 'pb.gz', speedscope: 'speedscope.json', html: 'html' }[format];
      a.href = URL.createObjectURL(blob);
      a.download = 'smolder-' + (state.mode === 'diff' ? 'diff-' : '') + r[0] + '-' + r[1] + '.' + ext;
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(a.href), 10000);
    } catch (e) {
      showError('export', e);
    } finally {
      busy(-1);
    }
  }

  function permalink() {
    const link = location.origin + location.pathname + hashOf(state, true);
    const out = $('permalink-url');
    out.value = link;
    out.hidden = false;
    out.select();
    if (navigator.clipboard) navigator.clipboard.writeText(link).catch(() => {});
    return link;
  }

  function wire() {
    for (const [k] of Object.entries(QUICK)) {
      const b = document.createElement('button');
      b.type = 'button';
      b.textContent = k;
      b.dataset.range = k;
      b.addEventListener('click', () => {
        state.range = k;
        state.sel = null;
        state.base = null;
        changed(true);
      });
      $('ranges').appendChild(b);
    }
    $('absolute').addEventListener('submit', (e) => {
      e.preventDefault();
      const f = Math.floor(new Date($('from').value).getTime() / 1000);
      const t = Math.floor(new Date($('to').value).getTime() / 1000);
      if (!(t > f)) {
        showError('range', new Error('"to" must be after "from"'));
        return;
      }
      Object.assign(state, { range: '', from: f, to: t, sel: null, base: null });
      changed(true);
    });
    $('fkey').addEventListener('change', refreshValues);
    $('filter-form').addEventListener('submit', (e) => {
      e.preventDefault();
      const k = $('fkey').value, v = $('fval').value;
      if (!k || !v) return;
      const w = k + '=' + v;
      /* in compare mode a filter may be the baseline's or the comparison's alone */
      const side = state.mode === 'diff' ? $('fside').value : 'where';
      if (!state[side].includes(w)) state[side].push(w);
      changed(side === 'where');
    });
    $('ptype').addEventListener('change', () => {
      state.type = $('ptype').value;
      changed(false);
    });
    $('compare').addEventListener('click', () => {
      state.mode = state.mode === 'diff' ? 'flame' : 'diff';
      if (state.mode === 'diff') {
        setTarget(state.base ? 'after' : 'base');
      } else {
        state.base = null;
        state.bwhere = [];
        state.awhere = [];
      }
      state.fn = '';
      changed(false);
    });
    for (const r of document.querySelectorAll('input[name=target]'))
      r.addEventListener('change', () => setTarget(r.value));
    $('compare-prev').addEventListener('click', compareWithPrevious);
    $('mix-toggle').addEventListener('click', () => {
      state.mix = !state.mix;
      writeHash();
      refreshSeries();
    });
    $('mix').addEventListener('click', (e) => {
      const f = mixRowAt(e);
      if (f) pickFunction(f.name);
    });
    $('clearsel').addEventListener('click', () => {
      state.sel = null;
      state.base = null;
      if (state.mode === 'diff') setTarget('base');
      changed(false);
    });
    $('flip').addEventListener('click', () => {
      state.icicle = !state.icicle;
      flame.icicle = state.icicle;
      writeHash();
      renderRangeInfo();
      flame.draw();
      showRoot();
    });
    let typing = 0;
    $('search').addEventListener('input', () => {
      clearTimeout(typing);
      typing = setTimeout(() => {
        state.q = $('search').value;
        state.fn = '';
        writeHash();
        renderTop();
        applyHighlight();
      }, 120);
    });
    $('top-filter').addEventListener('input', renderTop);
    for (const th of $('top').tHead.rows[0].cells) {
      const b = th.querySelector('button');
      b.addEventListener('click', () => {
        state.sort = th.dataset.key;
        writeHash();
        renderTop();
      });
    }
    for (const id of ['top', 'movers']) {
      const t = $(id).tBodies[0];
      t.addEventListener('click', (e) => {
        const tr = e.target.closest('tr');
        if (tr && tr.dataset.name) pickFunction(tr.dataset.name);
      });
      t.addEventListener('keydown', (e) => {
        const tr = e.target.closest('tr');
        if (tr && tr.dataset.name && (e.key === 'Enter' || e.key === ' ')) {
          e.preventDefault();
          pickFunction(tr.dataset.name);
        }
      });
    }
    for (const b of document.querySelectorAll('.export')) b.addEventListener('click', () => exportAs(b.dataset.format));
    $('permalink').addEventListener('click', permalink);
    $('more-detail').addEventListener('click', () => {
      state.nodes = Math.min(state.nodes * DETAIL_STEP, MAX_DETAIL);
      writeHash();
      refreshProfile(); /* the zoom path stays: the new graph zooms to it */
    });
    $('sandwich').addEventListener('click', () => {
      state.sandwich = !state.sandwich;
      writeHash();
      renderSandwich();
    });
    window.addEventListener('hashchange', () => {
      if (location.hash === hashOf(state, false)) return;
      readHash();
      syncInputs();
      changed(true);
    });
    /* a theme switch: the canvases take their colours when they draw */
    matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => {
      plot.destroy();
      plot = makePlot($('timeline').clientWidth || 800);
      if (series) refreshSeries();
      for (const g of [flame, callers, callees]) g.draw();
    });
    new ResizeObserver(() => {
      const w = $('timeline').clientWidth;
      if (plot && w && Math.abs(plot.width - w) > 1) {
        plot.setSize({ width: w, height: 150 });
        drawMix();
      }
    }).observe($('timeline'));
  }

  function syncInputs() {
    $('search').value = state.q;
    $('ptype').value = state.type;
    setTarget(state.mode === 'diff' && !state.base ? 'base' : 'after');
  }

  function main() {
    ({ FlameGraph, fmtCount, fmtPct, fmtUnit, shortName } = window.SmolderFlame);
    readHash();
    flame = new FlameGraph($('flame'), $('tip'), $('crumbs'), (path) => {
      state.zoom = path;
      writeHash();
      renderPruned();
      autoDetail();
    });
    callers = new FlameGraph($('callers'), $('tip'), $('callers-crumbs'));
    callees = new FlameGraph($('callees'), $('tip'), $('callees-crumbs'));
    plot = makePlot($('timeline').clientWidth || 800);
    wire();
    syncInputs();
    renderChips();
    renderRangeInfo();
    writeHash();
    /* the graph first (see changed()); on the first load the timeline and the
     * labels are asked once the graph's answer is in, so that a small collector
     * does not share its cores between them and the query people wait for */
    const first = early && early.text;
    refreshProfile();
    const rest = () => {
      refreshSeries();
      refreshLabels();
      refreshTypes();
    };
    if (first) first.then(rest, rest);
    else rest();
    checkHealth();
    setInterval(checkHealth, HEALTH_MS);
    /* the page's introspection, for tests and for people at the console */
    window.smolder = {
      state, permalink, frames: () => flame.frames(), movers: () => moverRows,
      nodes: () => flame.n, drawMs: () => flame.drawMs, zoomTo: (p) => flame.zoomTo(p),
      callers: () => callers.frames(), callees: () => callees.frames(),
    };
  }

  /* This file is loaded async (the others are deferred, and run in order once
   * the page is parsed): it asks for the graph as soon as it runs, and builds the
   * page once the others have run (at DOMContentLoaded, which follows them, or at
   * once if they already have). */
  readHash();
  askEarly();
  if (window.SmolderFlame && window.uPlot) main();
  else document.addEventListener('DOMContentLoaded', main);
})();
