import { expect, test } from '@playwright/test';
import path from 'node:path';
import { REPO, SCREENSHOTS } from './paths';

const DEMO = path.join(REPO, 'samples/demo-cfq-starvation.blkparse.txt');
// As in frontend/src/charts/heatmap.ts (GRID) and LatencyHeatmap.tsx (bins).
const GRID = { left: 78, right: 92, top: 14, bottom: 62 };
const X_BINS = 120;
const Y_BINS = 40;

type Cell = { x: number; y: number; count: number; max_ns: number; max_source_id: number; max_line: number };

test('latency heatmap: percentiles, the outlier cell opens the xfsaild write', async ({ page }) => {
  await page.goto('/');
  await page.getByTestId('file-input').setInputFiles(DEMO);
  await page.getByRole('button', { name: /^Analyse/ }).click();
  const result = page.getByTestId('upload-result');
  await expect(result.getByTestId('source-format')).toHaveText('blkparse', { timeout: 30_000 });
  await result.getByRole('link', { name: /Open analysis/ }).click();

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
  const data = (await res.json()) as { cells: Cell[] };
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

  await expect(page).toHaveURL(new RegExp(`req=${top.max_source_id}%3A${top.max_line}`));
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
