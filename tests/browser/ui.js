/* Drives the collector's web UI ("/", ui/) in headless Chromium, run by
 * tests/integration/test_ui.c, which posts a profile with a spike, computes every
 * expected number from it and writes them to the JSON file named by argv[2]. This
 * script loads the page, drags, types, clicks and compares, and prints one
 * "ok - ..." or "not ok - ..." line per check (exit 1 if any failed), and
 * "measure - ..." lines with timings.
 *
 * Checked: the page loads with no console error, no uncaught exception and no
 * failed request; the timeline's peak is the step and count the test posted;
 * a drag across the spike selects exactly the expected windows, and the flame
 * graph's total is their sum; the top table's first row (by self) is the spike's
 * function, and clicking it highlights its frames and opens its sandwich (callers
 * and callees); a search's matched samples and
 * share; a click zooms (the frame fills the width, the breadcrumb names the path)
 * and the keyboard zooms out; the flame/icicle toggle; a permalink opened in a
 * new page gives the same frames, total and search; compare mode with a baseline
 * dragged before the spike: the movers table's first row is the expected mover
 * with its shares, and its frame is red; compare two label selections over the
 * same range (service=store against service=web, filters added for one side
 * each): both sides' totals, the top mover, the chips, the URL, the colours; a
 * pruned answer (nodes=16 in the URL, zoomed into a function whose callees were
 * left out): the summary, the note under the breadcrumb with the samples left
 * out, the top table from /api/v1/top, and More detail loading the callees
 * with the zoom kept; a click zooming into that function asks for its callees
 * at once; a range with no data says so; exports
 * download SVG and folded; a bad
 * filter in the URL shows the API's error; the token dialog (a wrong token is
 * refused, the right one kept for the tab).
 *
 * What is drawn is judged from screenshots of the canvas (png.js), not from the
 * page's record alone: every wide frame's box in its colour and its name in ink,
 * the highlight's magenta on the picked function's frames only, the diff's red
 * and blue, and the selection's flame graph against a reference screenshot
 * (tests/browser/ref/) within 1 % of its pixels.
 */
'use strict';

const fs = require('fs');
const path = require('path');
const { check, counts, launch } = require('./harness');
const png = require('./png');

const want = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const STEP_MS = 15000; /* bound on one wait for the page */

/* A fresh page that records console errors, uncaught exceptions and failed or
 * refused requests into errors. */
async function open(context, url, errors, label) {
  const page = await context.newPage();
  page.setDefaultTimeout(STEP_MS);
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(label + ': console: ' + m.text() + ' (' + m.location().url + ')');
  });
  page.on('pageerror', (e) => errors.push(label + ': exception: ' + e.stack));
  page.on('requestfailed', (r) => errors.push(label + ': request failed: ' + r.url() + ' ' + r.failure().errorText));
  page.on('response', (r) => {
    if (r.status() >= 400) errors.push(label + ': ' + r.status() + ' for ' + r.url());
  });
  const t0 = Date.now();
  const resp = await page.goto(url, { waitUntil: 'load' });
  check(resp && resp.status() === 200, label + ': served with 200', resp && resp.status());
  page.t0 = t0;
  return page;
}

async function ready(page) {
  await page.waitForFunction(() => {
    const b = document.getElementById('flame-box');
    return b.dataset.state === 'ready' || b.dataset.state === 'error';
  });
  return page.$eval('#flame-box', (b) => b.dataset.state);
}

/* Waits until the flame graph has been redrawn for a new query (state leaves
 * "ready" then comes back). */
async function reloaded(page, action) {
  await page.$eval('#flame-box', (b) => (b.dataset.state = 'stale'));
  await action();
  return ready(page);
}

async function frames(page) {
  return page.evaluate(() => window.smolder.frames());
}

/* drags on the timeline from time a to time b (unix seconds) */
async function dragTimeline(page, a, b) {
  const box = await page.$eval('#timeline .u-over', (e) => {
    const r = e.getBoundingClientRect();
    return { left: r.left, top: r.top, width: r.width, height: r.height };
  });
  const from = Number(await page.$eval('#timeline', (e) => e.dataset.from));
  const to = Number(await page.$eval('#timeline', (e) => e.dataset.to));
  const x = (t) => box.left + ((t - from) / (to - from)) * box.width;
  const y = box.top + box.height / 2;
  await page.mouse.move(x(a), y);
  await page.mouse.down();
  await page.mouse.move((x(a) + x(b)) / 2, y, { steps: 4 });
  await page.mouse.move(x(b), y, { steps: 4 });
  await page.mouse.up();
}

async function clickFrame(page, name) {
  const f = (await frames(page)).find((r) => r.name === name);
  if (!f) return false;
  const box = await page.$eval('#flame', (e) => {
    const r = e.getBoundingClientRect();
    return { left: r.left, top: r.top };
  });
  await page.mouse.click(box.left + f.x + Math.min(f.w / 2, 40), box.top + f.y + 8);
  return true;
}

function rgb(fill) {
  const m = /^rgb\((\d+),(\d+),(\d+)\)$/.exec(fill);
  return m ? m.slice(1).map(Number) : null;
}

async function shot(page, name) {
  fs.mkdirSync(want.shots, { recursive: true });
  await page.screenshot({ path: path.join(want.shots, name + '.png'), fullPage: true });
}

/* ---- what a person sees: pixels of a screenshot, not the page's own record ---- */

/* the RGB of a CSS colour as this browser resolves it */
async function cssRgb(page, colour) {
  return page.evaluate((c) => {
    const cv = document.createElement('canvas');
    cv.width = cv.height = 1;
    const x = cv.getContext('2d');
    x.fillStyle = c;
    x.fillRect(0, 0, 1, 1);
    return [...x.getImageData(0, 0, 1, 1).data.slice(0, 3)];
  }, colour);
}

/* A screenshot of the flame graph's canvas, decoded (coordinates in CSS pixels:
 * the context's scale factor is 1). */
async function flameShot(page) {
  return png.decode(await page.locator('#flame').screenshot());
}

/* Pixels far from colour c in a frame's name area (its left 48 px, the middle of
 * its row), where the name's glyphs are drawn. */
function ink(img, f, c) {
  let n = 0;
  for (let y = f.y + 4; y < f.y + 14; y++)
    for (let x = f.x + 3; x < f.x + Math.min(f.w - 3, 51); x++)
      if (png.distance(img.px(x, y), c) > 80) n++;
  return n;
}

/* The share of a frame's box (inside its outline) that is within 12 of colour c. */
function filled(img, f, c) {
  let n = 0, all = 0;
  for (let y = f.y + 3; y < f.y + 15; y++)
    for (let x = f.x + 3; x < f.x + f.w - 3; x++, all++)
      if (png.distance(img.px(x, y), c) <= 12) n++;
  return all ? n / all : 0;
}

/* Every frame at least 40 px wide shows its colour on the screen (most of its
 * box: the name and an outline cover the rest), and every frame at least 120 px
 * wide shows its name (ink in the name area). Minimum: 8 boxes and 3 names looked
 * at. Returns the screenshot. */
async function checkDrawn(page, label) {
  const img = await flameShot(page), fr = await frames(page);
  const wrong = [], blank = [];
  let boxes = 0, names = 0;
  for (const f of fr) {
    if (f.w < 40) continue;
    const want = await cssRgb(page, f.fill), share = filled(img, f, want);
    boxes++;
    if (share < 0.5) wrong.push([f.name, want, img.px(f.x + f.w / 2, f.y + 9), share]);
    if (f.w < 120) continue;
    names++;
    if (ink(img, f, want) < 10) blank.push(f.name);
  }
  check(boxes >= 8 && wrong.length === 0, label + ': each frame\'s box shows its colour on the screen (' + boxes + ')',
    [boxes, wrong.slice(0, 5)]);
  check(names >= 3 && blank.length === 0, label + ': each wide frame shows its name (' + names + ')', [names, blank]);
  return img;
}

/* The screenshot against the reference in tests/browser/ref/NAME.png: at most 1 %
 * of the pixels may differ by more than 48 in a channel (text antialiasing, a
 * font hinting change). SMOLDER_UI_REFS=write makes the reference instead. */
function checkReference(img, buf, name) {
  const ref = path.join(__dirname, 'ref', name + '.png');
  if (process.env.SMOLDER_UI_REFS === 'write') {
    fs.mkdirSync(path.dirname(ref), { recursive: true });
    fs.writeFileSync(ref, buf);
    console.log('measure - wrote the reference ' + ref);
    return;
  }
  const share = png.differing(png.decode(fs.readFileSync(ref)), img, 48);
  check(share <= 0.01, name + ': the screen matches the reference within 1 % of its pixels',
    (100 * share).toFixed(2) + ' %');
}

async function main() {
  const browser = await launch();
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, acceptDownloads: true });
  const errors = [];
  let page = null;
  try {
    /* ---- load, timeline, selection ---- */
    page = await open(context, want.url, errors, 'page');
    check((await ready(page)) === 'ready', 'page: the first flame graph is drawn');
    console.log('measure - navigation to the first flame graph (' +
      (await page.$eval('#summary', (e) => e.dataset.total)) + ' samples, 1 h): ' + (Date.now() - page.t0) + ' ms');
    await page.waitForFunction(() => document.getElementById('peak').dataset.peakT !== undefined);
    const peak = await page.$eval('#peak', (e) => ({ t: Number(e.dataset.peakT), n: Number(e.dataset.peak) }));
    check(peak.t === want.peak.t, 'timeline: the peak is at the spike the test posted', peak.t - want.peak.t);
    check(peak.n === want.peak.samples, 'timeline: the peak has ' + want.peak.samples + ' samples', peak.n);
    await shot(page, '1-whole-hour');

    await reloaded(page, () => dragTimeline(page, want.sel[0] + 4, want.sel[1] - 4));
    const sel = await page.evaluate(() => window.smolder.state.sel);
    check(sel && sel[0] === want.sel[0] && sel[1] === want.sel[1], 'drag: selects the windows dragged over',
      sel && [sel[0] - want.sel[0], sel[1] - want.sel[1]]);
    const total = Number(await page.$eval('#summary', (e) => e.dataset.total));
    check(total === want.total, 'flame: the total is the selection\'s ' + want.total + ' samples', total);
    const root = (await frames(page)).find((f) => f.name === 'all');
    check(root && root.total === want.total, 'flame: the root frame has the total', root && root.total);
    check(/samples/.test(await page.textContent('#summary')), 'flame: the summary names samples');
    check(/^selected /.test(await page.textContent('#selinfo')), 'timeline: the selection is shown');
    const selBuf = await page.locator('#flame').screenshot();
    checkReference(png.decode(selBuf), selBuf, 'selection-flame');
    await checkDrawn(page, 'selection');

    /* ---- top table ---- */
    const first = await page.$eval('#top tbody tr', (tr) => ({ name: tr.dataset.name, self: tr.cells[0].textContent }));
    check(first.name === want.top.name, 'top: the first row by self is ' + want.top.name, first.name);
    check(first.self.replace(/,/g, '') === String(want.top.self), 'top: its self is ' + want.top.self, first.self);
    /* the table is counted from the tree: the same numbers as /api/v1/top */
    const api = await page.evaluate(async (r) => {
      const resp = await fetch('/api/v1/top?format=json&limit=1000&from=' + r[0] + '&to=' + r[1]);
      return (await resp.json()).functions.map((f) => [f.name, f.self, f.total]).sort();
    }, want.sel);
    const mine = await page.$$eval('#top tbody tr', (rows) => rows.map((r) =>
      [r.dataset.name, Number(r.cells[0].textContent.replace(/,/g, '')), Number(r.cells[2].textContent.replace(/,/g, ''))]).sort());
    check(api.length > 5 && JSON.stringify(api) === JSON.stringify(mine), 'top: the same functions and counts as /api/v1/top',
      [api, mine]);
    await page.click('#top th[data-key=name] button');
    const byName = await page.$$eval('#top tbody tr', (rows) => rows.map((r) => r.dataset.name));
    check(byName.length > 3 && byName.every((n, i) => i === 0 || byName[i - 1].localeCompare(n) <= 0),
      'top: sorted by name on a click on its header', byName);
    await page.click('#top th[data-key=self] button');
    await page.fill('#top-filter', 'parse');
    const filtered = await page.$$eval('#top tbody tr', (rows) => rows.map((r) => r.dataset.name));
    check(filtered.length >= 2 && filtered.every((n) => n.includes('parse')), 'top: the filter keeps matching rows', filtered);
    await page.fill('#top-filter', '');
    await page.click('#top tbody tr[data-name="' + want.top.name + '"]');
    let lit = (await frames(page)).filter((f) => f.highlighted);
    check(lit.length >= 1 && lit.every((f) => f.name === want.top.name), 'top: a click highlights the function in the graph',
      lit.map((f) => f.name));
    {
      /* on the screen: the function's frames in the highlight colour, none else */
      const img = await flameShot(page), hl = await cssRgb(page, '#e040fb');
      const on = lit.filter((f) => f.w >= 8).map((f) => filled(img, f, hl));
      const off = (await frames(page)).filter((f) => !f.highlighted && f.w >= 40).map((f) => filled(img, f, hl));
      check(on.length >= 1 && on.every((v) => v >= 0.5) && off.length >= 5 && off.every((v) => v === 0),
        'top: on the screen the highlighted frames, and only they, are magenta', [on, off]);
    }
    /* the sandwich of the picked function: the spike's function is a leaf called
     * by handle only, so its callers are handle, main, app and its callees none */
    await page.click('#sandwich');
    await page.waitForSelector('#sandwich-box:not([hidden])');
    const cl = await page.evaluate(() => window.smolder.callers());
    const ce = await page.evaluate(() => window.smolder.callees());
    const names = (fs) => fs.map((f) => f.name + ':' + f.total).join(' ');
    const t = want.top.self;
    check(names(cl) === [want.top.name, 'handle', 'main', 'app'].map((n) => n + ':' + t).join(' '),
      'sandwich: the callers, each with the function\'s ' + t + ' samples', names(cl));
    check(cl.length && cl[0].y > cl[1].y, 'sandwich: the callers above the function');
    check(names(ce) === want.top.name + ':' + t, 'sandwich: a leaf calls nothing', names(ce));
    check((await page.evaluate(() => location.hash)).includes('sandwich=1'), 'sandwich: in the URL');
    await shot(page, '1a-sandwich');
    await page.click('#top tbody tr[data-name="' + want.top.name + '"]');
    lit = (await frames(page)).filter((f) => f.highlighted);
    check(lit.length === 0, 'top: a second click clears it', lit.length);
    check(await page.isHidden('#sandwich-box'), 'sandwich: closed with it');

    /* ---- search ---- */
    await page.fill('#search', want.search.regex);
    await page.waitForFunction(() => document.getElementById('matched').dataset.samples !== undefined);
    const matched = await page.$eval('#matched', (e) => ({ n: Number(e.dataset.samples), text: e.textContent }));
    check(matched.n === want.search.samples, 'search: matched ' + want.search.samples + ' samples', matched.n);
    check(matched.text.includes('(' + want.search.share + ')'), 'search: share ' + want.search.share, matched.text);
    const re = new RegExp(want.search.regex);
    lit = (await frames(page)).filter((f) => f.highlighted);
    check(lit.length >= 2 && lit.every((f) => re.test(f.name)), 'search: only matching frames highlighted', lit.map((f) => f.name));
    check((await frames(page)).filter((f) => re.test(f.name)).every((f) => f.highlighted), 'search: every matching frame highlighted');

    /* ---- tooltip ---- */
    const cache = (await frames(page)).find((f) => f.name.startsWith('Cache.get'));
    if (cache) {
      const box = await page.$eval('#flame', (e) => e.getBoundingClientRect().toJSON());
      await page.mouse.move(box.left + cache.x + cache.w / 2, box.top + cache.y + 8);
      const tip = await page.textContent('#tip');
      check(/Total: [\d,]+ samples · [\d.]+ m?s CPU/.test(tip), 'tooltip: total with CPU time', tip);
      check(/line 41: /.test(tip), 'tooltip: the per-line breakdown', tip);
    } else {
      check(false, 'tooltip: the Python frame is drawn');
    }

    /* ---- zoom ---- */
    check(await clickFrame(page, want.zoom.name), 'zoom: the frame to click is drawn');
    await page.waitForFunction(() => window.smolder.state.zoom.length > 0);
    const W = await page.$eval('#flame', (e) => e.clientWidth);
    const zf = await frames(page);
    const z = zf.find((f) => f.zoomed);
    check(z && z.name === want.zoom.name && Math.abs(z.w - W) < 1, 'zoom: the clicked frame fills the width', z);
    check(z && z.total === want.zoom.total, 'zoom: its total is ' + want.zoom.total, z && z.total);
    check(zf.every((f) => f.w <= W + 1 && f.x >= -1), 'zoom: every frame inside the width');
    check(!zf.some((f) => f.name === 'db' || f.name === 'scan'), 'zoom: frames outside it are gone');
    const crumbs = await page.$$eval('#crumbs button', (b) => b.map((e) => e.textContent));
    check(JSON.stringify(crumbs) === JSON.stringify(want.zoom.crumbs), 'zoom: the breadcrumb', crumbs);
    await shot(page, '2-spike-zoomed');

    /* ---- permalink ---- */
    await page.click('#permalink');
    const link = await page.$eval('#permalink-url', (e) => e.value);
    check(/#from=\d+&to=\d+&sel=/.test(link), 'permalink: absolute times in the link', link);
    const page2 = await open(context, link, errors, 'permalink');
    check((await ready(page2)) === 'ready', 'permalink: the graph is drawn');
    await page2.waitForFunction(() => document.getElementById('matched').dataset.samples !== undefined);
    const f1 = (await frames(page)).map((f) => [f.name, Math.round(f.x), Math.round(f.w), f.highlighted]);
    const f2 = (await frames(page2)).map((f) => [f.name, Math.round(f.x), Math.round(f.w), f.highlighted]);
    check(f1.length > 3 && JSON.stringify(f1) === JSON.stringify(f2), 'permalink: the same frames, zoom and highlights',
      [f1.length, f2.length]);
    check((await page2.$eval('#matched', (e) => e.textContent)) === matched.text, 'permalink: the same search');
    check(Number(await page2.$eval('#summary', (e) => e.dataset.total)) === want.total, 'permalink: the same total');
    const light = (await frames(page2)).find((f) => f.name === 'main').fill;
    await page2.emulateMedia({ colorScheme: 'dark' });
    await page2.waitForFunction((l) => window.smolder.frames().find((f) => f.name === 'main').fill !== l, light);
    check(true, 'dark mode: the graph is drawn again in dark colours');
    await page2.waitForFunction(() => document.getElementById('peak').dataset.peakT !== undefined);
    await shot(page2, '2a-dark');
    await page2.close();

    /* ---- keyboard, flip ---- */
    await page.focus('#flame');
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => window.smolder.state.zoom.length === 2);
    check(true, 'keyboard: Escape zooms out one level');
    await page.keyboard.press('Escape');
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => window.smolder.state.zoom.length === 0);
    const rootY = () => frames(page).then((fs) => fs.find((f) => f.name === 'all').y);
    const appY = () => frames(page).then((fs) => fs.find((f) => f.name === 'app').y);
    check((await rootY()) < (await appY()), 'icicle: the root on top');
    await page.click('#flip');
    check((await rootY()) > (await appY()), 'flame: the root at the bottom after the toggle');
    await page.click('#flip');

    /* ---- exports ---- */
    for (const [fmt, head] of [['svg', /<svg/], ['folded', /^app;main;/m]]) {
      const [dl] = await Promise.all([page.waitForEvent('download'), page.click('.export[data-format=' + fmt + ']')]);
      const file = await dl.path();
      const body = fs.readFileSync(file, 'utf8');
      check(dl.suggestedFilename().endsWith('.' + fmt) && head.test(body), 'export: ' + fmt + ' downloads',
        dl.suggestedFilename());
    }

    /* ---- label filters ---- */
    const keys = await page.$$eval('#fkey option', (o) => o.map((e) => e.value).filter(Boolean));
    check(keys.includes('service') && keys.includes('comm'), 'filters: the label keys of the range', keys);
    await page.selectOption('#fkey', 'service');
    await page.waitForFunction(() => document.querySelectorAll('#fval option').length > 1);
    const vals = await page.$$eval('#fval option', (o) => o.map((e) => e.value).filter(Boolean));
    check(JSON.stringify(vals) === '["store","web"]', 'filters: the values of service', vals);
    await page.selectOption('#fval', 'store');
    await reloaded(page, () => page.click('#filter-form button[type=submit]'));
    check(Number(await page.$eval('#summary', (e) => e.dataset.total)) === want.store_total,
      'filters: service=store: ' + want.store_total + ' samples in the selection');
    check((await page.evaluate(() => location.hash)).includes('where=service%3Dstore'), 'filters: in the URL');
    await reloaded(page, () => page.click('#chips button'));
    check(Number(await page.$eval('#summary', (e) => e.dataset.total)) === want.total, 'filters: removed again');

    /* ---- compare ---- */
    await page.fill('#search', '');
    await page.click('#compare');
    await page.waitForFunction(() => document.getElementById('flame-box').dataset.state === 'waiting');
    check(!(await page.isHidden('#compare-targets')), 'compare: asks for a baseline');
    await reloaded(page, () => dragTimeline(page, want.base[0] + 4, want.base[1] - 4));
    const st = await page.evaluate(() => window.smolder.state);
    check(st.base && st.base[0] === want.base[0] && st.base[1] === want.base[1], 'compare: the baseline dragged', st.base);
    check(st.sel && st.sel[0] === want.sel[0], 'compare: the selection stays the comparison');
    const row = await page.$eval('#movers tbody tr', (tr) => [...tr.cells].map((c) => c.textContent));
    check(row[3] === want.mover.name, 'compare: the top mover is ' + want.mover.name, row);
    check(row[0] === want.mover.before && row[1] === want.mover.after && row[2] === want.mover.delta,
      'compare: its shares ' + [want.mover.before, want.mover.after, want.mover.delta].join(' '), row);
    const mf = (await frames(page)).find((f) => f.name === want.mover.name);
    const c = mf && rgb(mf.fill);
    check(c && c[0] > c[2] + 40, 'compare: the mover\'s frame is red', mf && mf.fill);
    {
      const img = await checkDrawn(page, 'compare');
      const p = mf && img.px(mf.x + mf.w - 4, mf.y + 3);
      check(p && p[0] > p[2] + 40 && p[0] > p[1] + 20, 'compare: on the screen the mover\'s frame is red', p);
    }
    await shot(page, '3-compare');

    /* ---- compare two selections over the same range ---- */
    await page.click('#clearsel');
    await page.waitForFunction(() => document.getElementById('flame-box').dataset.state === 'waiting');
    check(!(await page.isHidden('#fside')), 'compare: the filter form asks which side a filter is for');
    const addFilter = async (side, key, value) => {
      await page.selectOption('#fside', side);
      await page.selectOption('#fkey', key);
      await page.waitForFunction((v) => [...document.querySelectorAll('#fval option')].some((o) => o.value === v), value);
      await page.selectOption('#fval', value);
      return reloaded(page, () => page.click('#filter-form button[type=submit]'));
    };
    check((await addFilter('bwhere', 'service', 'store')) === 'ready',
      'compare: a baseline filter alone compares with the same range');
    check((await addFilter('awhere', 'service', 'web')) === 'ready', 'compare: a comparison filter too');
    const sm = want.sel_mover;
    const sums = await page.$eval('#summary', (e) => [Number(e.dataset.before), Number(e.dataset.total)]);
    check(sums[0] === sm.before_total && sums[1] === sm.after_total,
      'compare selections: service=store has ' + sm.before_total + ' samples, service=web ' + sm.after_total, sums);
    const srow = await page.$eval('#movers tbody tr', (tr) => [...tr.cells].map((c) => c.textContent));
    check(JSON.stringify(srow) === JSON.stringify([sm.before, sm.after, sm.delta, sm.name]),
      'compare selections: the top mover is ' + [sm.name, sm.before, sm.after, sm.delta].join(' '), srow);
    const chips = await page.$$eval('#chips li', (li) => li.map((e) => e.firstChild.textContent.trim()));
    check(JSON.stringify(chips) === '["baseline: service=store","comparison: service=web"]',
      'compare selections: the filters shown by side', chips);
    const shash = await page.evaluate(() => location.hash);
    check(shash.includes('bwhere=service%3Dstore') && shash.includes('awhere=service%3Dweb') && !shash.includes('base='),
      'compare selections: in the URL', shash);
    const pf = await frames(page), dbf = pf.find((f) => f.name === 'db'), appf = pf.find((f) => f.name === 'app');
    check(dbf && appf && rgb(dbf.fill)[2] > rgb(dbf.fill)[0] + 40 && rgb(appf.fill)[0] > rgb(appf.fill)[2] + 40,
      'compare selections: the baseline\'s process blue, the comparison\'s red', [dbf && dbf.fill, appf && appf.fill]);
    {
      const img = await checkDrawn(page, 'compare selections');
      const b = dbf && img.px(dbf.x + dbf.w - 4, dbf.y + 3), r = appf && img.px(appf.x + appf.w - 4, appf.y + 3);
      check(b && r && b[2] > b[0] + 40 && r[0] > r[2] + 40,
        'compare selections: on the screen the baseline\'s process blue, the comparison\'s red', [b, r]);
    }
    await shot(page, '3a-compare-selections');
    check(errors.length === 0, 'no console error, exception or failed request', errors);

    /* ---- a pruned answer (max_nodes), zoomed: says so, and loads more ---- */
    const wd = want.wide;
    const pp = await open(context, want.url + wd.hash, errors, 'pruned');
    check((await ready(pp)) === 'ready', 'pruned: the graph is drawn');
    check(/ smallest frames not drawn/.test(await pp.textContent('#summary')), 'pruned: the summary says so',
      await pp.textContent('#summary'));
    let wz = (await frames(pp)).find((f) => f.zoomed);
    check(wz && wz.name === wd.fn && wz.total === wd.total, 'pruned: zoomed into ' + wd.fn + ', ' + wd.total + ' samples',
      wz);
    check(!(await frames(pp)).some((f) => f.depth > 3), 'pruned: none of its callees came in the answer');
    await pp.waitForSelector('#pruned:not([hidden])');
    const note = await pp.$eval('#pruned', (e) => ({ n: Number(e.dataset.samples), text: e.textContent }));
    check(note.n === wd.cut && note.text.includes(wd.cut + ' samples (' + wd.share + ') under ' + wd.fn),
      'pruned: ' + wd.cut + ' samples (' + wd.share + ') under it not loaded', note);
    check(note.text.includes('the ' + wd.nodes + ' heaviest frames of ' + wd.frames), 'pruned: how many frames came',
      note.text);
    await pp.waitForFunction(() => document.getElementById('top-box').dataset.state === 'ready');
    const wtop = await pp.$eval('#top tbody tr', (tr) => [tr.dataset.name, tr.cells[0].textContent]);
    check(wtop[0] === wd.fn && wtop[1].replace(/,/g, '') === String(wd.self),
      'pruned: the top table comes from /api/v1/top: ' + wd.fn + ' ' + wd.self, wtop);
    /* every function is in the table, also past its first rows: main, whose
     * samples are all in its callees, sorts last by self and is there once the
     * table is scrolled to its end */
    const listed = await pp.waitForFunction((n) => {
      const a = document.querySelector('aside'), rows = document.querySelectorAll('#top tbody tr');
      a.scrollTop = a.scrollHeight;
      rows[rows.length - 1].scrollIntoView();
      return rows.length === n;
    }, wd.functions, { polling: 100 }).then(() => true, () => false);
    const mainRow = await pp.$$eval('#top tbody tr', (rows) => rows.filter((r) => r.dataset.name === 'main')
      .map((r) => [r.cells[0].textContent, r.cells[2].textContent, r.cells[3].textContent]));
    check(listed && mainRow.length === 1 && mainRow[0][0] === '0' &&
      mainRow[0][1].replace(/,/g, '') === String(wd.main_total) && mainRow[0][2] === '100.00%',
      'top: all ' + wd.functions + ' functions listed, main among them (0 self, ' + wd.main_total + ' total)',
      [await pp.$$eval('#top tbody tr', (rows) => rows.length), mainRow]);
    await pp.$eval('aside', (a) => { a.scrollTop = 0; });
    await shot(pp, '4-pruned');
    check((await reloaded(pp, () => pp.click('#more-detail'))) === 'ready', 'pruned: More detail asks again');
    check((await pp.evaluate(() => window.smolder.state.nodes)) === wd.nodes * 10, 'pruned: ten times the frames');
    check(await pp.isHidden('#pruned'), 'pruned: nothing left out now');
    wz = (await frames(pp)).find((f) => f.zoomed);
    check(wz && wz.name === wd.fn, 'pruned: the zoom stays', wz);
    const leaves = (await frames(pp)).filter((f) => f.depth === 4);
    check(leaves.length === wd.leaves && leaves.reduce((a, f) => a + f.total, 0) === wd.cut,
      'pruned: its ' + wd.leaves + ' callees, ' + wd.cut + ' samples, are drawn', leaves);
    check((await pp.evaluate(() => location.hash)).includes('nodes=' + wd.nodes * 10), 'pruned: max_nodes in the URL');
    const tops = await pp.evaluate(() => performance.getEntriesByType('resource')
      .filter((r) => r.name.includes('/api/v1/top')).length);
    check(/ smallest frames not drawn/.test(await pp.textContent('#summary')) && tops === 1,
      'pruned: still pruned elsewhere, and the top table not asked again', tops);
    await pp.close();
    /* a click that zooms into a frame with samples left out asks for them at once */
    const pa = await open(context, want.url + wd.hash.replace(/&zoom=.*/, ''), errors, 'pruned, zoom');
    check((await ready(pa)) === 'ready' && (await pa.evaluate(() => window.smolder.state.nodes)) === wd.nodes,
      'pruned zoom: the graph holds ' + wd.nodes + ' frames');
    check((await reloaded(pa, () => clickFrame(pa, wd.fn))) === 'ready', 'pruned zoom: a click zooms and asks again');
    check((await pa.evaluate(() => window.smolder.state.nodes)) === wd.nodes * 10, 'pruned zoom: for ten times the frames');
    wz = (await frames(pa)).find((f) => f.zoomed);
    const pleaves = (await frames(pa)).filter((f) => f.depth === 4);
    check(wz && wz.name === wd.fn && pleaves.length === wd.leaves && await pa.isHidden('#pruned'),
      'pruned zoom: zoomed into ' + wd.fn + ' with its ' + wd.leaves + ' callees', [wz, pleaves.length]);
    await pa.close();
    check(errors.length === 0, 'pruned: no console error, exception or failed request', errors);

    /* ---- error state ---- */
    const perr = await context.newPage();
    perr.setDefaultTimeout(STEP_MS);
    await perr.goto(want.error_url);
    await perr.waitForSelector('#error:not([hidden])');
    const etext = await perr.textContent('#error');
    check(etext.includes(want.error_text), 'error: the API\'s reason is shown', etext);
    check((await perr.$eval('#flame-box', (b) => b.dataset.state)) === 'error', 'error: the graph says so');
    await perr.close();

    /* ---- empty range ---- */
    const pe = await context.newPage();
    pe.setDefaultTimeout(STEP_MS);
    await pe.goto(want.url + '#from=1000000000&to=1000003600');
    check((await ready(pe)) === 'ready', 'empty: a range with no data is no error');
    await pe.waitForSelector('#empty:not([hidden])');
    check(/^No samples in this range/.test(await pe.textContent('#empty')), 'empty: says so', await pe.textContent('#empty'));
    check(/no samples in this range/.test(await pe.textContent('#peak')), 'empty: the timeline says so too');
    await pe.close();

    /* ---- token ---- */
    const terrors = [];
    const tctx = await browser.newContext();
    const tp = await tctx.newPage();
    tp.setDefaultTimeout(STEP_MS);
    tp.on('pageerror', (e) => terrors.push('token: exception: ' + e.message));
    await tp.goto(want.token_url);
    await tp.waitForSelector('#token-dialog[open]');
    check(true, 'token: the page asks for the query token');
    await tp.keyboard.press('Escape');
    check(await tp.isVisible('#token-dialog'), 'token: Escape does not dismiss the question');
    await tp.fill('#token', 'wrong-token-0000000000');
    await tp.press('#token', 'Enter');
    await tp.waitForSelector('#token-wrong:not([hidden])');
    check(await tp.isVisible('#token-dialog'), 'token: a wrong one is refused and asked again');
    await tp.fill('#token', want.token);
    await tp.press('#token', 'Enter');
    check((await ready(tp)) === 'ready', 'token: the right one draws the graph');
    check(!(await tp.isVisible('#token-dialog')), 'token: the dialog is gone');
    await tp.reload();
    check((await ready(tp)) === 'ready' && !(await tp.isVisible('#token-dialog')), 'token: kept for the tab');
    check(terrors.length === 0, 'token: no exception', terrors);
    await tctx.close();
  } catch (e) {
    check(false, 'the script ran to its end', String(e && e.stack));
    if (page) {
      console.log('# state: ' + JSON.stringify(await page.evaluate(() => window.smolder && window.smolder.state).catch(() => null)));
      console.log('# errors: ' + JSON.stringify(errors));
      await shot(page, 'failure').catch(() => {});
    }
  } finally {
    await browser.close();
  }
  console.log('# ' + counts.passed + ' passed, ' + counts.failed + ' failed');
  process.exit(counts.failed ? 1 : 0);
}

main();
