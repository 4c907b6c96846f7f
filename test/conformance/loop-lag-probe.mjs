// Preloaded into a test's `sluice serve` child (`node --import`): records how late the child's
// event loop runs, so a failed multi-host test can say whether a host was frozen, and since when.
// Diagnostics only: nothing asserts on these numbers.
import { writeFileSync } from 'node:fs';

const file = process.env.SLUICE_TEST_LOOP_LAG_FILE;
if (file) {
  const TICK_MS = 100;
  const started = Date.now();
  let expected = started + TICK_MS;
  let maxLagMs = 0;
  let maxLagAtMs = 0;
  /** The worst lag of each of the last 30 seconds, oldest first. */
  const perSecond = [];
  /** The last 10 stalls of 250 ms or more: when they ended (ms since start) and how long. */
  const stalls = [];
  let second = 0;
  let ticks = 0;
  const timer = setInterval(() => {
    const now = Date.now();
    const lag = Math.max(0, now - expected);
    expected = now + TICK_MS;
    if (lag > maxLagMs) {
      maxLagMs = lag;
      maxLagAtMs = now - started;
    }
    second = Math.max(second, lag);
    if (lag >= 250) {
      stalls.push([now - started, lag]);
      if (stalls.length > 10) stalls.shift();
    }
    if (++ticks % 10 !== 0) return;
    perSecond.push(second);
    if (perSecond.length > 30) perSecond.shift();
    second = 0;
    try {
      writeFileSync(
        file,
        JSON.stringify({ pid: process.pid, maxLagMs, maxLagAtMs, lastBeat: now, perSecond, stalls }),
      );
    } catch {
      // The test removed its home: nothing left to tell.
    }
  }, TICK_MS);
  timer.unref();
}
