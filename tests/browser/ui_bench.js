/* Times the web UI on a stored day, run by bench/ui_bench.sh: navigation to the
 * first painted flame graph of the last hour and of the last 24 h (argv[3]: the ranges) (median of RUNS fresh pages, each
 * with an empty cache), the flame graph's draw on the canvas, and a zoom's
 * redraw (median of the frames of a few clicks). Prints one line per figure. */
'use strict';

const { launch } = require('./harness');

const url = process.argv[2];
const RUNS = 5;

function median(v) {
  const s = v.slice().sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function measure(browser, range) {
  const first = [], draws = [], zooms = [], fetches = [], builds = [];
  let nodes = 0;
  for (let r = 0; r < RUNS; r++) {
    const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    const page = await ctx.newPage();
    page.setDefaultTimeout(60000);
    const t0 = Date.now();
    await page.goto(url + '#range=' + range);
    const state = await page.waitForFunction(() => {
      const s = document.getElementById('flame-box').dataset.state;
      return (s === 'ready' || s === 'error') && s;
    });
    if ((await state.jsonValue()) !== 'ready')
      throw new Error(range + ': ' + (await page.textContent('#error')));
    first.push(Date.now() - t0);
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
    await ctx.close();
  }
  console.log('ui ' + range + ': navigation to the first flame graph (' + nodes + ' nodes): median ' +
    median(first) + ' ms of ' + RUNS + ' (' + first.join(', ') + ')');
  console.log('ui ' + range + ': of which the answer (flamegraph json: query, transfer, parse): median ' +
    median(fetches) + ' ms; the page (tree, tables, draw): median ' + median(builds) + ' ms');
  console.log('ui ' + range + ': flame graph draw: median ' + median(draws).toFixed(1) + ' ms');
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
