/* Interactive HTML flame graph (see render_html.h): writes the page skeleton, the
 * flame tree as JSON (strings through render_json_string_n, which escapes '<' so
 * the data cannot close its <script> element), and the inline CSS and JS below,
 * which draw the tree with absolutely positioned divs and build the top-functions
 * table. The page references no external resource. */
#include "query/render_html.h"
#include "query/render_json.h"

#include <errno.h>
#include <string.h>

static const char page_css[] =
	"body { font: 13px sans-serif; margin: 12px; }\n"
	"h1 { font-size: 18px; margin: 0 0 8px; }\n"
	"#bar { margin-bottom: 8px; }\n"
	"#bar input { width: 260px; }\n"
	"#match { margin-left: 12px; color: #a0a; }\n"
	"#chart { position: relative; width: 100%; overflow: hidden; min-height: 20px; }\n"
	".fr { position: absolute; height: 16px; line-height: 16px; font: 11px monospace; "
	"overflow: "
	"hidden; white-space: nowrap; text-overflow: ellipsis; cursor: pointer; border-radius: "
	"2px; "
	"padding-left: 2px; box-sizing: border-box; }\n"
	".fr:hover { outline: 1px solid #000; }\n"
	".fr.m { background: rgb(230,0,230); color: #fff; }\n"
	".fr.anc { opacity: 0.6; }\n"
	"#tip { position: absolute; display: none; background: #ffe; border: 1px solid #888; "
	"padding: "
	"4px 6px; white-space: pre; font: 12px monospace; pointer-events: none; z-index: 10; }\n"
	"#top { border-collapse: collapse; margin-top: 8px; }\n"
	"#top td, #top th { padding: 2px 8px; border-bottom: 1px solid #ddd; }\n"
	"#top td.num { text-align: right; font-family: monospace; }\n"
	"#top td.fn { font-family: monospace; max-width: 700px; overflow: hidden; text-overflow: "
	"ellipsis; white-space: nowrap; cursor: pointer; }\n";

static const char page_js[] =
	"(function () {\n"
	"'use strict';\n"
	"var data = JSON.parse(document.getElementById('data').textContent);\n"
	"var root = data.tree, diff = data.diff, side = diff ? 1 : 0;\n"
	"var T0 = root.t[0], T1 = root.t[1], TOT = root.t[side];\n"
	"var chart = document.getElementById('chart'), tip = document.getElementById('tip');\n"
	"var search = document.getElementById('search'), matchEl = "
	"document.getElementById('match');\n"
	"var zoom = root, icicle = false, re = null, ROW = 17, maxAbs = 0;\n"
	"function prep(n, p, d) {\n"
	"  n.p = p; n.d = d;\n"
	"  if (diff) {\n"
	"    n.delta = (T1 ? n.t[1] / T1 : 0) - (T0 ? n.t[0] / T0 : 0);\n"
	"    maxAbs = Math.max(maxAbs, Math.abs(n.delta));\n"
	"  }\n"
	"  for (var i = 0; i < n.c.length; i++) prep(n.c[i], n, d + 1);\n"
	"}\n"
	"prep(root, null, 0);\n"
	"function pct(v, t) { return t ? (100 * v / t).toFixed(2) + '%' : '0%'; }\n"
	"function hash(s) { var h = 0; for (var i = 0; i < s.length; i++) h = (h * 31 + "
	"s.charCodeAt(i)) >>> 0; return h; }\n"
	"function color(n) {\n"
	"  if (diff) {\n"
	"    var r = maxAbs ? Math.min(1, Math.abs(n.delta) / maxAbs) : 0, c = Math.round(255 * (1 "
	"- "
	"r));\n"
	"    return n.delta > 0 ? 'rgb(255,' + c + ',' + c + ')' : n.delta < 0 ? 'rgb(' + c + ',' "
	"+ c "
	"+ ',255)' : 'rgb(255,255,255)';\n"
	"  }\n"
	"  var h = hash(n.n) % 60;\n"
	"  switch (n.k) {\n"
	"  case 0: return 'rgb(200,200,200)';\n"
	"  case 1: return 'rgb(180,180,' + (190 + h % 40) + ')';\n"
	"  case 3: return 'rgb(230,' + (130 + h) + ',40)';\n"
	"  case 4: return 'rgb(' + (60 + h) + ',180,' + (120 + h) + ')';\n"
	"  case 5: return 'rgb(' + (50 + h) + ',' + (190 + (h >> 1)) + ',60)';\n"
	"  default: return 'rgb(240,' + (90 + 2 * h) + ',50)';\n"
	"  }\n"
	"}\n"
	"function matches(n) { if (!re || n.k === 0) return false; try { return re.test(n.n); } "
	"catch "
	"(e) { return false; } }\n"
	"function label(n) {\n"
	"  var s = n.n + '\\n' + n.t[side] + ' samples (' + pct(n.t[side], TOT) + ')';\n"
	"  if (diff) s += '\\nbefore ' + n.t[0] + ' (' + pct(n.t[0], T0) + '), after ' + n.t[1] + "
	"' (' "
	"+ pct(n.t[1], T1) + '), delta ' + (100 * n.delta).toFixed(2) + ' pp';\n"
	"  return s;\n"
	"}\n"
	"function draw() {\n"
	"  chart.textContent = '';\n"
	"  var W = chart.clientWidth || 1000, zt = zoom.t[side], items = [], maxd = 0, anc = [], "
	"a;\n"
	"  for (a = zoom.p; a; a = a.p) anc.unshift(a);\n"
	"  anc.forEach(function (n, i) { items.push([n, 0, W, i]); });\n"
	"  (function walk(n, x, w, d) {\n"
	"    if (w < 0.5) return;\n"
	"    items.push([n, x, w, d]);\n"
	"    if (d > maxd) maxd = d;\n"
	"    for (var i = 0, cx = x; i < n.c.length; i++) {\n"
	"      var cw = zt ? W * n.c[i].t[side] / zt : 0;\n"
	"      walk(n.c[i], cx, cw, d + 1);\n"
	"      cx += cw;\n"
	"    }\n"
	"  })(zoom, 0, W, anc.length);\n"
	"  maxd = Math.max(maxd, anc.length);\n"
	"  chart.style.height = ((maxd + 1) * ROW) + 'px';\n"
	"  var frag = document.createDocumentFragment();\n"
	"  items.forEach(function (it) {\n"
	"    var n = it[0], e = document.createElement('div');\n"
	"    e.className = 'fr' + (matches(n) ? ' m' : '') + (it[3] < anc.length ? ' anc' : '');\n"
	"    e.style.left = it[1] + 'px';\n"
	"    e.style.width = Math.max(it[2] - 1, 0.5) + 'px';\n"
	"    e.style[icicle ? 'top' : 'bottom'] = (it[3] * ROW) + 'px';\n"
	"    if (!e.className.match(/ m/)) e.style.background = color(n);\n"
	"    if (it[2] > 35) e.textContent = n.n;\n"
	"    e.addEventListener('mousemove', function (ev) {\n"
	"      tip.textContent = label(n);\n"
	"      tip.style.display = 'block';\n"
	"      tip.style.left = (ev.pageX + 12) + 'px';\n"
	"      tip.style.top = (ev.pageY + 12) + 'px';\n"
	"    });\n"
	"    e.addEventListener('mouseout', function () { tip.style.display = 'none'; });\n"
	"    e.addEventListener('click', function () { zoom = n; draw(); });\n"
	"    frag.appendChild(e);\n"
	"  });\n"
	"  chart.appendChild(frag);\n"
	"  report();\n"
	"}\n"
	"function report() {\n"
	"  if (!re) { matchEl.textContent = ''; return; }\n"
	"  var m = 0;\n"
	"  (function walk(n) {\n"
	"    if (matches(n)) { m += n.t[side]; return; }\n"
	"    for (var i = 0; i < n.c.length; i++) walk(n.c[i]);\n"
	"  })(root);\n"
	"  matchEl.textContent = 'matched ' + m + ' samples (' + pct(m, TOT) + ')';\n"
	"}\n"
	"search.addEventListener('input', function () {\n"
	"  var q = search.value;\n"
	"  if (!q) re = null;\n"
	"  else { try { re = new RegExp(q); } catch (e) { re = new "
	"RegExp(q.replace(/[.*+?^${}()|[\\]\\\\]/g, '\\\\$&')); } }\n"
	"  draw();\n"
	"});\n"
	"document.getElementById('reset').addEventListener('click', function () { zoom = root; "
	"draw(); "
	"});\n"
	"var toggle = document.getElementById('toggle');\n"
	"toggle.addEventListener('click', function () {\n"
	"  icicle = !icicle;\n"
	"  toggle.textContent = icicle ? 'Flame' : 'Icicle';\n"
	"  draw();\n"
	"});\n"
	"function topTable() {\n"
	"  var m = Object.create(null), onpath = Object.create(null), list = [];\n"
	"  (function walk(n) {\n"
	"    var fn = n.k >= 2;\n"
	"    if (fn) {\n"
	"      var e = m[n.n] || (m[n.n] = {n: n.n, s: 0, t: 0});\n"
	"      e.s += n.s[side];\n"
	"      if (!onpath[n.n]) e.t += n.t[side];\n"
	"      onpath[n.n] = (onpath[n.n] || 0) + 1;\n"
	"    }\n"
	"    for (var i = 0; i < n.c.length; i++) walk(n.c[i]);\n"
	"    if (fn) onpath[n.n]--;\n"
	"  })(root);\n"
	"  for (var k in m) if (m[k].s || m[k].t) list.push(m[k]);\n"
	"  list.sort(function (a, b) { return b.s - a.s || b.t - a.t || (a.n < b.n ? -1 : a.n > "
	"b.n ? "
	"1 : 0); });\n"
	"  var body = document.querySelector('#top tbody');\n"
	"  list.slice(0, 200).forEach(function (e) {\n"
	"    var tr = document.createElement('tr');\n"
	"    [[e.n, 'fn'], [e.s, 'num'], [pct(e.s, TOT), 'num'], [e.t, 'num'], [pct(e.t, TOT), "
	"'num']].forEach(function (c) {\n"
	"      var td = document.createElement('td');\n"
	"      td.className = c[1];\n"
	"      td.textContent = String(c[0]);\n"
	"      tr.appendChild(td);\n"
	"    });\n"
	"    tr.addEventListener('click', function () { search.value = "
	"e.n.replace(/[.*+?^${}()|[\\]\\\\]/g, '\\\\$&'); search.dispatchEvent(new "
	"Event('input')); "
	"});\n"
	"    body.appendChild(tr);\n"
	"  });\n"
	"}\n"
	"document.getElementById('total').textContent = diff ? ('before ' + T0 + ' samples, after "
	"' + "
	"T1 + ' samples') : (TOT + ' samples');\n"
	"topTable();\n"
	"draw();\n"
	"window.addEventListener('resize', draw);\n"
	"})();\n";

static void html_escape(FILE *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&':
			fputs("&amp;", out);
			break;
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		case '\'':
			fputs("&#39;", out);
			break;
		default:
			fputc(*s, out);
		}
	}
}

/* The page's own kind codes ("k" in its data, read by its script): 0 root,
 * 1 process, 2 native, 3 kernel, 4 Python, 5 JIT; functions are the codes >= 2. */
static unsigned page_kind(uint32_t kind)
{
	switch (kind) {
	case FLAME_ROOT:
		return 0;
	case FRAME_PROCESS:
		return 1;
	case FRAME_KERNEL:
		return 3;
	case FRAME_PYTHON:
		return 4;
	case FRAME_JIT:
		return 5;
	default:
		return 2;
	}
}

/* Depth is bounded by flame__add's 2048-frame limit, so recursion is safe. */
static void write_node(FILE *out, const struct flame_node *n)
{
	uint32_t i;

	fputs("{\"n\":", out);
	render_json_string_n(out, n->name ? n->name : "", n->name ? strlen(n->name) : 0);
	fprintf(out, ",\"k\":%u,\"s\":[%llu,%llu],\"t\":[%llu,%llu],\"c\":[",
		page_kind(n->frame.kind), (unsigned long long)n->self[0],
		(unsigned long long)n->self[1], (unsigned long long)n->total[0],
		(unsigned long long)n->total[1]);
	for (i = 0; i < n->nchildren; i++) {
		if (i)
			fputc(',', out);
		write_node(out, n->children[i]);
	}
	fputs("]}", out);
}

int render_html(const struct flame *f, const struct render_html_options *o, FILE *out)
{
	const char *title = o && o->title ? o->title : "smolder flame graph";
	bool diff = o && o->diff;

	if (!f || !out)
		return -EINVAL;
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>",
	      out);
	html_escape(out, title);
	fputs("</title>\n<style>\n", out);
	fputs(page_css, out);
	fputs("</style>\n</head>\n<body>\n<h1>", out);
	html_escape(out, title);
	fputs("</h1>\n<div id=\"bar\"><input id=\"search\" type=\"search\" "
	      "placeholder=\"search (regex)\"> <button id=\"reset\">Reset zoom</button> "
	      "<button id=\"toggle\">Icicle</button> <span id=\"total\"></span>"
	      "<span id=\"match\"></span></div>\n",
	      out);
	if (diff)
		fputs("<p>Differential: width is the after profile; red grew, blue shrank "
		      "(share of samples, normalized to the largest change).</p>\n",
		      out);
	fputs("<div id=\"chart\"></div>\n<div id=\"tip\"></div>\n<h2>Top functions</h2>\n"
	      "<table id=\"top\"><thead><tr><th>function</th><th>self</th><th>self %</th>"
	      "<th>total</th><th>total %</th></tr></thead><tbody></tbody></table>\n"
	      "<script type=\"application/json\" id=\"data\">{\"title\":",
	      out);
	render_json_string_n(out, title, strlen(title));
	fprintf(out, ",\"diff\":%s,\"tree\":", diff ? "true" : "false");
	write_node(out, flame__root(f));
	fputs("}</script>\n<script>\n", out);
	fputs(page_js, out);
	fputs("</script>\n</body>\n</html>\n", out);
	return ferror(out) ? -EIO : 0;
}
