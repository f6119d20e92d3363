// Issue 25, walked again as a kernel engineer used to Perfetto would at 1600×1000: a selection made in one view lands
// in view in the other (its box checked against the viewport), each click path in two or three clicks without
// scrolling, the keys as in Perfetto, a task's 5,000th call not its last.
import { expect, test } from '@playwright/test';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO, SCREENSHOTS } from './paths';
import { INCIDENT, analysis, expectInView, file, sourceOf } from './walks';

test.use({ viewport: { width: 1600, height: 1000 } });

const XFS_SEED = path.join(REPO, 'samples/xfs-unwritten-stall.trace-cmd-report.txt');

test('a wait chosen in Stalls lands on the timeline with its slice in view, above the drawer', async ({ page, request }) => {
  const id = await analysis(request, 'landing incident', INCIDENT.map(file));
  await page.goto(`/a/${id}?tab=stalls&idle=1`);
  // flush-8:0's wait: no known lock on its stack, and its lane far down the track tree
  const row = page.getByTestId('waits-table').locator('tbody tr', { hasText: 'flush-8:0' }).first();
  await row.click();
  await page.getByTestId('wait-detail').getByRole('button', { name: 'Show on the timeline' }).click();
  const drawer = page.getByTestId('timeline-selected');
  await expect(drawer).toContainText('flush-8:0 (498): wait (no known lock)');
  await expect(drawer.getByRole('button', { name: /^Waits on/ })).toHaveCount(0); // no "Waits on ?"
  // the slice's lane, between the sticky ruler and the drawer (it was ~1,400 px down: the drawer alone showed)
  const lane = page.getByTestId('track-tree').locator('[data-lane^="task:"][data-lane$=":498"]');
  await expect
    .poll(async () => {
      const l = (await lane.boundingBox())!;
      const d = (await drawer.boundingBox())!;
      return l.y >= 24 && l.y + 20 <= d.y;
    })
    .toBe(true);
  await page.screenshot({ path: path.join(SCREENSHOTS, 'landing-wait-on-timeline.png') });
});

test("the calls panel brings a task's calls past the first 5,000 on Show more", async ({ page, request }) => {
  // the seed excerpt with 6,000 short calls of xfsconvertd/7 in the 51 ms before its wait (a generated fixture)
  const pre: string[] = [];
  for (let i = 0; i < 6000; i++) {
    const us = 358613900000 + i * 7;
    pre.push(`   xfsconvertd/7-251 [007] ${Math.floor(us / 1e6)}.${String(us % 1e6).padStart(6, '0')}: funcgraph_entry: 0.500 us | xfs_buf_item_size();`);
  }
  const body = pre.join('\n') + '\n' + fs.readFileSync(XFS_SEED, 'utf8');
  const tmp = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'stallscope-calls-')), 'calls6k.trace-cmd-report.txt');
  fs.writeFileSync(tmp, body);
  const id = await analysis(request, 'landing 6k calls', [file(tmp)]);
  await page.goto(`/a/${id}?tab=stalls&chain=1&link=2`);
  const panel = page.getByTestId('calls-panel');
  await expect(panel).toContainText('Calls of xfsconvertd/7 251');
  await expectInView(page, panel);
  const more = panel.getByTestId('more-rows');
  await expect(more).toContainText('the first 5,000 calls drawn');
  const next = page.waitForResponse((r) => r.url().includes('/calls?') && new URL(r.url()).searchParams.has('cursor'));
  await more.getByTestId('show-more').click();
  const page2 = (await (await next).json()) as { calls: unknown[]; next_cursor: string | null };
  expect(page2.calls.length).toBeGreaterThan(1000); // the rest: 6,000 + the excerpt's own calls in the window
  expect(page2.next_cursor ?? null).toBeNull();
  await expect(more).toHaveCount(0); // every call is drawn
  await expect(panel.locator('[aria-label="Call flame chart"]')).toHaveAttribute('data-ready', '1');
});

test("the chain waterfall's request bar opens the request; a Stalls heatmap cell lists its waits in view", async ({ page, request }) => {
  const id = await analysis(request, 'landing incident', INCIDENT.map(file));
  await page.goto(`/a/${id}?tab=stalls`);
  // the waterfall of the worst chain: its last row is the block request (charts/chainWaterfall.ts: grid top 30, bottom
  // 40, left 150, right 170, a row per link and one for the request)
  const waterfall = page.getByRole('img', { name: 'Wait chain waterfall' });
  await expect(waterfall).toHaveAttribute('data-ready', '1');
  const rows = 5; // four links and the request
  const w = (await waterfall.boundingBox())!;
  const plotH = w.height - 30 - 40;
  await page.mouse.click(w.x + 150 + (w.width - 320) / 2, w.y + 30 + (plotH * (rows - 0.5)) / rows);
  await expect(page).toHaveURL(/tab=dispatch&req=\d+%3A4069/);
  await expectInView(page, page.getByTestId('request-detail'));

  // the Stalls heatmap: a click on its fullest cell lists that cell's waits under the chart, brought into view
  await page.goto(`/a/${id}?tab=stalls`);
  const chart = page.locator('[aria-label="Stalls latency heatmap"]');
  await expect(chart).toHaveAttribute('data-ready', '1');
  type Cell = { x: number; y: number; count: number };
  const h = (await (await request.get(`/api/analyses/${id}/heatmap`, { params: { metric: 'wait', x_bins: 120, y_bins: 40 } })).json()) as {
    x_bins: number; y_bins: number; cells: Cell[];
  };
  const c = [...h.cells].sort((a, b) => b.count - a.count)[0];
  await chart.scrollIntoViewIfNeeded();
  const b = (await chart.boundingBox())!;
  const GRID = { left: 78, right: 92, top: 14, bottom: 62 };
  const cw = (b.width - GRID.left - GRID.right) / h.x_bins;
  const ch = (b.height - GRID.top - GRID.bottom) / h.y_bins;
  await page.mouse.click(b.x + GRID.left + (c.x + 0.5) * cw, b.y + GRID.top + (h.y_bins - 1 - c.y + 0.5) * ch);
  const list = page.getByTestId('heatmap-events');
  await expect(list.getByTestId('heatmap-events-count')).toContainText(`${c.count} waits in the box`);
  await expectInView(page, list);
  await expect(list.locator('tbody tr.selected')).toHaveCount(1); // the cell's slowest wait
});

test("from a task's flame frame to the waits on its lock: three clicks, no scrolling", async ({ page, request }) => {
  const id = await analysis(request, 'landing incident', INCIDENT.map(file));
  await page.goto(`/a/${id}`);
  await page.getByRole('tablist').getByRole('tab', { name: 'Off-CPU' }).click(); // 1
  const flame = page.locator('[aria-label="Off-CPU flame graph"]');
  await expect(flame).toHaveAttribute('data-ready', '1');
  // file_writer's frame, as charts/flame.ts lays out the root's children (18 px rows, the root on top)
  type N = { name: string; value: number; children?: N[] };
  const { root } = (await (await request.get(`/api/analyses/${id}/flamegraph`)).json()) as { root: N };
  const kids = root.children!;
  const i = kids.findIndex((k) => k.name === 'file_writer');
  const x0 = kids.slice(0, i).reduce((s, k) => s + k.value, 0) / root.value;
  const b = (await flame.boundingBox())!;
  expect(b.y + 18 * 2).toBeLessThan(page.viewportSize()!.height); // its row in view without scrolling
  await page.mouse.click(b.x + b.width * (x0 + kids[i].value / root.value / 2), b.y + 18 + 9); // 2
  const detail = page.getByTestId('frame-detail');
  await expect(detail).toContainText('file_writer');
  await expectInView(page, detail);
  const link = detail.getByTestId('frame-locks').getByRole('button', { name: /Waits on xfs_ilock/ });
  await expect(link).toContainText('(2, 4.66 s in all)');
  await link.click(); // 3
  const waits = page.getByTestId('waits-panel');
  await expect(waits.locator('.chip')).toHaveText(/on lock “xfs_ilock”/);
  await expectInView(page, waits);
  await expect(waits.getByTestId('waits-table').locator('tbody tr')).toHaveCount(2);
});

test('measure a wait on the timeline: three clicks from the analysis page, no scrolling', async ({ page, request }) => {
  const id = await analysis(request, 'landing incident', INCIDENT.map(file));
  const a = (await (await request.get(`/api/analyses/${id}`)).json()) as { t_min_ns: number; t_max_ns: number };
  const waits = (await (await request.get(`/api/analyses/${id}/waits?lock_key=xfs_ilock`)).json()) as {
    comm: string; pid: number; start_ns: number; end_ns: number;
  }[];
  const w = waits.find((x) => x.comm === 'file_writer')!;
  await page.goto(`/a/${id}`);
  await page.getByRole('tablist').getByRole('tab', { name: 'Timeline' }).click(); // 1
  const view = page.getByTestId('timeline-view');
  await expect(view.locator('[aria-label="Analysis timeline"]')).toHaveAttribute('data-ready', '1');
  // the whole analysis: the wait's slice (3 px under its lane's top, 16 px tall) is in the window without scrolling
  const lane = (await view.locator(`[data-lane$=":${w.pid}"][data-lane^="task:"]`).boundingBox())!;
  expect(lane.y + 19).toBeLessThan(page.viewportSize()!.height);
  const plot = (await view.locator('.timeline-plot').boundingBox())!;
  const frac = ((w.start_ns + w.end_ns) / 2 - a.t_min_ns) / (a.t_max_ns - a.t_min_ns);
  await page.mouse.click(plot.x + 8 + frac * (plot.width - 24), lane.y + 3 + 8); // 2
  const drawer = page.getByTestId('timeline-selected');
  await expect(drawer).toContainText('file_writer (3271): wait in xfs_ilock');
  await drawer.getByRole('button', { name: 'Measure it' }).click(); // 3
  await expect(view.getByTestId('measure')).toHaveText(/Δt 2\.30 s/);
  expect(await page.evaluate(() => window.scrollY)).toBe(0);
  await expectInView(page, view.locator('.measure-label').first());
});

test('the chains list has a filter: by any task, pid or lock of a chain', async ({ page, request }) => {
  const id = await analysis(request, 'landing incident', INCIDENT.map(file));
  type C = { id: number; links: { comm: string | null; pid: number | null; lock: string | null }[] };
  const chains = (await (await request.get(`/api/analyses/${id}/chains`, { params: { limit: 100 } })).json()) as C[]; // as the page asks
  const withPid = chains.filter((c) => c.links.some((l) => l.pid === 2214));
  expect(withPid.length).toBeGreaterThan(1);
  await page.goto(`/a/${id}?tab=stalls`);
  const rows = page.getByTestId('chain-list').locator('tbody tr');
  await expect(rows).toHaveCount(chains.length);
  await page.getByLabel('Filter chains: task, pid, lock').fill('2214');
  await expect(rows).toHaveCount(withPid.length);
  await expect(page.getByTestId('chains-shown')).toHaveText(`${withPid.length} of ${chains.length}`);
  // a later link's task counts too: xfslogd ends the worst chain, whose first task is file_writer
  await page.getByLabel('Filter chains: task, pid, lock').fill('xfslogd');
  await expect(rows.first()).toContainText('file_writer 3271');
  await rows.first().click();
  await expect(page.getByTestId('chain-detail')).toContainText('Chain #1');
});

test('a block request shows on the timeline, selected and in view, and leads back', async ({ page, request }) => {
  const id = await analysis(request, 'landing incident', INCIDENT.map(file));
  const blk = { id: await sourceOf(request, id, 'blkparse') };
  await page.goto(`/a/${id}?tab=dispatch&req=${blk.id}%3A4069`);
  const detail = page.getByTestId('request-detail');
  await expect(detail).toContainText('141698288');
  await detail.getByRole('button', { name: 'Show on the timeline' }).click();
  const drawer = page.getByTestId('timeline-selected');
  await expect(drawer.locator('h3').first()).toHaveText(/^(8,0 \(device\)|xfsaild\/sda1 \(804\)): I→D \(queued\)$/);
  await expect(drawer).toContainText('source ' + blk.id + ', line 4069');
  await expect(page.getByTestId('timeline-window')).toContainText(/\(5\.\d\d s\)/); // the request's A to C (3.72 s) and a quarter each side
  const lane = page.getByTestId('track-tree').locator(`[data-lane="dev:${blk.id}:8,0"]`);
  const l = (await lane.boundingBox())!;
  const d = (await drawer.boundingBox())!;
  expect(l.y).toBeGreaterThanOrEqual(24);
  expect(l.y + l.height).toBeLessThanOrEqual(d.y);
  await drawer.getByTestId('drawer-request').click();
  await expectInView(page, page.getByTestId('request-detail'));
});

test("the drawer's \"Waits on <lock>\" lands on those waits, the wait selected and in view, with a chain open before", async ({ page, request }) => {
  const id = await analysis(request, 'landing incident', INCIDENT.map(file));
  const ftrace = { id: await sourceOf(request, id, 'ftrace') };
  // file_writer's wait selected on the timeline, its chain #1 open (the chain's detail was revealed over the waits)
  await page.goto(`/a/${id}?tab=timeline&v0=9800000000&v1=13400000000&tl_sel=${ftrace.id}%3A8656&chain=1`);
  const drawer = page.getByTestId('timeline-selected');
  await drawer.getByRole('button', { name: 'Waits on xfs_ilock' }).click();
  const waits = page.getByTestId('waits-panel');
  await expect(waits.locator('.chip')).toHaveText(/on lock “xfs_ilock”/);
  const row = waits.getByTestId('waits-table').locator('tbody tr.selected');
  await expect(row).toContainText('file_writer 3271');
  await expectInView(page, row);
  await expect(page).not.toHaveURL(/chain=/);
});

test('F fits the selected slice, D and A pan by a fifth of the window', async ({ page, request }) => {
  const id = await analysis(request, 'landing incident', INCIDENT.map(file));
  const ftrace = { id: await sourceOf(request, id, 'ftrace') };
  await page.goto(`/a/${id}?tab=timeline&v0=9800000000&v1=13400000000&tl_sel=${ftrace.id}%3A8656`);
  await expect(page.getByTestId('timeline-selected')).toContainText('file_writer (3271): wait in xfs_ilock');
  const text = page.getByTestId('timeline-window');
  const win = async () => {
    const m = /^\+?(\d+\.\d+) s → \+?(\d+\.\d+) s/.exec((await text.textContent())!)!;
    return [Number(m[1]), Number(m[2])];
  };
  await page.mouse.move(5, 5);
  await page.keyboard.press('f');
  // the wait (10.482269 → 12.786439 s) and a tenth of it each side
  await expect(text).toContainText('+10.251852 s → +13.016856 s (2.77 s)');
  const [a, b] = await win();
  await page.keyboard.press('d');
  await expect.poll(async () => (await win())[0]).toBeCloseTo(a + 0.2 * (b - a), 5);
  await page.keyboard.press('a');
  await expect.poll(async () => (await win())[0]).toBeCloseTo(a, 5);
});

test("a chain's participant chip lands on that link's calls, stack and block request, all in view", async ({ page, request }) => {
  // the incident's chain #1: xfsconvertd/0 (421) waited on the I/O of a block request. Its chip scrolled to the calls
  // and left its stack and block request 1,500-2,500 px below, in a card at the end of the chain
  const id = await analysis(request, 'landing incident', INCIDENT.map(file));
  await page.goto(`/a/${id}?tab=stalls&idle=1&chain=1`);
  const chainPath = page.getByTestId('chain-path');
  await chainPath.getByRole('button', { name: /^xfsconvertd\/0 421/ }).click();
  await expect(page).toHaveURL(/[?&]link=3/);
  const focus = page.getByTestId('link-focus');
  await expect(focus.getByTestId('calls-panel')).toContainText('Calls of xfsconvertd/0 421');
  await expect(focus.getByRole('img', { name: 'Call flame chart' })).toHaveAttribute('data-ready', '1');
  await expectInView(page, focus.getByTestId('calls-panel'));
  await expectInView(page, focus.getByTestId('link-3').getByTestId('request-link'));
  await expectInView(page, focus.getByTestId('stack-3').locator('li').first());
  await page.screenshot({ path: path.join(SCREENSHOTS, 'chain-chip-lands.png') });
});
