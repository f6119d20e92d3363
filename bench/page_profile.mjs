// Where a cold analysis page's main-thread time goes (docs/BENCHMARKS-HISTORY.md, issue 25): headless Chromium, a fresh
// browser context per load, V8's sampling profiler (Chrome DevTools protocol, 200 µs) from navigation until a selector
// is in the page; self time summed per script (the chunk's name without its hash) or native frame, averaged.
//
//   node bench/page_profile.mjs BASE_URL ANALYSIS_ID 'tab=timeline' '[aria-label="Analysis timeline"][data-ready="1"]' [LOADS]
//
// ("(program)": V8 and Blink's own work — parsing, compiling, style, layout; "(idle)": the main thread waiting.)
import { chromium } from 'playwright-core';
import fs from 'node:fs';

const [base, id, query, selector, loadsArg] = process.argv.slice(2);
const LOADS = Number(loadsArg ?? 3);
const CHROMIUM = JSON.parse(fs.readFileSync(new URL('../e2e/chromium.json', import.meta.url), 'utf8'));
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? CHROMIUM.executablePath, headless: true, args: CHROMIUM.args });
const total = {};
try {
  for (let run = 0; run < LOADS; run++) {
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    const page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
    await cdp.send('Profiler.start');
    await page.goto(`${base}/a/${id}${query ? `?${query}` : ''}`, { waitUntil: 'commit' });
    await page.waitForSelector(selector, { timeout: 60_000, state: 'attached' });
    const ready = await page.evaluate(() => performance.now());
    const { profile } = await cdp.send('Profiler.stop');
    const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
    const self = new Map();
    profile.samples.forEach((s, i) => self.set(s, (self.get(s) ?? 0) + (profile.timeDeltas[i] ?? 0)));
    for (const [nid, us] of self) {
      const cf = nodes.get(nid).callFrame;
      const key = cf.url ? cf.url.replace(/^.*\/assets\//, '').replace(/-[A-Za-z0-9_-]{8}\.js$/, '') : `(${cf.functionName || 'native'})`;
      total[key] = (total[key] ?? 0) + us / 1000;
    }
    console.log(`load ${run + 1}/${LOADS}: ready at ${ready.toFixed(0)} ms`);
    await context.close();
  }
} finally {
  await browser.close();
}
console.log('main-thread self time per load (ms):');
for (const [k, v] of Object.entries(total).sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`${(v / LOADS).toFixed(1).padStart(8)}  ${k}`);
