/* What the browser scripts (flame.js, ui.js, ui_bench.js) share: the check lines
 * that test_browser.c and test_ui.c count ("ok - ..." / "not ok - ...",
 * tests/integration/browsertest.h), and launching Debian's chromium headless with
 * the flags that keep it off the network (this machine's closed network refuses
 * its background connections, many at a time). */
'use strict';

const { chromium } = require('playwright-core');

const counts = { passed: 0, failed: 0 };

function check(ok, what, got) {
  if (ok) {
    counts.passed++;
    console.log('ok - ' + what);
  } else {
    counts.failed++;
    console.log('not ok - ' + what + (got === undefined ? '' : ': got ' + JSON.stringify(got)));
  }
}

function launch() {
  return chromium.launch({
    executablePath: process.env.SMOLDER_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    timeout: 60000,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}

module.exports = { check, counts, launch };
