/* A Node.js workload of known shape, profiled by the Pyroscope Node.js SDK from npm
 * (@pyroscope/nodejs, pinned by package-lock.json) and pushed to a collector's
 * /ingest: run by tests/integration/test_sdk_node.c.
 *
 *   node workload.js URL TOKEN APP SECONDS MIN_PUSHES
 *
 * Two busy functions, burnThree and burnOne, share the main thread 3:1 (slices
 * of 30 ms and 10 ms, the event loop free between rounds so that the SDK's timers
 * flush; the SDK samples at 1 kHz, so that a few seconds give thousands of
 * samples); each slice is timed with process.hrtime, so the split the profile
 * should show comes from the workload's own clock, not from smolder. retainHeap
 * allocates RETAIN_BYTES of double arrays at the start and keeps them to the end,
 * so the heap profile names it. The SDK flushes every second, then once more on
 * stop(). Every HTTP answer the SDK gets is counted (fetch is wrapped: the SDK
 * itself only logs a refusal); the workload runs SECONDS, and on until MIN_PUSHES
 * answers came (at most 30 s more: the SDK drops a flush while the previous one
 * is still waiting for its answer, as on a slow machine). The last line printed
 * is one JSON object:
 * {"burnThree_ns":..,"burnOne_ns":..,"retained_bytes":..,"pushes":..,"refused":..,
 *  "statuses":[..],"from":..,"until":..}. Exit status 0 unless the SDK failed. */
'use strict';

const Pyroscope = require('@pyroscope/nodejs');

const [url, token, app, secondsArg, minPushesArg] = process.argv.slice(2);
const seconds = Number(secondsArg || 4);
const minPushes = Number(minPushesArg || 0);
const EXTRA_MS = 30000;
const RETAIN_BYTES = 32 * 1024 * 1024; /* 32 MiB in 8 KiB arrays */
const ARRAY_DOUBLES = 1024;

const counts = { calls: 0, pushes: 0, refused: 0, statuses: [] };
let onCall = null;
const realFetch = globalThis.fetch;
globalThis.fetch = async (...args) => {
  counts.calls++;
  if (onCall)
    onCall();
  try {
    const r = await realFetch(...args);
    counts.statuses.push(r.status);
    if (r.ok)
      counts.pushes++;
    else
      counts.refused++;
    return r;
  } catch (e) {
    counts.statuses.push(0);
    counts.refused++;
    throw e;
  }
};

let kept = [];
function retainHeap() {
  const out = [];
  for (let i = 0; i < RETAIN_BYTES / (ARRAY_DOUBLES * 8); i++)
    out.push(new Array(ARRAY_DOUBLES).fill(i + 0.5));
  return out;
}

let sink = 0;
function spin(ms) {
  const start = process.hrtime.bigint();
  const end = start + BigInt(ms) * 1000000n;
  let x = sink, now;
  do {
    for (let i = 0; i < 2000; i++)
      x = (x * 1103515245 + 12345) % 2147483647;
    now = process.hrtime.bigint();
  } while (now < end);
  sink = x;
  return now - start;
}

/* Two functions so that each is its own frame; spin() is below both. */
function burnThree() {
  return spin(30);
}
function burnOne() {
  return spin(10);
}

async function main() {
  Pyroscope.init({
    serverAddress: url,
    authToken: token,
    appName: app,
    tags: { workload: 'shape31' },
    flushIntervalMs: 1000,
    wall: { samplingDurationMs: 1000, samplingIntervalMicros: 1000, collectCpuTime: true },
    heap: { samplingIntervalBytes: 64 * 1024, stackDepth: 64 },
  });
  const from = Date.now();
  Pyroscope.start();
  kept = retainHeap();
  let three = 0n, one = 0n;
  const end = Date.now() + seconds * 1000;
  const answers = () => counts.pushes + counts.refused;
  while (Date.now() < end || (answers() < minPushes && Date.now() < end + EXTRA_MS)) {
    three += burnThree();
    one += burnOne();
    await new Promise((resolve) => setImmediate(resolve));
  }
  /* The SDK's stop() races a flush already queued (it then throws "Wall profiler
   * is not started"): stop right after a round of both profilers began, a flush
   * interval before the next. */
  const seen = counts.calls;
  await new Promise((resolve) => {
    onCall = () => {
      if (counts.calls >= seen + 2)
        resolve();
    };
  });
  await new Promise((resolve) => setImmediate(resolve));
  await Pyroscope.stop();
  const until = Date.now();
  console.log(JSON.stringify({
    burnThree_ns: Number(three), burnOne_ns: Number(one),
    retained_bytes: kept.length * ARRAY_DOUBLES * 8,
    pushes: counts.pushes, refused: counts.refused, statuses: counts.statuses,
    from: Math.floor(from / 1000), until: Math.ceil(until / 1000),
  }));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
