/* Times the web UI on a stored day, run by bench/ui_bench.sh: navigation to the
 * first painted flame graph of the last hour and of the last 24 h (median of RUNS
 * fresh pages, each with an empty cache), the flame graph's draw on the canvas, a
 * zoom's redraw (median of the frames of a few clicks), and where the time went (the
 * page's performance marks and each API request's server and transfer time).
 * Prints a few lines per range.
 *
 *   node ui_bench.js URL [RANGES [FRAGMENT]]   (RANGES: 1h,24h; FRAGMENT: more of
 *                                               the page's fragment, &nodes=2000) */
'use strict';

const { launch } = require('./harness');

const url = process.argv[2];
const RUNS = 5;
const extra = process.argv[4] || ''; /* more of the fragment, e.g. &nodes=2000 */

function median(v) {
  const s = v.slice().sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function measure(browser, range) {
  const first = [], draws = [], zooms = [], fetches = [], builds = [], timelines = [];
  let nodes = 0;
  for (let r = 0; r < RUNS; r++) {
    const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    const page = await ctx.newPage();
    page.setDefaultTimeout(60000);
    const t0 = Date.now();
    await page.goto(url + '#range=' + range + extra);
    const state = await page.waitForFunction(() => {
      const s = document.getElementById('flame-box').dataset.state;
      return (s === 'ready' || s === 'error') && s;
    });
    if ((await state.jsonValue()) !== 'ready')
      throw new Error(range + ': ' + (await page.textContent('#error')));
    first.push(Date.now() - t0);
    /* where the time went: the page's marks and each API request's timing, in ms
     * from the navigation's start (performance.timeOrigin) */
    if (await page.$eval('#top-box', (b) => b.dataset.state === 'loading'))
      await page.waitForFunction(() => document.getElementById('top-box').dataset.state !== 'loading');
    timelines.push(await page.evaluate(() => {
      const t = {};
      for (const m of performance.getEntriesByType('mark'))
        if (m.name.startsWith('smolder:')) t[m.name.slice(8)] = m.startTime;
      const nav = performance.getEntriesByType('navigation')[0];
      t.html = nav.responseEnd;
      t.loaded = nav.domContentLoadedEventEnd;
      t.assets = 0; /* the UI's own files, all received */
      for (const r of performance.getEntriesByType('resource')) {
        if (r.name.includes('/ui/')) t.assets = Math.max(t.assets, r.responseEnd);
        const m = /\/api\/v1\/([a-z]+)/.exec(r.name);
        if (!m || t[m[1] + '.start'] !== undefined) continue;
        t[m[1] + '.start'] = r.startTime;
        t[m[1] + '.server'] = r.responseStart - r.requestStart;
        t[m[1] + '.transfer'] = r.responseEnd - r.responseStart;
        t[m[1] + '.end'] = r.responseEnd;
        t[m[1] + '.bytes'] = r.encodedBodySize;
      }
      return t;
    }));
    fetches.push(Number(await page.$eval('#flame-box', (b) => b.dataset.fetchMs)));
    builds.push(Number(await page.$eval('#flame-box', (b) => b.dataset.ms)) - fetches[fetches.length - 1]);
    nodes = await page.evaluate(() => window.smolder.nodes());
    draws.push(await page.evaluate(() => window.smolder.drawMs()));
    /* zoom into the widest frames of the first levels and back */
    for (const depth of [1, 2, 3, 4]) {
      const f = (await page.evaluate(() => window.smolder.frames())).filter((x) => x.depth === depth)
        .sort((a, b) => b.w - a.w)[0];
      if (!f) break;
      const box = await page.$eval('#flame', (e) => e.getBoundingClientRect().toJSON());
      await page.mouse.click(box.left + f.x + f.w / 2, box.top + f.y + 8);
      zooms.push(await page.evaluate(() => window.smolder.drawMs()));
    }
    /* a zoom into what a pruned graph left out asks for more detail (a second
     * query of the whole range): wait for it, or it would still be running on
     * the collector, on another reader and its cores, when the next page asks */
    await page.waitForFunction(() => ['flame-box', 'top-box'].every((id) =>
      document.getElementById(id).dataset.state !== 'loading'));
    await ctx.close();
  }
  console.log('ui ' + range + ': navigation to the first flame graph (' + nodes + ' nodes): median ' +
    median(first) + ' ms of ' + RUNS + ' (' + first.join(', ') + ')');
  console.log('ui ' + range + ': of which the answer (flamegraph json: query, transfer): median ' +
    median(fetches) + ' ms; the page (parse, tree, summary, draw): median ' + median(builds) + ' ms');
  const med = (k) => median(timelines.map((t) => t[k]).filter((v) => v !== undefined));
  const f = (v) => (v === undefined || Number.isNaN(v) ? '-' : v.toFixed(0));
  console.log('ui ' + range + ': timeline (median ms from navigation): page html ' + f(med('html')) +
    ', its files ' + f(med('assets')) + ', scripts run ' + f(med('loaded')) + ', flame asked ' + f(med('flame-asked')) + ', its answer: server ' +
    f(med('flamegraph.server')) + ' + transfer ' + f(med('flamegraph.transfer')) + ' (' +
    f(med('flamegraph.bytes') / 1e3) + ' kB) = received ' + f(med('flame-received')) + ', parsed ' +
    f(med('flame-parsed')) + ', drawn ' + f(med('flame-drawn')) + '; then top table ' +
    (med('top.start') === undefined ? 'from the tree' : 'asked ' + f(med('top.start')) + ', server ' +
      f(med('top.server')) + ', drawn ' + f(med('top-drawn'))) + '; series ' + f(med('series.start')) +
    ' to ' + f(med('series.end')) + ' (server ' + f(med('series.server')) + '), labels ' + f(med('labels.start')) +
    ' to ' + f(med('labels.end')));
  console.log('ui ' + range + ': flame graph draw: median ' + median(draws).toFixed(1) + ' ms');
  if (zooms.length)
    console.log('ui ' + range + ': redraw on zoom: median ' + median(zooms).toFixed(1) + ' ms, max ' +
      Math.max(...zooms).toFixed(1) + ' ms');
}

async function main() {
  const browser = await launch();
  for (const range of (process.argv[3] || '1h,24h').split(',')) await measure(browser, range);
  await browser.close();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
