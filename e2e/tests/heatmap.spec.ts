import { expect, test, type Locator, type Page } from '@playwright/test';
import path from 'node:path';
import { REPO, SCREENSHOTS, SEED_XFS } from './paths';
import { copyLinkAndOpenElsewhere } from './share';

const DEMO = path.join(REPO, 'samples/demo-cfq-starvation.blkparse.txt');
const XFS_SEED = SEED_XFS;
// As in frontend/src/charts/heatmap.ts (GRID) and LatencyHeatmap.tsx (bins).
const GRID = { left: 78, right: 92, top: 14, bottom: 62 };
const X_BINS = 120;
const Y_BINS = 40;

type Ref = { kind: string; source_id: number; line: number; pid: number | null };
type Cell = { x: number; y: number; count: number; max_ns: number; max_ref: Ref };
type HeatmapData = { t0_ns: number; t1_ns: number; x_bins: number; x_bin_ns: number; y_bins: number; y_edges_ns: number[]; cells: Cell[] };

async function upload(page: Page, file: string) {
  await page.goto('/');
  await page.getByTestId('file-input').setInputFiles(file);
  await page.getByRole('button', { name: /^Analyse/ }).click();
  const result = page.getByTestId('upload-result');
  await expect(result.getByTestId('source-format')).toBeVisible({ timeout: 30_000 });
  await result.getByRole('link', { name: /Open analysis/ }).click();
  return /\/a\/([^/?#]+)/.exec(page.url())![1];
}

/** The page position of the centre of cell (x, y) of a heatmap chart drawn with bins (x_bins, y_bins). */
async function cellAt(chart: Locator, h: { x_bins: number; y_bins: number }, x: number, y: number): Promise<[number, number]> {
  const box = (await chart.boundingBox())!;
  const cw = (box.width - GRID.left - GRID.right) / h.x_bins;
  const ch = (box.height - GRID.top - GRID.bottom) / h.y_bins;
  return [box.x + GRID.left + (x + 0.5) * cw, box.y + GRID.top + (h.y_bins - 1 - y + 0.5) * ch];
}

/** Drags the brush from the centre of cell (xa, ya) to that of (xb, yb). */
async function brush(page: Page, chart: Locator, h: HeatmapData, [xa, ya]: [number, number], [xb, yb]: [number, number]) {
  const [x0, y0] = await cellAt(chart, h, xa, ya);
  const [x1, y1] = await cellAt(chart, h, xb, yb);
  await page.mouse.move(x0, y0);
  await page.mouse.down();
  await page.mouse.move((x0 + x1) / 2, (y0 + y1) / 2, { steps: 5 });
  await page.mouse.move(x1, y1, { steps: 5 });
  await page.mouse.up();
}

test('latency heatmap: percentiles, the outlier cell opens the xfsaild write', async ({ page }) => {
  await page.goto('/');
  await page.getByTestId('file-input').setInputFiles(DEMO);
  await page.getByRole('button', { name: /^Analyse/ }).click();
  const result = page.getByTestId('upload-result');
  await expect(result.getByTestId('source-format')).toHaveText('blkparse', { timeout: 30_000 });
  await result.getByRole('link', { name: /Open analysis/ }).click();
  await page.getByRole('tablist').getByRole('tab', { name: 'Dispatch' }).click();

  const panel = page.getByTestId('latency-heatmap');
  const chart = panel.getByRole('img', { name: 'Latency heatmap' });
  await expect(chart.locator('canvas').first()).toBeVisible();
  const pct = panel.getByTestId('heatmap-percentiles');
  await expect(pct.locator('tr', { hasText: 'max' })).toContainText('15.63 s');
  await expect(pct.locator('tr', { hasText: 'count' })).toContainText('5,000 requests');
  await expect(pct.locator('tr', { hasText: 'p50' })).toContainText('122.5 µs');

  // Where the API puts the hottest outlier: the cell holding the max latency.
  const id = /\/a\/([^/?#]+)/.exec(page.url())![1];
  const res = await page.request.get(`/api/analyses/${id}/heatmap`, {
    params: { metric: 'i2d', x_bins: X_BINS, y_bins: Y_BINS },
  });
  const data = (await res.json()) as HeatmapData;
  const top = data.cells.reduce((a, b) => (b.max_ns > a.max_ns ? b : a));
  expect(top.max_ns).toBe(15626265317);
  expect(top.y).toBe(Y_BINS - 1);

  await page.evaluate(() => window.scrollTo(0, 0));
  await chart.scrollIntoViewIfNeeded();
  const box = (await chart.boundingBox())!;
  const cw = (box.width - GRID.left - GRID.right) / X_BINS;
  const ch = (box.height - GRID.top - GRID.bottom) / Y_BINS;
  const x = box.x + GRID.left + (top.x + 0.5) * cw;
  const y = box.y + GRID.top + (Y_BINS - 1 - top.y + 0.5) * ch;
  await page.mouse.move(x, y);
  await expect(panel.locator('div', { hasText: 'max: 15.63 s' }).last()).toBeVisible();
  await page.screenshot({ path: path.join(SCREENSHOTS, 'dispatch-heatmap.png'), fullPage: true });
  await page.mouse.click(x, y);

  expect(top.max_ref).toMatchObject({ kind: 'request', pid: 804 });
  await expect(page).toHaveURL(new RegExp(`req=${top.max_ref.source_id}%3A${top.max_ref.line}`));
  const detail = page.getByTestId('request-detail');
  await expect(detail).toBeVisible();
  await expect(detail).toContainText('xfsaild/sda1');
  await expect(detail).toContainText('15.63 s');

  // The metric is in the URL.
  await panel.getByRole('button', { name: 'D2C' }).click();
  await expect(page).toHaveURL(/hm=d2c/);
  await expect(pct.locator('th').first()).toHaveText('D2C');
  await expect(pct.locator('tr', { hasText: 'max' })).toContainText('7.74 ms');
});

test('brushing the Dispatch heatmap lists the requests of the box; its time range and a shared link', async ({ page, browser }) => {
  const id = await upload(page, DEMO);
  await page.getByRole('tablist').getByRole('tab', { name: 'Dispatch' }).click();
  const panel = page.getByTestId('latency-heatmap');
  const chart = panel.getByRole('img', { name: 'Latency heatmap' });
  await expect(chart.locator('canvas').first()).toBeVisible();
  const res = await page.request.get(`/api/analyses/${id}/heatmap`, { params: { metric: 'i2d', x_bins: X_BINS, y_bins: Y_BINS } });
  const h = (await res.json()) as HeatmapData;
  const top = h.cells.find((c) => c.y === Y_BINS - 1)!;
  // a box around the outlier: two time bins either side, latencies above 3.9 ms
  const [xa, xb, ya, yb] = [top.x - 2, top.x + 2, Y_BINS - 22, Y_BINS - 1];
  const inside = h.cells.filter((c) => c.x >= xa && c.x <= xb && c.y >= ya && c.y <= yb).reduce((n, c) => n + c.count, 0);
  expect(inside).toBeGreaterThan(1);

  await page.evaluate(() => window.scrollTo(0, 0));
  await chart.scrollIntoViewIfNeeded();
  await brush(page, chart, h, [xa, yb], [xb, ya]);
  const t0 = h.t0_ns + xa * h.x_bin_ns;
  const t1 = Math.min(h.t0_ns + (xb + 1) * h.x_bin_ns - 1, h.t1_ns);
  await expect(page).toHaveURL(new RegExp(`hbox=i2d_${t0}_${t1}_${h.y_edges_ns[ya]}_(&|$)`));
  const list = panel.getByTestId('heatmap-events');
  await expect(list.getByTestId('heatmap-events-count')).toHaveText(`${inside} requests in the box · slowest first`);
  const rows = list.getByTestId('heatmap-events-table').locator('tbody tr');
  await expect(rows).toHaveCount(inside);
  await expect(rows.first()).toContainText('15.63 s');
  await expect(rows.first()).toContainText('xfsaild/sda1 804');
  await expect(rows.first()).toContainText('WM');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'dispatch-heatmap-brush.png'), fullPage: true });

  // the row opens its request
  await rows.first().click();
  await expect(page).toHaveURL(/req=\d+%3A9915/);
  await expect(page.getByTestId('request-detail')).toContainText('xfsaild/sda1');
  await expect(rows.first()).toHaveClass(/selected/);

  // the box's time range becomes the analysis-wide one; the list stays
  await list.getByRole('button', { name: 'Select this time range' }).click();
  await expect(page).toHaveURL(new RegExp(`t0=${t0}&t1=${t1}`));
  await expect(page.getByTestId('time-range')).toBeVisible();
  await expect(list.getByTestId('heatmap-events-count')).toHaveText(`${inside} requests in the box · slowest first`);

  // a shared link shows the same list
  const { other } = await copyLinkAndOpenElsewhere(page, browser);
  const list2 = other.getByTestId('latency-heatmap').getByTestId('heatmap-events');
  await expect(list2.getByTestId('heatmap-events-count')).toHaveText(`${inside} requests in the box · slowest first`);
  await expect(list2.getByTestId('heatmap-events-table').locator('tbody tr').first()).toContainText('15.63 s');
  await other.context().close();

  // clearing the box
  await list.getByRole('button', { name: 'Clear the box' }).click();
  await expect(page).not.toHaveURL(/hbox=/);
  await expect(panel.getByTestId('heatmap-events')).toHaveCount(0);
});

test('the Stalls heatmap of the seed excerpt: waits by lock, a box of waits leads to their chain, function durations', async ({ page }) => {
  const id = await upload(page, XFS_SEED);
  const panel = page.getByTestId('stalls-heatmap');
  const chart = panel.getByRole('img', { name: 'Stalls latency heatmap' });
  await expect(chart.locator('canvas').first()).toBeVisible();
  const pct = panel.getByTestId('heatmap-percentiles');
  await expect(pct.locator('th').first()).toHaveText('wait');
  // the three stalls: file_reader's 246 µs sleep (S, on no lock) is an idle sleep, not counted
  await expect(pct.locator('tr', { hasText: 'count' })).toContainText('3 waits');
  await expect(pct.locator('tr', { hasText: 'max' })).toContainText('342.5 ms');

  // by lock: xfs_ilock (file_writer's down_write and flush-8:0's down_read)
  await panel.getByLabel('Lock').selectOption('xfs_ilock');
  await expect(page).toHaveURL(/shf=xfs_ilock/);
  await expect(pct.locator('th').first()).toHaveText('wait on xfs_ilock');
  await expect(pct.locator('tr', { hasText: 'count' })).toContainText('2 waits');
  await expect(pct.locator('tr', { hasText: 'p50' })).toContainText('316.7 ms');
  await expect(pct.locator('tr', { hasText: 'max' })).toContainText('320.9 ms');

  const res = await page.request.get(`/api/analyses/${id}/heatmap`, {
    params: { metric: 'wait', filter: 'xfs_ilock', x_bins: X_BINS, y_bins: Y_BINS },
  });
  const h = (await res.json()) as HeatmapData;
  // (the bins run from the decade below the fastest, 100 ms, to just above the slowest: both in the top one)
  expect(h.cells.map((c) => [c.x, c.y, c.max_ref.line])).toEqual([[0, Y_BINS - 1, 72], [X_BINS - 1, Y_BINS - 1, 94]]);

  // a box over the whole grid: both waits, the longest first; file_writer's opens its chain link
  await page.evaluate(() => window.scrollTo(0, 0));
  await chart.scrollIntoViewIfNeeded();
  await brush(page, chart, h, [0, Y_BINS - 1], [X_BINS - 1, 0]);
  await expect(page).toHaveURL(/hbox=wait_358613964695000_358613968921000__(&|$)/);
  const list = panel.getByTestId('heatmap-events');
  await expect(list.getByTestId('heatmap-events-count')).toHaveText('2 waits in the box · slowest first');
  const rows = list.getByTestId('heatmap-events-table').locator('tbody tr');
  await expect(rows.nth(0)).toContainText('320.9 ms+');
  await expect(rows.nth(0)).toContainText('flush-8:0 505');
  await expect(rows.nth(0)).toContainText('xfs_ilock via down_read');
  await expect(rows.nth(1)).toContainText('316.7 ms');
  await expect(rows.nth(1)).toContainText('file_writer 30495');
  await expect(rows.nth(1)).toContainText('open chain link 1');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'stalls-heatmap-brush.png'), fullPage: true });
  await rows.nth(1).click();
  await expect(page).toHaveURL(/chain=1&link=1/);
  await expect(page).toHaveURL(/wait=\d+%3A94/);
  await expect(page.getByTestId('chain-detail').getByTestId('link-1')).toHaveClass(/selected/);
  await expect(rows.nth(1)).toHaveClass(/selected/);

  // a cell: the outlier wait behind it, alone in the list
  await chart.scrollIntoViewIfNeeded();
  const [cx, cy] = await cellAt(chart, h, 0, Y_BINS - 1);
  await page.mouse.click(cx, cy);
  await expect(page).toHaveURL(/wait=\d+%3A72/);
  await expect(list.getByTestId('heatmap-events-count')).toHaveText('1 wait in the box · slowest first');
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toHaveClass(/selected/);

  // function durations: the function with the most time in calls first
  await panel.getByRole('button', { name: 'function duration' }).click();
  await expect(page).toHaveURL(/shm=func/);
  await expect(page).not.toHaveURL(/hbox=/);
  await expect(panel.getByLabel('Function')).toHaveValue('xfs_ilock');
  await expect(pct.locator('th').first()).toHaveText('xfs_ilock duration');
  await expect(pct.locator('tr', { hasText: 'count' })).toContainText('2 calls');
  await expect(pct.locator('tr', { hasText: 'max' })).toContainText('316.7 ms');
  await panel.getByLabel('Function').fill('down_write');
  await expect(page).toHaveURL(/shf=down_write/);
  await expect(pct.locator('tr', { hasText: 'count' })).toContainText('1 call');
});
