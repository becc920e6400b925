/* Drives the collector's interactive flame graphs in headless Chromium, run by
 * tests/integration/test_browser.c: the HTML page (/api/v1/flamegraph?format=html)
 * and the SVG (format=svg), both served by the real collector. The C test posts
 * the data, computes every expected number from it and writes them to the JSON
 * file named by argv[2]; this script clicks, types and measures, and prints one
 * "ok - ..." or "not ok - ..." line per check (exit 1 if any failed).
 *
 * Checked: the HTML's flame/icicle toggle (the root below, then above, its child);
 * search (a regex typed in: the frames it matches highlighted and no others, the
 * reported samples and share equal to the expected ones); zoom (a clicked frame
 * fills the width, its children scale with it, its ancestors stay full width, all
 * other frames are gone) and its reset. The SVG's zoom (the same, by geometry and
 * display), reset, and search through its prompt (highlighted frames, "Matched:"
 * share). A 300-level graph (HTML and SVG) opens as an icicle with its root and
 * first levels inside the first 1280 x 720 screen. The diff page (HTML) shows its
 * legend and movers table above the fold, the first row being the expected top
 * mover with its before, after and delta; the SVG diff has its legend. Tooltips
 * (pages rendered by the C test with a sampling period and a per-line breakdown)
 * show CPU time and share beside samples, the hottest line, and a placeholder
 * run as "[unknown] ×128". No console error and no uncaught exception on any
 * page. Each export served by the collector is an attachment with nosniff and its
 * policy; the HTML runs under its policy (asSaved).
 *
 * Chromium is /usr/bin/chromium (playwright-core downloads none); Playwright gives
 * it a fresh temporary profile and passes --headless and --no-sandbox itself.
 */
'use strict';

const fs = require('fs');
const { check, counts, launch } = require('./harness');

const want = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const STEP_MS = 10000; /* bound on one wait for the page */

function near(a, b, tol) {
  return typeof a === 'number' && typeof b === 'number' && Math.abs(a - b) <= tol;
}

function count(n) {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

function escapeRe(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/* A fresh page that records console errors and uncaught exceptions into errors.
 * One is left out, with a note: Chromium asks every origin for /favicon.ico on its
 * own, which the collector answers 404; the pages never reference it. */
async function open(browser, url, errors, label) {
  const page = await browser.newPage();
  const favicon = new URL('/favicon.ico', url).href;
  page.setDefaultTimeout(STEP_MS);
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    if (m.location().url === favicon)
      console.log('note - ' + label + ': ignored: ' + m.text() + ' for ' + favicon);
    else errors.push(label + ': console: ' + m.text() + ' (' + m.location().url + ')');
  });
  page.on('pageerror', (e) => errors.push(label + ': exception: ' + e.message));
  if (url.startsWith('http')) await asSaved(page, url, label);
  const resp = await page.goto(url, { waitUntil: 'load' });
  check(resp && resp.status() === 200, label + ': served with 200', resp && resp.status());
  return page;
}

/* The collector serves exports as attachments (Content-Disposition), which a
 * browser saves instead of showing: the page is opened as the saved file would be,
 * after checking the headers it came with. The HTML keeps the collector's
 * Content-Security-Policy (its script and style allowed by hash): it must run
 * under it. The SVG's policy allows no script on the collector's origin, and a
 * saved file has no policy: it is opened without. */
async function asSaved(page, url, label) {
  const svg = /[?&]format=svg/.test(url);
  await page.route(url, async (route) => {
    const r = await route.fetch();
    const h = r.headers();
    const csp = h['content-security-policy'] || '';
    check(/^attachment; filename="smolder-(flamegraph|diff)-\d+-\d+\.(html|svg)"$/.test(h['content-disposition'] || ''),
      label + ': served as an attachment', h['content-disposition']);
    check(h['x-content-type-options'] === 'nosniff', label + ': served with nosniff', h['x-content-type-options']);
    check(svg ? !/script-src/.test(csp) && /default-src 'none'/.test(csp)
              : /script-src 'sha256-[A-Za-z0-9+/]+=*';/.test(csp) && !/unsafe/.test(csp),
      label + ': served with its policy', csp);
    delete h['content-disposition'];
    if (svg) delete h['content-security-policy'];
    await route.fulfill({ response: r, headers: h });
  });
}

/* ---- HTML -------------------------------------------------------------------- */

async function htmlFrames(page) {
  return page.$$eval('#chart .fr', (els) =>
    els.map((e) => ({
      text: e.textContent,
      cls: e.className,
      left: parseFloat(e.style.left),
      width: parseFloat(e.style.width),
      top: e.getBoundingClientRect().top,
    })),
  );
}

function byText(frames, text) {
  return frames.filter((f) => f.text === text);
}

async function htmlToggle(page) {
  const order = async () => {
    const frames = await htmlFrames(page);
    const root = byText(frames, want.flip.root)[0];
    const child = byText(frames, want.flip.child)[0];
    return root && child ? root.top - child.top : NaN;
  };
  check((await page.textContent('#toggle')) === 'Icicle', 'html: the toggle offers Icicle');
  check((await order()) > 0, 'html: flame: the root is drawn below its child', await order());
  await page.click('#toggle');
  check((await page.textContent('#toggle')) === 'Flame', 'html: the toggle then offers Flame');
  check((await order()) < 0, 'html: icicle: the root is drawn above its child', await order());
  await page.click('#toggle');
  check((await order()) > 0, 'html: flame again after a second click', await order());
}

async function htmlSearch(page) {
  const s = want.search;
  const re = new RegExp(s.regex);
  await page.fill('#search', s.regex);
  await page.waitForFunction(() => document.getElementById('match').textContent !== '');
  const text = await page.textContent('#match');
  const m = /^matched (\d+) samples \((\d+\.\d\d)%\)$/.exec(text);
  check(m !== null, 'html: search reports its matches', text);
  if (m) {
    check(Number(m[1]) === s.samples, 'html: matched samples = ' + s.samples, Number(m[1]));
    check(near(Number(m[2]), (100 * s.samples) / want.total, 0.0051),
      'html: matched share = ' + ((100 * s.samples) / want.total).toFixed(4) + '%', m[2]);
  }
  const frames = await htmlFrames(page);
  const lit = frames.filter((f) => / m( |$)/.test(f.cls));
  check(lit.length === s.nodes, 'html: ' + s.nodes + ' frames highlighted', lit.length);
  check(lit.every((f) => f.text === '' || re.test(f.text)), 'html: only matching frames lit',
    lit.map((f) => f.text));
  check(frames.filter((f) => f.text !== '' && re.test(f.text)).every((f) => lit.includes(f)),
    'html: every labelled matching frame lit');
  await page.fill('#search', '');
  check((await page.textContent('#match')) === '', 'html: clearing the search clears the report');
  check((await page.$$('#chart .fr.m')).length === 0, 'html: and the highlights');
}

async function htmlZoom(page) {
  const z = want.zoom;
  const W = await page.$eval('#chart', (e) => e.clientWidth);
  const before = await htmlFrames(page);
  check(byText(before, z.name).length === 1, 'html: one frame labelled ' + z.name);
  await page.locator('#chart .fr', { hasText: new RegExp('^' + escapeRe(z.name) + '$') }).click();
  await page.waitForFunction((n) => {
    const e = [...document.querySelectorAll('#chart .fr')].find((f) => f.textContent === n);
    return e && parseFloat(e.style.left) === 0;
  }, z.name);
  const frames = await htmlFrames(page);
  const f = byText(frames, z.name)[0];
  check(f && near(f.left, 0, 0.01) && near(f.width, W - 1, 0.01),
    'html: the zoomed frame fills the width (' + (W - 1) + ' px)', f);
  for (const c of z.children) {
    const got = byText(frames, c.name).map((x) => x.width);
    const exp = (W * c.total) / z.total - 1;
    check(got.some((w) => near(w, exp, 0.01)),
      'html: child ' + c.name + ' is ' + exp.toFixed(2) + ' px wide', got);
  }
  for (const a of z.ancestors) {
    const g = byText(frames, a)[0];
    check(g && / anc/.test(g.cls) && near(g.width, W - 1, 0.01),
      'html: ancestor ' + a + ' kept full width, dimmed', g);
  }
  for (const o of z.outside)
    check(byText(frames, o).length === 0, 'html: ' + o + ' is not drawn while zoomed');
  check(frames.length === z.ancestors.length + z.subtree,
    'html: ' + (z.ancestors.length + z.subtree) + ' frames drawn (ancestors and subtree)',
    frames.length);
  await page.click('#reset');
  const after = await htmlFrames(page);
  check(after.length === before.length, 'html: reset zoom draws every frame again', after.length);
}

/* ---- SVG --------------------------------------------------------------------- */

async function svgFrames(page) {
  return page.$$eval('g.f', (gs) =>
    gs.map((g) => {
      const r = g.querySelector('rect');
      const t = g.querySelector('title').textContent.split('\n')[0];
      return {
        name: t.substring(0, t.lastIndexOf(' \u2014 ')),
        x: parseFloat(r.getAttribute('x')),
        width: parseFloat(r.getAttribute('width')),
        fill: r.getAttribute('fill'),
        shown: g.style.display !== 'none',
        opacity: g.style.opacity,
      };
    }),
  );
}

async function svgZoom(page) {
  const z = want.zoom;
  const before = await svgFrames(page);
  const root = before.find((f) => f.name === want.flip.root);
  check(root !== undefined, 'svg: the root frame is drawn');
  if (!root) return;
  const XPAD = root.x;
  const FULL = root.width;
  check(before.filter((f) => f.name === z.name).length === 1, 'svg: one frame named ' + z.name);
  const title = page.locator('title', { hasText: new RegExp('^' + escapeRe(z.name) + ' \u2014 ') });
  await page.locator('g.f').filter({ has: title }).click();
  const frames = await svgFrames(page);
  const f = frames.find((x) => x.name === z.name);
  check(f && near(f.x, XPAD, 0.01) && near(f.width, FULL, 0.01),
    'svg: the zoomed frame fills the width (' + FULL + ')', f);
  for (const c of z.children) {
    const got = frames.filter((x) => x.shown && x.name === c.name).map((x) => x.width);
    const exp = (FULL * c.total) / z.total;
    check(got.some((w) => near(w, exp, 0.01)),
      'svg: child ' + c.name + ' is ' + exp.toFixed(3) + ' wide', got);
  }
  for (const a of z.ancestors) {
    const g = frames.find((x) => x.name === a);
    check(g && g.shown && g.opacity === '0.6' && near(g.width, FULL, 0.01),
      'svg: ancestor ' + a + ' kept full width, dimmed', g);
  }
  for (const o of z.outside)
    check(frames.filter((x) => x.name === o).every((x) => !x.shown),
      'svg: ' + o + ' hidden while zoomed');
  const shown = frames.filter((x) => x.shown).length;
  check(shown === z.ancestors.length + z.subtree,
    'svg: ' + (z.ancestors.length + z.subtree) + ' frames shown (ancestors and subtree)', shown);
  await page.click('#unzoom');
  const after = await svgFrames(page);
  check(after.every((x) => x.shown) &&
      after.every((x, i) => near(x.x, before[i].x, 1e-6) && near(x.width, before[i].width, 1e-6)),
    'svg: reset zoom restores every frame');
}

async function svgSearch(page) {
  const s = want.search;
  const re = new RegExp(s.regex);
  page.once('dialog', (d) => d.accept(s.regex));
  await page.click('#search');
  await page.waitForFunction(() => /Matched/.test(document.getElementById('matched').textContent));
  const text = await page.textContent('#matched');
  const m = /^Matched: (\d+\.\d)%$/.exec(text);
  check(m !== null, 'svg: search reports its share', text);
  if (m)
    check(near(Number(m[1]), (100 * s.samples) / want.total, 0.051),
      'svg: matched share = ' + ((100 * s.samples) / want.total).toFixed(3) + '%', m[1]);
  const frames = await svgFrames(page);
  const lit = frames.filter((f) => f.fill === 'rgb(230,0,230)');
  check(lit.length === s.nodes, 'svg: ' + s.nodes + ' frames highlighted', lit.length);
  check(lit.every((f) => re.test(f.name)) &&
      frames.filter((f) => re.test(f.name)).length === lit.length,
    'svg: exactly the matching frames lit', lit.map((f) => f.name));
  await page.click('#search'); /* "Reset Search" */
  const reset = await svgFrames(page);
  check(reset.every((f) => f.fill !== 'rgb(230,0,230)'), 'svg: reset search clears the highlights');
}

/* ---- Opening on the answer ----------------------------------------------------- */

/* Whether the box of the element is inside the first screen (not scrolled). */
async function onFirstScreen(page, handle) {
  const vp = page.viewportSize();
  const r = await handle.evaluate((e) => {
    const b = e.getBoundingClientRect();
    return { top: b.top + window.scrollY, bottom: b.bottom + window.scrollY, h: b.height };
  });
  return r.h > 0 && r.top >= 0 && r.bottom <= vp.height ? true : r;
}

async function htmlDeep(browser, errors) {
  const d = want.deep;
  const page = await open(browser, d.html, errors, 'html deep');
  check((await page.textContent('#toggle')) === 'Flame',
    'html deep: ' + d.depth + ' levels open as an icicle (the toggle offers Flame)',
    await page.textContent('#toggle'));
  for (const name of ['all', 'deep', 'level0', 'level1']) {
    const els = await page.$$('#chart .fr');
    let el = null;
    for (const e of els) if ((await e.textContent()) === name) el = e;
    check(el !== null && (await onFirstScreen(page, el)) === true,
      'html deep: ' + name + ' on the first screen', el && (await onFirstScreen(page, el)));
  }
  const frames = await htmlFrames(page);
  const root = byText(frames, 'all')[0], child = byText(frames, 'deep')[0];
  check(root && child && root.top < child.top, 'html deep: the root above its child');
  await page.close();
}

async function svgDeep(browser, errors) {
  const d = want.deep;
  const page = await open(browser, d.svg, errors, 'svg deep');
  check(await page.evaluate(() => ICICLE === true), 'svg deep: drawn as an icicle');
  for (const name of ['all', 'deep', 'level0']) {
    const g = page.locator('g.f').filter({
      has: page.locator('title', { hasText: new RegExp('^' + escapeRe(name) + ' \u2014 ') }),
    });
    const el = await g.locator('rect').elementHandle();
    check((await onFirstScreen(page, el)) === true, 'svg deep: ' + name + ' on the first screen',
      await onFirstScreen(page, el));
  }
  await page.close();
}

async function htmlDiff(browser, errors) {
  const m = want.mover;
  const page = await open(browser, want.diff.html, errors, 'html diff');
  const legend = await page.$('#legend');
  check(legend !== null && (await onFirstScreen(page, legend)) === true,
    'html diff: the legend is above the fold', legend && (await onFirstScreen(page, legend)));
  if (legend) {
    const text = await legend.textContent();
    check(/grew.*shrank.*unchanged/.test(text) && /normalized to each side's total/.test(text),
      'html diff: the legend names the colours and the normalization', text);
  }
  const row = await page.$('#movers tbody tr');
  check(row !== null && (await onFirstScreen(page, row)) === true,
    'html diff: the movers table\'s first row is above the fold',
    row && (await onFirstScreen(page, row)));
  if (row) {
    const cells = await row.$$eval('td', (tds) => tds.map((t) => t.textContent));
    check(JSON.stringify(cells) === JSON.stringify([m.name, m.before, m.after, m.delta]),
      'html diff: first mover ' + [m.name, m.before, m.after, m.delta].join(' '), cells);
  }
  const rows = await page.$$eval('#movers tbody tr', (trs) => trs.map((tr) => {
    const d = tr.lastElementChild.textContent;
    return Math.abs(parseFloat(d));
  }));
  check(rows.length > 1 && rows.every((d, i) => i === 0 || d <= rows[i - 1]),
    'html diff: movers sorted by |delta|', rows);
  /* a mover's name searches for it: its frames lit */
  await page.click('#movers tbody tr td.fn');
  await page.waitForFunction(() => document.getElementById('match').textContent !== '');
  const lit = (await htmlFrames(page)).filter((f) => / m( |$)/.test(f.cls) && f.text !== '');
  check(lit.length > 0 && lit.every((f) => f.text === m.name),
    'html diff: clicking the first mover highlights its frames', lit.map((f) => f.text));
  const heads = await page.$$eval('#top thead th', (th) => th.map((t) => t.textContent));
  check(heads.includes('total before') && heads.includes('total after') &&
      heads.includes('total delta'), 'html diff: the top table has before/after/delta', heads);
  const root = (await htmlFrames(page)).filter((f) => f.text === 'all')[0];
  check(root && root.top + 16 <= page.viewportSize().height,
    'html diff: the graph\'s root is on the first screen', root);
  await page.close();
  const svg = await open(browser, want.diff.svg, errors, 'svg diff');
  const sl = await svg.$('#legend');
  check(sl !== null && /grew.*shrank.*unchanged/.test(await sl.textContent()),
    'svg diff: the legend is drawn');
  const first = await svg.$('#movers text.mv');
  check(first !== null && (await first.textContent()).endsWith('  ' + m.name) &&
      (await first.textContent()).startsWith(m.delta),
    'svg diff: the first mover listed', first && (await first.textContent()));
  await svg.close();
}

async function tooltips(browser, errors) {
  const t = want.tips;
  const page = await open(browser, t.html, errors, 'html tips');
  check((await page.textContent('#total')) === t.total, 'html tips: total ' + t.total,
    await page.textContent('#total'));
  await page.locator('#chart .fr', { hasText: new RegExp('^' + t.name + '$') }).hover();
  const tip = await page.textContent('#tip');
  check(tip.startsWith(t.name + ' \u2014 ' + t.figures + '\n'),
    'html tips: "' + t.name + ' \u2014 ' + t.figures + '"', tip);
  check(tip.split('\n')[1] === '  ' + t.line, 'html tips: the hottest line first: ' + t.line, tip);
  check(await page.isVisible('#tip'), 'html tips: the tooltip is shown');
  await page.locator('#chart .fr', { hasText: t.run }).hover();
  const run = await page.textContent('#tip');
  check(run.startsWith(t.run + ' \u2014 '), 'html tips: a placeholder run is ' + t.run, run);
  await page.close();

  const svg = await open(browser, t.svg, errors, 'svg tips');
  const g = svg.locator('g.f').filter({
    has: svg.locator('title', { hasText: new RegExp('^' + t.name + ' \u2014 ') }),
  });
  await g.locator('rect').hover();
  const details = await svg.textContent('#details');
  check(details === t.name + ' \u2014 ' + t.figures, 'svg tips: the details line', details);
  const title = await g.locator('title').textContent();
  check(title.split('\n')[1] === '  ' + t.line, 'svg tips: the hottest line in the tooltip', title);
  const label = await svg.$$eval('g.f text', (ts) => ts.map((x) => x.textContent));
  check(label.includes(t.run), 'svg tips: the run labelled ' + t.run, label);
  await svg.close();
}

async function main() {
  const errors = [];
  const browser = await launch();
  try {
    const html = await open(browser, want.html, errors, 'html');
    {
      // The collector was posted batches at 99 Hz (10101010 ns per sample):
      // the total line adds their CPU time, checked against the posted count.
      const text = await html.textContent('#total');
      const m = /^([\d,]+) samples, ([\d.]+) s CPU$/.exec(text);
      check(m && m[1] === count(want.total), 'html: total = ' + count(want.total) + ' samples',
        text);
      check(m && near(Number(m[2]), (want.total * 10101010) / 1e9, 0.051),
        'html: total CPU = ' + ((want.total * 10101010) / 1e9).toFixed(1) + ' s', text);
    }
    await htmlToggle(html);
    await htmlSearch(html);
    await htmlZoom(html);
    const svg = await open(browser, want.svg, errors, 'svg');
    await svgZoom(svg);
    await svgSearch(svg);
    /* each on pages of its own: one that throws does not hide the others' checks */
    for (const part of [htmlDeep, svgDeep, htmlDiff, tooltips]) {
      try {
        await part(browser, errors);
      } catch (e) {
        check(false, part.name + ': ' + (e && e.message ? e.message.split('\n')[0] : e));
      }
    }
  } finally {
    await browser.close();
  }
  check(errors.length === 0, 'no console errors or exceptions', errors);
}

const watchdog = setTimeout(() => {
  console.log('not ok - timed out');
  process.exit(1);
}, 100000);

main()
  .catch((e) => {
    counts.failed++;
    console.log('not ok - ' + (e && e.stack ? e.stack : e));
  })
  .finally(() => {
    clearTimeout(watchdog);
    console.log(`checks: ${counts.passed} passed, ${counts.failed} failed`);
    process.exitCode = counts.failed ? 1 : 0;
  });
