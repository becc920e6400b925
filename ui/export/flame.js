
(function () {
'use strict';
var data = JSON.parse(document.getElementById('data').textContent);
var root = data.tree, diff = data.diff, side = diff ? 1 : 0, PERIOD = data.period;
var UNIT = data.unit; /* a type other than cpu: its unit (common/ptype.h); else null */
var T0 = root.t[0], T1 = root.t[1], TOT = root.t[side];
var chart = document.getElementById('chart'), tip = document.getElementById('tip');
var search = document.getElementById('search');
var matchEl = document.getElementById('match');
var toggle = document.getElementById('toggle');
var zoom = root, icicle = false, re = null, ROW = 17, maxAbs = 0;
function prep(n, p, d) {
  n.p = p; n.d = d;
  if (diff) {
    n.delta = (T1 ? n.t[1] / T1 : 0) - (T0 ? n.t[0] / T0 : 0);
    maxAbs = Math.max(maxAbs, Math.abs(n.delta));
  }
  for (var i = 0; i < n.c.length; i++) prep(n.c[i], n, d + 1);
}
prep(root, null, 0);
function pct(v, t) { return t ? (100 * v / t).toFixed(2) + '%' : '0.00%'; }
function count(v) { return String(v).replace(/\B(?=(\d{3})+(?!\d))/g, ','); }
/* CPU time of v samples: as render_svg.c's put_cpu */
function cpu(v) {
  var s = v * PERIOD / 1e9;
  return s >= 100 ? s.toFixed(0) + ' s' : s >= 10 ? s.toFixed(1) + ' s' :
    s >= 1 ? s.toFixed(2) + ' s' : (s * 1e3).toFixed(1) + ' ms';
}
/* v in the type's unit, as common/ptype.c's ptype__format() writes it: times
   in ns, \u00b5s, ms or s, memory in B to TiB, counts with separators */
function unit(v) {
  var sig = function (x) { return x.toFixed(x >= 99.95 ? 0 : x >= 9.995 ? 1 : 2); };
  var i, names;
  if (UNIT === 'nanoseconds') {
    var steps = [[1e9, 's'], [1e6, 'ms'], [1e3, '\u00b5s']];
    for (i = 0; i < steps.length; i++) if (v >= steps[i][0] * 0.9995) return sig(v / steps[i][0]) + ' ' + steps[i][1];
    return v + ' ns';
  }
  if (UNIT === 'bytes') {
    names = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    for (i = 0; i + 1 < names.length && v >= 1023.5; i++) v /= 1024;
    return (i ? sig(v) : String(v)) + ' ' + names[i];
  }
  return count(v) + (UNIT === 'objects' ? ' objects' : '');
}
function value(v) { return UNIT ? unit(v) : count(v) + ' samples'; }
function figures(v, t) {
  return value(v) + ', ' + (PERIOD && !UNIT ? cpu(v) + ' CPU, ' : '') + pct(v, t);
}
function pp(d) { return (d >= 0 ? '+' : '') + (100 * d).toFixed(2) + ' pp'; }
function disp(n) { return n.r ? n.n + ' \u00d7' + n.r : n.n; }
function hash(s) {
  var h = 0;
  for (var i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) >>> 0;
  return h;
}
function color(n) {
  if (diff) {
    var r = maxAbs ? Math.min(1, Math.abs(n.delta) / maxAbs) : 0;
    var c = Math.round(255 * (1 - r));
    return n.delta > 0 ? 'rgb(255,' + c + ',' + c + ')' :
      n.delta < 0 ? 'rgb(' + c + ',' + c + ',255)' : 'rgb(255,255,255)';
  }
  var h = hash(n.n) % 60;
  switch (n.k) {
  case 0: return 'rgb(200,200,200)';
  case 1: return 'rgb(180,180,' + (190 + h % 40) + ')';
  case 3: return 'rgb(230,' + (130 + h) + ',40)';
  case 4: return 'rgb(' + (60 + h) + ',180,' + (120 + h) + ')';
  case 5: return 'rgb(' + (50 + h) + ',' + (190 + (h >> 1)) + ',60)';
  default: return 'rgb(240,' + (90 + 2 * h) + ',50)';
  }
}
function matches(n) {
  if (!re || n.k === 0) return false;
  try { return re.test(n.n); } catch (e) { return false; }
}
/* The tooltip: name and figures, then the hottest lines (the page's JSON holds
   them already sorted and cut, as [line, total0, total1]). */
function label(n) {
  var s = disp(n) + ' \u2014 ' + figures(n.t[side], TOT);
  if (diff) s += '; before ' + figures(n.t[0], T0) + '; ' + pp(n.delta);
  (n.l || []).forEach(function (l) {
    s += '\n  line ' + l[0] + ': ' + value(l[1 + side]) + ', ' +
      pct(l[1 + side], n.t[side]);
    if (diff) s += ' (before ' + count(l[1]) + ', ' + pct(l[1], n.t[0]) + ')';
  });
  if (n.lm) s += '\n  ' + n.lm + ' more line' + (n.lm > 1 ? 's' : '');
  return s;
}
/* The frames to draw at width W: [node, x, w, depth] */
function layout(W) {
  var zt = zoom.t[side], items = [], anc = [], a;
  for (a = zoom.p; a; a = a.p) anc.unshift(a);
  anc.forEach(function (n, i) { items.push([n, 0, W, i]); });
  (function walk(n, x, w, d) {
    if (w < 0.5) return;
    items.push([n, x, w, d]);
    for (var i = 0, cx = x; i < n.c.length; i++) {
      var cw = zt ? W * n.c[i].t[side] / zt : 0;
      walk(n.c[i], cx, cw, d + 1);
      cx += cw;
    }
  })(zoom, 0, W, anc.length);
  items.anc = anc.length;
  return items;
}
function depthOf(items) {
  var maxd = items.anc;
  items.forEach(function (it) { if (it[3] > maxd) maxd = it[3]; });
  return maxd;
}
function draw() {
  chart.textContent = '';
  var W = chart.clientWidth || 1000, items = layout(W), anc = items.anc;
  chart.style.height = ((depthOf(items) + 1) * ROW) + 'px';
  var frag = document.createDocumentFragment();
  items.forEach(function (it) {
    var n = it[0], e = document.createElement('div');
    e.className = 'fr' + (matches(n) ? ' m' : '') + (it[3] < anc ? ' anc' : '');
    e.style.left = it[1] + 'px';
    e.style.width = Math.max(it[2] - 1, 0.5) + 'px';
    e.style[icicle ? 'top' : 'bottom'] = (it[3] * ROW) + 'px';
    if (!e.className.match(/ m/)) e.style.background = color(n);
    if (it[2] > 35) e.textContent = disp(n);
    e.addEventListener('mousemove', function (ev) {
      tip.textContent = label(n);
      tip.style.display = 'block';
      tip.style.left = (ev.pageX + 12) + 'px';
      tip.style.top = (ev.pageY + 12) + 'px';
    });
    e.addEventListener('mouseout', function () { tip.style.display = 'none'; });
    e.addEventListener('click', function () { zoom = n; draw(); });
    frag.appendChild(e);
  });
  chart.appendChild(frag);
  report();
}
function report() {
  if (!re) { matchEl.textContent = ''; return; }
  var m = 0;
  (function walk(n) {
    if (matches(n)) { m += n.t[side]; return; }
    for (var i = 0; i < n.c.length; i++) walk(n.c[i]);
  })(root);
  matchEl.textContent = 'matched ' + value(m) + ' (' + pct(m, TOT) + ')';
}
function quote(s) { return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'); }
function find(name) { search.value = quote(name); search.dispatchEvent(new Event('input')); }
search.addEventListener('input', function () {
  var q = search.value;
  if (!q) re = null;
  else { try { re = new RegExp(q); } catch (e) { re = new RegExp(quote(q)); } }
  draw();
});
document.getElementById('reset').addEventListener('click', function () {
  zoom = root; draw();
});
function setOrientation(ice) {
  icicle = ice;
  toggle.textContent = icicle ? 'Flame' : 'Icicle';
}
toggle.addEventListener('click', function () { setOrientation(!icicle); draw(); });
function cell(tr, text, cls) {
  var td = document.createElement('td');
  td.className = cls;
  td.textContent = String(text);
  tr.appendChild(td);
}
/* Functions with self and total per side, recursion counted once. */
function topTable() {
  var m = Object.create(null), onpath = Object.create(null), list = [];
  (function walk(n) {
    var fn = n.k >= 2;
    if (fn) {
      var e = m[n.n] || (m[n.n] = {n: n.n, s: [0, 0], t: [0, 0]});
      e.s[0] += n.s[0]; e.s[1] += n.s[1];
      if (!onpath[n.n]) { e.t[0] += n.t[0]; e.t[1] += n.t[1]; }
      onpath[n.n] = (onpath[n.n] || 0) + 1;
    }
    for (var i = 0; i < n.c.length; i++) walk(n.c[i]);
    if (fn) onpath[n.n]--;
  })(root);
  for (var k in m) if (m[k].s[side] || m[k].t[side] || (diff && m[k].t[0])) list.push(m[k]);
  list.sort(function (a, b) {
    return b.s[side] - a.s[side] || b.t[side] - a.t[side] || b.s[0] - a.s[0] ||
      (a.n < b.n ? -1 : a.n > b.n ? 1 : 0);
  });
  var body = document.querySelector('#top tbody');
  list.slice(0, 200).forEach(function (e) {
    var tr = document.createElement('tr');
    cell(tr, e.n, 'fn');
    if (diff) {
      cell(tr, pct(e.s[0], T0), 'num'); cell(tr, pct(e.s[1], T1), 'num');
      cell(tr, pp((T1 ? e.s[1] / T1 : 0) - (T0 ? e.s[0] / T0 : 0)), 'num');
      cell(tr, pct(e.t[0], T0), 'num'); cell(tr, pct(e.t[1], T1), 'num');
      cell(tr, pp((T1 ? e.t[1] / T1 : 0) - (T0 ? e.t[0] / T0 : 0)), 'num');
    } else {
      cell(tr, UNIT ? unit(e.s[0]) : count(e.s[0]), 'num'); cell(tr, pct(e.s[0], TOT), 'num');
      cell(tr, UNIT ? unit(e.t[0]) : count(e.t[0]), 'num'); cell(tr, pct(e.t[0], TOT), 'num');
    }
    tr.addEventListener('click', function () { find(e.n); });
    body.appendChild(tr);
  });
}
[].forEach.call(document.querySelectorAll('#movers td.fn'), function (td) {
  td.addEventListener('click', function () { find(td.textContent); });
});
function side_total(t) { return value(t) + (PERIOD && !UNIT ? ', ' + cpu(t) + ' CPU' : ''); }
document.getElementById('total').textContent = diff ?
  'before ' + side_total(T0) + '; after ' + side_total(T1) : side_total(TOT);
topTable();
/* Open on the answer: a graph taller than what is left of the window below the
   chart's top is drawn as an icicle (root at the top, right under the controls);
   one that fits as a flame graph. The toggle flips it either way. */
(function () {
  var top = chart.getBoundingClientRect().top + window.scrollY;
  var rows = depthOf(layout(chart.clientWidth || 1000)) + 1;
  setOrientation(top + rows * ROW > window.innerHeight);
})();
draw();
window.addEventListener('resize', draw);
})();
