/* Drives the web UI's "what changed" view and a function's timeline in headless
 * Chromium, run by tests/integration/test_ui_changed.c, which posts five minutes
 * of a profile whose total is flat while one function's share jumps for 30 s,
 * and writes what it posted to the JSON file named by argv[2]. Prints one
 * "ok - ..." or "not ok - ..." line per check (exit 1 if any failed).
 *
 * Judged from screenshots (png.js), not from the page's own record: in the
 * "what changed" view, the jumping function's row is strong exactly over the
 * spike's steps and faint elsewhere, the steady function's row the opposite; a
 * click on the row draws the function's line over the timeline, high over the
 * spike and low elsewhere, while the total's fill stays level; and the range
 * just before a selection is one click away ("Compare with previous"). Off-CPU
 * (nanoseconds waited, 163 s in one window) reads as times in the summary, the
 * timeline's peak and the top table, whose function column stays in view at
 * 1400 px. On a collector whose agent has sent nothing for a window, a banner
 * in the error colours says so above the timeline, and goes once it sends.
 */
'use strict';

const fs = require('fs');
const { check, counts, launch } = require('./harness');
const png = require('./png');

const want = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const STEP_MS = 15000;

async function rgbOf(page, name) {
  return page.evaluate((n) => {
    const c = getComputedStyle(document.body).getPropertyValue(n).trim();
    const cv = document.createElement('canvas');
    cv.width = cv.height = 1;
    const x = cv.getContext('2d');
    x.fillStyle = c;
    x.fillRect(0, 0, 1, 1);
    return [...x.getImageData(0, 0, 1, 1).data.slice(0, 3)];
  }, name);
}

/* The plot area of the timeline (uPlot's overlay) in page coordinates, and the
 * time range it spans: to map a step's time to its pixels. */
async function plotArea(page) {
  const box = await page.$eval('#timeline .u-over', (e) => {
    const r = e.getBoundingClientRect();
    return { left: r.left, top: r.top, width: r.width, height: r.height };
  });
  box.from = Number(await page.$eval('#timeline', (e) => e.dataset.from));
  box.to = Number(await page.$eval('#timeline', (e) => e.dataset.to));
  box.x = (t) => box.left + ((t - box.from) / (box.to - box.from)) * box.width;
  return box;
}

/* The mean closeness to colour c (1: c itself, 0: the background) of the
 * screenshot's pixels in [x0, x1) x [y0, y1). */
function strength(img, x0, x1, y0, y1, c, bg) {
  let sum = 0, n = 0;
  const span = png.distance(c, bg) || 1;
  for (let y = Math.ceil(y0); y < y1; y++)
    for (let x = Math.ceil(x0); x < x1; x++, n++)
      sum += 1 - Math.min(png.distance(img.px(x, y), c), span) / span;
  return n ? sum / n : 0;
}

/* In each step's column, the topmost pixel of colour c (within tol): the line's
 * height there, as a y in the image (NaN: none). */
function lineTop(img, x0, x1, height, c, tol) {
  for (let y = 0; y < height; y++)
    for (let x = Math.ceil(x0); x < x1; x++)
      if (png.distance(img.px(x, y), c) <= tol) return y;
  return NaN;
}

(async () => {
  const browser = await launch();
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  const errors = [];
  page.setDefaultTimeout(STEP_MS);
  page.on('pageerror', (e) => errors.push('exception: ' + e.stack));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push('console: ' + m.text());
  });
  page.on('response', (r) => {
    if (r.status() >= 400) errors.push(r.status() + ' for ' + r.url());
  });
  try {
    await page.goto(want.url, { waitUntil: 'load' });
    await page.waitForFunction(() => document.getElementById('mix-box').dataset.state === 'ready');
    const area = await plotArea(page);
    const mixBox = await page.$eval('#mix', (e) => {
      const r = e.getBoundingClientRect();
      return { left: r.left, top: r.top, width: r.width, height: r.height };
    });
    const accent = await rgbOf(page, '--accent'), bg = await rgbOf(page, '--panel');
    const img = png.decode(await page.locator('#mix').screenshot());
    const ROW = 18;
    check(img.height >= want.rows.length * ROW, 'what changed: a row for each of the ' + want.rows.length +
      ' functions', img.height / ROW);
    /* per row, the cells' strength inside the spike and outside it */
    const spikeX = [area.x(want.spike[0]) - mixBox.left, area.x(want.spike[1]) - mixBox.left];
    const quietX = [area.x(want.quiet[0]) - mixBox.left, area.x(want.quiet[1]) - mixBox.left];
    const row = (r, xs) => strength(img, xs[0] + 2, xs[1] - 2, r * ROW + 3, r * ROW + ROW - 3, accent, bg);
    const jump = want.rows.indexOf(want.jumper), steady = want.rows.indexOf(want.steady);
    const jIn = row(jump, spikeX), jOut = row(jump, quietX), sIn = row(steady, spikeX), sOut = row(steady, quietX);
    check(jIn > 0.7 && jOut < 0.25, 'what changed: ' + want.jumper + '\'s row is strong over the spike only',
      [jIn.toFixed(2), jOut.toFixed(2)]);
    check(sOut > 0.7 && sIn < 0.25, 'what changed: ' + want.steady + '\'s row fades over the spike',
      [sIn.toFixed(2), sOut.toFixed(2)]);
    /* the edges: the step before the spike is faint, its first step strong */
    const before = row(jump, [area.x(want.spike[0] - want.step) - mixBox.left, spikeX[0]]);
    const first = row(jump, [spikeX[0], area.x(want.spike[0] + want.step) - mixBox.left]);
    check(before < 0.25 && first > 0.7, 'what changed: the jump starts at the spike\'s first step',
      [before.toFixed(2), first.toFixed(2)]);

    /* a click on the row: the function's line over the timeline */
    await page.mouse.click(mixBox.left + 20, mixBox.top + jump * ROW + ROW / 2);
    await page.waitForFunction((fn) => document.getElementById('timeline').dataset.fn === fn, want.jumper);
    await page.waitForFunction(() => /overall/.test(document.getElementById('peak').textContent));
    const line = await rgbOf(page, '--fn-line');
    const tl = png.decode(await page.locator('#timeline .u-over').screenshot());
    const ox = area.left;
    const top = (t0, t1) => lineTop(tl, area.x(t0) - ox + 2, area.x(t1) - ox - 2, tl.height, line, 40);
    const hiY = top(want.spike[0], want.spike[1]), loY = top(want.quiet[0], want.quiet[1]);
    /* y grows downwards: over the spike the line is near the top (90 % of a level
     * total), elsewhere near the bottom (10 %) */
    check(hiY < tl.height * 0.35 && loY > tl.height * 0.6,
      'function line: high over the spike, low elsewhere (' + want.jumper + ')', [hiY, loY, tl.height]);
    const fill = await rgbOf(page, '--accent');
    const tIn = lineTop(tl, area.x(want.spike[0]) - ox + 2, area.x(want.spike[1]) - ox - 2, tl.height, fill, 40);
    const tOut = lineTop(tl, area.x(want.quiet[0]) - ox + 2, area.x(want.quiet[1]) - ox - 2, tl.height, fill, 40);
    check(Math.abs(tIn - tOut) <= 2, 'timeline: the total stays level through the spike', [tIn, tOut]);
    check(page.url().includes('fn=' + encodeURIComponent(want.jumper)), 'the picked function is in the URL', page.url());

    /* one click from a selection to the same length just before it */
    await page.goto(want.url + '&sel=' + want.spike.join(','), { waitUntil: 'load' });
    await page.waitForSelector('#compare-prev:not([hidden])');
    await page.click('#compare-prev');
    await page.waitForFunction(() => window.smolder && window.smolder.state.mode === 'diff');
    const st = await page.evaluate(() => ({ base: window.smolder.state.base, sel: window.smolder.state.sel }));
    const len = want.spike[1] - want.spike[0];
    check(st.base && st.base[0] === want.spike[0] - len && st.base[1] === want.spike[0] &&
      st.sel[0] === want.spike[0], 'compare with previous: the baseline is the ' + len + ' s just before', st);

    /* the page shortens native names as the C rule does (query/shortname.c) */
    const got = await page.evaluate((pairs) => pairs.map(([n]) => window.SmolderFlame.shortName(n, 'native')),
      want.short);
    const wrong = want.short.filter(([, s], i) => got[i] !== s).map(([n, s]) => [n, s, got[want.short.indexOf(n)]]);
    check(want.short.length >= 8 && wrong.length === 0, 'names: shortened as query/shortname.c does (' +
      want.short.length + ')', wrong);
    check(await page.evaluate(() => window.SmolderFlame.shortName('a<b>', 'python')) === 'a<b>',
      'names: only native ones are shortened');

    /* off-CPU: times, not "samples", and a table whose function column is in view */
    await page.goto(want.offcpu_url, { waitUntil: 'load' });
    await page.waitForFunction(() => document.getElementById('flame-box').dataset.state === 'ready');
    await page.waitForFunction(() => document.getElementById('top').tBodies[0].rows.length > 0);
    await page.waitForFunction(() => /peak/.test(document.getElementById('peak').textContent));
    const text = await page.evaluate(() => ({
      summary: document.getElementById('summary').textContent,
      peak: document.getElementById('peak').textContent,
      cells: [...document.getElementById('top').tBodies[0].rows[0].cells].map((c) => {
        const r = c.getBoundingClientRect();
        return { text: c.textContent, left: r.left, right: r.right };
      }),
    }));
    const unit = /\d (\u00b5s|ms|s|min|h)\b/;
    check(unit.test(text.summary) && !/samples/.test(text.summary), 'off-CPU: the summary is a time', text.summary);
    check(unit.test(text.peak) && !/samples/.test(text.peak), 'off-CPU: the timeline\'s peak is a time', text.peak);
    const fn = text.cells[text.cells.length - 1];
    check(unit.test(text.cells[0].text) && unit.test(text.cells[2].text), 'off-CPU: the table\'s self and total are times',
      [text.cells[0].text, text.cells[2].text]);
    check(fn.text === want.offcpu_fn && fn.right <= 1400 && fn.right - fn.left >= 200,
      'off-CPU: the function column is in view at 1400 px', fn);

    /* memory in use: a gauge's mean in MiB everywhere a value is shown, and a
     * selector of the types the range holds */
    await page.goto(want.inuse_url, { waitUntil: 'load' });
    /* the same page (the hash changed): each part is new once it names MiB */
    await page.waitForFunction(() => document.getElementById('flame-box').dataset.state === 'ready');
    for (const id of ['summary', 'peak'])
      await page.waitForFunction((el) => /MiB/.test(document.getElementById(el).textContent), id).catch(() => {});
    await page.waitForFunction(() => /MiB/.test(document.getElementById('top').tBodies[0].textContent)).catch(() => {});
    /* the selector is rebuilt once the types' answer is in: wait for it, and
     * judge what it holds below either way */
    await page.waitForFunction((t) => [...document.getElementById('ptype').options].map((o) => o.value).join() === t,
      want.types.join()).catch(() => {});
    const mem = await page.evaluate(() => ({
      summary: document.getElementById('summary').textContent,
      peak: document.getElementById('peak').textContent,
      cells: [...document.getElementById('top').tBodies[0].rows[0].cells].map((c) => c.textContent),
      heads: [...document.getElementById('top').tHead.rows[0].cells].map((c) => c.textContent),
      types: [...document.getElementById('ptype').options].map((o) => o.value),
      picked: document.getElementById('ptype').value,
    }));
    check(mem.summary.startsWith(want.inuse_mean + ' (average') && !/samples/.test(mem.summary),
      'memory: the summary is the snapshots\' mean in MiB', mem.summary);
    check(mem.peak.startsWith(want.inuse_mean + ' \u00b7 peak 300 MiB'),
      'memory: the timeline says the mean and its peak snapshot in MiB', mem.peak);
    check(mem.cells[0] === want.inuse_mean && mem.cells[2] === want.inuse_mean,
      'memory: the table\'s self and total are the mean in MiB', mem.cells);
    check(mem.heads[0] === 'Self (bytes)' && mem.heads[2] === 'Total (bytes)',
      'memory: the table\'s headers name the unit', mem.heads);
    check(JSON.stringify(mem.types) === JSON.stringify(want.types) && mem.picked === 'inuse_space',
      'the profile selector lists the types the range holds', mem.types);

    /* a stalled agent: the banner, drawn, then gone once the agent sends */
    await page.goto(want.quiet_url, { waitUntil: 'load' });
    await page.waitForSelector('#health:not([hidden])');
    const banner = await page.$eval('#health', (e) => {
      const r = e.getBoundingClientRect();
      return { text: e.textContent, left: r.left, top: r.top, width: r.width, height: r.height,
        timeline: document.getElementById('timeline').getBoundingClientRect().top };
    });
    check(/agent quiet-agent sent nothing for \d+ s \(\d+ windows?\)/.test(banner.text),
      'stall: the banner names the agent and its silence', banner.text);
    const shotB = png.decode(await page.screenshot());
    const errBg = await rgbOf(page, '--err-bg'), pageBg = await rgbOf(page, '--bg');
    const drawn = strength(shotB, banner.left, banner.left + banner.width, banner.top,
      banner.top + banner.height, errBg, pageBg);
    check(banner.height > 0 && banner.top < banner.timeline && drawn > 0.5,
      'stall: on the screen, a banner in the error colour above the timeline', [banner, drawn]);
    const resp = await fetch(new URL('/api/v1/ingest', want.quiet_url), {
      method: 'POST', body: fs.readFileSync(want.quiet_body),
      headers: { 'Content-Type': want.quiet_type, 'Content-Encoding': 'zstd' },
    });
    check(resp.status === 200, 'stall: the agent sends again', resp.status);
    await page.waitForSelector('#health', { state: 'hidden' });
    check(await page.isHidden('#health'), 'stall: the banner is gone');
    /* the 503s of /healthz were the answers looked for, not failures */
    for (let i = errors.length - 1; i >= 0; i--)
      if (/\/healthz|status of 503/.test(errors[i])) errors.splice(i, 1);
  } catch (e) {
    check(false, 'the script ran to its end', e.stack);
  }
  check(errors.length === 0, 'no console error, exception or failed request', errors);
  await browser.close();
  console.log('# ' + counts.passed + ' passed, ' + counts.failed + ' failed');
  process.exit(counts.failed ? 1 : 0);
})();
