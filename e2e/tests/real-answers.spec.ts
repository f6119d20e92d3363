// Issue 33, points 1-3: answers that hold on real captures (public samples), at 1600×1000.
import { expect, test } from '@playwright/test';
import path from 'node:path';
import { PUBLIC, SCREENSHOTS, needsPublic } from './paths';
import { analysis, file } from './walks';

needsPublic(); // every walk here reads the public captures

test.use({ viewport: { width: 1600, height: 1000 } });

const TRACE_DAT = path.join(PUBLIC, 'trace-cmd-report/trace-dat/langraph-trace.dat');

test('Stalls lists jbd2’s I/O wait first, each wait with its reason; idle sleeps one toggle away', async ({ page, request }) => {
  const id = await analysis(request, 'langraph trace.dat', [file(TRACE_DAT)]);
  await page.goto(`/a/${id}?tab=stalls`);
  // the chain it starts, opened first, says why too
  await expect(page.getByTestId('chain-detail').getByTestId('link-why-1')).toHaveText('io buffer under I/O');
  const rows = page.getByTestId('waits-table').locator('tbody tr');
  const first = rows.first();
  await expect(first).toContainText('jbd2/sda3-8');
  await expect(first).toContainText('229.7 ms');
  await expect(first.getByTestId('wait-why')).toHaveText('io buffer under I/O');
  // no idle wait among the first 20
  await expect(rows.nth(19)).toBeVisible();
  const why = await page.getByTestId('wait-why').allTextContents();
  expect(why.slice(0, 20).filter((t) => t.startsWith('idle'))).toEqual([]);
  await page.getByTestId('waits-panel').scrollIntoViewIfNeeded();
  await page.screenshot({ path: path.join(SCREENSHOTS, 'real-answers-waits.png') });
  // the toggle brings the idle sleeps back, named so
  // (the page may still be writing its first state to the URL: click until the box holds)
  const toggle = page.getByTestId('waits-panel').getByLabel('idle sleeps too');
  await expect(async () => {
    if (!(await toggle.isChecked())) await toggle.click();
    await expect(toggle).toBeChecked({ timeout: 2000 });
  }).toPass();
  await expect(page).toHaveURL(/idle=/);
  await expect(page.getByTestId('wait-why').first()).toContainText(/^idle (kernel thread idle|waiting for an event)/);
  await page.screenshot({ path: path.join(SCREENSHOTS, 'real-answers-waits-idle.png') });
  // the waits heatmap follows the same toggle (its own box in its header): every wait, the 6.79 s worker sleep its max
  const heat = page.getByTestId('stalls-heatmap');
  const pct = heat.getByTestId('heatmap-percentiles');
  await expect(heat.getByLabel('idle sleeps too')).toBeChecked();
  await expect(pct).toContainText('wait (idle sleeps too)');
  await expect(pct).toContainText('1,126 waits');
  await expect(heat.getByLabel('Lock')).toContainText('worker_thread');
  await heat.scrollIntoViewIfNeeded();
  await page.screenshot({ path: path.join(SCREENSHOTS, 'real-answers-heatmap-idle.png') });
  // unticked there, both the heatmap and the list are the stalls again
  await heat.getByLabel('idle sleeps too').uncheck();
  await expect(pct).toContainText('45 waits');
  await expect(pct.locator('tr', { hasText: 'max' })).toContainText('229.7 ms');
  await expect(toggle).not.toBeChecked();
  await expect(heat.getByLabel('Lock')).not.toContainText('worker_thread');
  await toggle.check();
  // a wait outside every chain: its details say why, in a sentence
  const idleRow = rows.first();
  await idleRow.click();
  await expect(page.getByTestId('wait-detail-why')).toContainText(/a kernel thread's loop waiting for work|a thread asleep until something happens/);
});

const LOOP = path.join(PUBLIC, 'blkparse-text/derived-romeus-loop0-dump-x0y1.blkparse.txt');
const LOOP_BINARY = path.join(PUBLIC, 'blktrace-binary/romeus-blkparse-dump/trace_x_1_y_1.bin');

test('a loop device’s I2D heatmap and its comparison reach down to nanoseconds', async ({ page, request }) => {
  const a = await analysis(request, 'romeus loop0 x0y1', [file(LOOP)]);
  const b = await analysis(request, 'romeus loop0 x1y1', [file(LOOP_BINARY)]);
  await page.goto(`/a/${a}?tab=dispatch`);
  const heat = page.getByTestId('latency-heatmap');
  await expect(heat.getByRole('button', { name: 'I2D' })).toHaveAttribute('aria-pressed', 'true');
  await expect(heat.locator('canvas').first()).toBeVisible();
  // the y axis starts at 100 ns (before: 1 µs, every request in one row)
  const h = (await (await request.get(`/api/analyses/${a}/heatmap?metric=i2d&x_bins=120&y_bins=40`)).json()) as { y_edges_ns: number[] };
  expect(h.y_edges_ns[0]).toBe(100);
  await page.screenshot({ path: path.join(SCREENSHOTS, 'real-answers-loop-i2d.png') });
  await page.goto(`/compare?a=${a}&b=${b}`);
  const scale = page.getByTestId('compare-heatmaps-i2d').getByTestId('compare-heatmap-scale');
  await expect(scale).toContainText(/latency bins 100 ns – 1\.\d+ µs/);
  await expect(scale).not.toContainText('1.00 µs – 1.62 µs');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'real-answers-loop-compare.png') });
});

const KEKS = ['0', '1', '2', '3', '4', '5', '6', '7'].map((k) => path.join(PUBLIC, `blktrace-binary/isotopp-keks/keks.blktrace.${k}`));
const HADOOP = ['0', '1'].map((k) => path.join(PUBLIC, `blktrace-binary/zzunny97-hadoop-eternity8-partial/sdb.blktrace.${k}`));

test('a D/C-only capture opens Dispatch on D2C, sorted by D2C; the upload says what it lacks', async ({ page }) => {
  await page.goto('/');
  await page.getByTestId('file-input').setInputFiles(KEKS);
  await page.getByLabel('Name (optional)').fill('keks D and C');
  await page.getByRole('button', { name: /^Analyse/ }).click();
  const result = page.getByTestId('upload-result');
  await expect(result).toBeVisible({ timeout: 30_000 });
  await expect(result.getByTestId('upload-gaps')).toContainText('no I events and no Q events: only D and C were captured');
  await expect(result.getByTestId('upload-gaps')).toContainText('blktrace -d /dev/sdX -o trace (no -a mask: every action)');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'real-answers-keks-upload.png') });
  await result.getByRole('link', { name: /Open analysis/ }).click();
  const heat = page.getByTestId('latency-heatmap');
  await expect(heat.getByRole('button', { name: 'D2C' })).toHaveAttribute('aria-pressed', 'true');
  await expect(heat.getByRole('button', { name: 'I2D' })).toBeDisabled();
  await expect(heat.locator('canvas').first()).toBeVisible();
  await expect(page.getByRole('heading', { name: 'Slowest requests by D2C' })).toBeVisible();
  // the summary sorted by D2C's max, not by the all-"—" I2D column
  await expect(page.locator('th[aria-sort="descending"]')).toHaveAttribute('data-column', 'd2c.max');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'real-answers-keks-dispatch.png') });
});

test('a set without completions does not claim D→C', async ({ page, request }) => {
  const id = await analysis(request, 'hadoop sdb partial', HADOOP.map(file));
  await page.goto(`/a/${id}?tab=dispatch`);
  const caps = page.getByTestId('capabilities');
  await caps.locator('summary').click();
  const views = caps.getByTestId('capability-views');
  await expect(views).toContainText('4845 block requests, timed: I→D 4743 (no C events)');
  await expect(views).not.toContainText('D→C)');
  await expect(caps.getByTestId('capability-missing')).toContainText('no C events: a per-CPU file of this set may be missing');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'real-answers-hadoop-capabilities.png') });
});
