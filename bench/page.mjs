// Page-ready times of the analysis page in headless Chromium (run by bench/page.py, which starts the server).
//
//   node bench/page.mjs BASE_URL ANALYSIS_ID RUNS OUT.json
//
// For each run and each tab, a fresh browser context (empty cache and storage: a cold page) opens
// BASE_URL/a/ID?tab=..., and an init script (installed before the app's own scripts) records, on the page's
// clock (performance.now(): ms since navigation start), when each part of the tab is first drawn:
// a chart when its container says data-ready="1" (set by charts/EChart.tsx after ECharts' `finished`
// event for its option), a table when its body has a row. The tab is ready when all its parts are.
// Tabs are interleaved run by run. Each wait is bounded (TIMEOUT_MS); a part that never shows is reported.
import { chromium } from 'playwright-core';
import fs from 'node:fs';

const [base, id, runsArg, out] = process.argv.slice(2);
const RUNS = Number(runsArg);
const TIMEOUT_MS = 60_000;

// part name -> CSS selector of the element whose presence means "drawn"
const TABS = {
  timeline: { query: 'tab=timeline', parts: { timeline: '[aria-label="Analysis timeline"][data-ready="1"]' } },
  dispatch: {
    query: 'tab=dispatch',
    parts: {
      'latency chart': '[aria-label="I2D and D2C latency over time"][data-ready="1"]',
      heatmap: '[data-testid="latency-heatmap"] [data-ready="1"]',
      summary: '[data-testid="summary-table"] tbody tr',
      requests: '[data-testid="requests-table"] tbody tr',
    },
  },
  'stalls (the default tab)': {
    query: '',
    parts: {
      'chain list': '[data-testid="chain-list"] tbody tr',
      'stalls heatmap': '[data-testid="stalls-heatmap"] [data-ready="1"]',
    },
  },
  offcpu: { query: 'tab=offcpu', parts: { 'flame graph': '[aria-label="Off-CPU flame graph"][data-ready="1"]' } },
};

// Runs in the page before any of its scripts: watches the DOM and notes when each selector first matches.
function watch(parts) {
  const seen = {};
  window.__benchReady = seen;
  const check = () => {
    for (const [name, sel] of Object.entries(parts)) {
      if (!(name in seen) && document.querySelector(sel)) seen[name] = performance.now();
    }
  };
  const start = () => {
    new MutationObserver(check).observe(document.documentElement, {
      subtree: true,
      childList: true,
      attributes: true,
      attributeFilter: ['data-ready'],
    });
    check();
  };
  if (document.documentElement) start();
  else document.addEventListener('readystatechange', start, { once: true });
}

const CHROMIUM = JSON.parse(fs.readFileSync(new URL('../e2e/chromium.json', import.meta.url), 'utf8')); // as the e2e tests
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? CHROMIUM.executablePath,
  headless: true,
  args: CHROMIUM.args,
});
const results = { browser: `chromium ${browser.version()}`, runs: RUNS, tabs: {} };
try {
  for (let run = 0; run < RUNS; run++) {
    for (const [tab, { query, parts }] of Object.entries(TABS)) {
      const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
      const page = await context.newPage();
      await page.addInitScript(watch, parts);
      const url = `${base}/a/${id}${query ? `?${query}` : ''}`;
      const rec = { url };
      try {
        await page.goto(url, { waitUntil: 'commit', timeout: TIMEOUT_MS });
        await page.waitForFunction((names) => names.every((n) => n in (window.__benchReady ?? {})), Object.keys(parts), {
          timeout: TIMEOUT_MS,
          polling: 50,
        });
      } catch (e) {
        rec.error = String(e.message ?? e).split('\n')[0];
      }
      const m = await page
        .evaluate(() => {
        const nav = performance.getEntriesByType('navigation')[0];
        const api = performance
          .getEntriesByType('resource')
          .filter((r) => r.name.includes('/api/'))
          .map((r) => ({ path: new URL(r.name).pathname.split('/').slice(4).join('/') || 'analysis', start: r.startTime, end: r.responseEnd, bytes: r.encodedBodySize }));
        return { parts: { ...(window.__benchReady ?? {}) }, domContentLoaded: nav?.domContentLoadedEventEnd ?? null, api };
        })
        .catch((e) => ({ parts: {}, domContentLoaded: null, api: [], error: String(e.message ?? e).split('\n')[0] }));
      if (m.error) rec.error = rec.error ?? m.error;
      rec.parts = m.parts;
      rec.domContentLoaded = m.domContentLoaded;
      rec.api = m.api;
      const missing = Object.keys(parts).filter((n) => !(n in m.parts));
      if (missing.length) rec.missing = missing;
      else rec.ready = Math.max(...Object.values(m.parts));
      (results.tabs[tab] ??= []).push(rec);
      console.error(`run ${run + 1}/${RUNS} ${tab}: ${rec.ready !== undefined ? `${rec.ready.toFixed(0)} ms` : `not ready (${missing.join(', ')}; ${rec.error ?? ''})`}`);
      await context.close();
    }
  }
} finally {
  await browser.close();
}
fs.writeFileSync(out, JSON.stringify(results, null, 1));
