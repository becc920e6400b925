var svg, details, unzoombtn, searchbtn, matchedtxt, frames = [], searching = false;
function attr(e, a) { return parseFloat(e.getAttribute(a)); }
function init(evt) {
  svg = document.documentElement;
  details = document.getElementById('details').firstChild;
  unzoombtn = document.getElementById('unzoom');
  searchbtn = document.getElementById('search');
  matchedtxt = document.getElementById('matched');
  var gs = document.getElementsByTagName('g');
  for (var i = 0; i < gs.length; i++) {
    var g = gs[i];
    if (g.getAttribute('class') !== 'f') continue;
    var r = g.getElementsByTagName('rect')[0];
    var t = g.getElementsByTagName('title')[0].textContent.split('\n')[0];
    var k = t.lastIndexOf(' \u2014 ');
    g._rect = r; g._text = g.getElementsByTagName('text')[0];
    g._ox = attr(r, 'x'); g._ow = attr(r, 'width'); g._oy = attr(r, 'y');
    g._fill = r.getAttribute('fill'); g._tip = t;
    g._name = k >= 0 ? t.substring(0, k) : t;
    frames.push(g);
  }
  svg.addEventListener('click', function (e) {
    var el = e.target;
    if (el === unzoombtn || el.parentNode === unzoombtn) { unzoom(); return; }
    if (el === searchbtn || el.parentNode === searchbtn) { search_prompt(); return; }
    var g = frame_of(el); if (g) zoom(g);
  });
  svg.addEventListener('mouseover', function (e) {
    var g = frame_of(e.target); details.nodeValue = g ? g._tip : ' ';
  });
  svg.addEventListener('mouseout', function (e) { details.nodeValue = ' '; });
  window.addEventListener('keydown', function (e) {
    if (e.keyCode === 114 || ((e.ctrlKey || e.metaKey) && e.keyCode === 70)) {
      e.preventDefault(); search_prompt();
    }
  });
}
function frame_of(el) {
  while (el && el !== svg) {
    if (el.getAttribute && el.getAttribute('class') === 'f') return el;
    el = el.parentNode;
  }
  return null;
}
function place(g, x, w) {
  g._rect.setAttribute('x', x); g._rect.setAttribute('width', w);
  g._text.setAttribute('x', x + 3);
  var n = Math.floor((w - 3) / (FONT_SIZE * FONT_W)), s = g._name;
  g._text.textContent = n < 3 ? '' : s.length <= n ? s : s.substring(0, n - 2) + '..';
}
function zoom(z) {
  var x = z._ox, w = z._ow, y = z._oy, sc = FULL_W / w, eps = 0.01;
  unzoombtn.setAttribute('class', '');
  for (var i = 0; i < frames.length; i++) {
    var g = frames[i];
    var up = ICICLE ? g._oy < y : g._oy > y, down = ICICLE ? g._oy >= y : g._oy <= y;
    if (up && g._ox <= x + eps && g._ox + g._ow >= x + w - eps) {
      g.style.display = ''; g.style.opacity = '0.6'; place(g, XPAD, FULL_W);
    } else if (down && g._ox >= x - eps && g._ox + g._ow <= x + w + eps) {
      g.style.display = ''; g.style.opacity = ''; place(g, XPAD + (g._ox - x) * sc, g._ow * sc);
    } else {
      g.style.display = 'none';
    }
  }
}
function unzoom() {
  unzoombtn.setAttribute('class', 'hide');
  for (var i = 0; i < frames.length; i++) {
    var g = frames[i];
    g.style.display = ''; g.style.opacity = ''; place(g, g._ox, g._ow);
  }
}
function reset_search() {
  for (var i = 0; i < frames.length; i++) frames[i]._rect.setAttribute('fill', frames[i]._fill);
  searching = false; searchbtn.firstChild.nodeValue = 'Search';
  matchedtxt.firstChild.nodeValue = ' ';
}
function search_prompt() {
  if (searching) { reset_search(); return; }
  var term = prompt('Enter a search term (regexp allowed, eg: ^ext4_)', '');
  if (term) search(term);
}
function search(term) {
  var re, hits = [], sum = 0, end = -1;
  try { re = new RegExp(term); } catch (err) { return; }
  for (var i = 0; i < frames.length; i++) {
    if (re.test(frames[i]._name)) {
      frames[i]._rect.setAttribute('fill', 'rgb(230,0,230)'); hits.push(frames[i]);
    }
  }
  if (!hits.length) return;
  searching = true; searchbtn.firstChild.nodeValue = 'Reset Search';
  /* Frames form nested x ranges: sorted by start, widest first, a match inside
     the last counted range is a nested one and adds nothing. */
  hits.sort(function (a, b) { return a._ox - b._ox || b._ow - a._ow; });
  for (var j = 0; j < hits.length; j++) {
    if (hits[j]._ox + hits[j]._ow <= end + 0.01) continue;
    sum += hits[j]._ow; end = hits[j]._ox + hits[j]._ow;
  }
  matchedtxt.firstChild.nodeValue = 'Matched: ' + (100 * sum / FULL_W).toFixed(1) + '%';
}
