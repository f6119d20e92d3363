import { expect, test } from '@playwright/test';
import path from 'node:path';
import { copyLinkAndOpenElsewhere } from './share';
import { upload } from './upload';
import { PUBLIC, REPO, SCREENSHOTS, needsPublic } from './paths';
import { INCIDENT, analysis, file, sourceOf } from './walks';

const EXT4_FTRACE = path.join(REPO, 'samples/ext4-jbd2-commit.trace-cmd-report.txt');
const EXT4_BLK = path.join(REPO, 'samples/ext4-jbd2-commit.blkparse.txt');

test('timeline: lanes of both sources, W/A/S/D, drag to select a range, shared link', async ({ page, browser }) => {
  await upload(page, [EXT4_FTRACE, EXT4_BLK], 'ext4 timeline');
  await page.getByRole('tablist').getByRole('tab', { name: 'Timeline' }).click();
  await expect(page).toHaveURL(/tab=timeline/);
  const view = page.getByTestId('timeline-view');
  // the CPUs of the ftrace capture on top, then the chain's tasks, then the block device of the blktrace
  const labels = view.locator('.timeline-label');
  await expect(labels.first()).toHaveText('CPU 1');
  await expect(view.locator('[data-lane^="task:"]').first()).toHaveText('postgres (4242)');
  await expect(view.locator('[data-lane^="dev:"]')).toContainText('8,0 (device)');
  await expect(view).toContainText('11 of 11 lanes'); // with the ftrace capture's 3 CPUs
  await expect(view.getByTestId('timeline-window')).toContainText('+0.000000 s → +0.015920 s (15.92 ms)');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'timeline-ext4.png'), fullPage: true });

  // W zooms in around the centre (the window is in the URL), A pans left, S zooms back out
  await page.keyboard.press('w');
  await expect(page).toHaveURL(/v0=\d+&v1=\d+/);
  await expect(view.getByTestId('timeline-window')).toContainText('(9.55 ms)');
  await page.keyboard.press('a');
  await page.keyboard.press('s');
  await page.keyboard.press('s');
  await expect(view.getByTestId('timeline-window')).toContainText('(15.92 ms)');
  await expect(page).not.toHaveURL(/v0=/);

  // drag across the plot: the analysis-wide time range, shown on every tab
  const plot = view.locator('.timeline-plot');
  const box = (await plot.boundingBox())!;
  await page.mouse.move(box.x + box.width * 0.25, box.y + 40);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.5, box.y + 40, { steps: 5 });
  await page.mouse.up();
  await expect(page).toHaveURL(/t0=\d+&t1=\d+/);
  await expect(page.getByTestId('time-range')).toContainText('time range +0.00'); // from the analysis' start, 7341.200000 s
  // a quarter of the plot's width: about 4 ms of the 15.92 ms; zoomed to it, the window is the range
  const range = /([+−]?\d+\.\d+ s) → ([+−]?\d+\.\d+ s) \((\d\.\d+) ms\)/.exec((await page.getByTestId('time-range').textContent())!)!;
  expect(Number(range[3])).toBeGreaterThan(3.5);
  expect(Number(range[3])).toBeLessThan(4.5);
  await view.getByTestId('zoom-to-selection').click();
  await expect(view.getByTestId('timeline-window')).toContainText(`${range[1]} → ${range[2]} (${range[3]} ms)`);

  const { other } = await copyLinkAndOpenElsewhere(page, browser);
  await expect(other.getByTestId('timeline-view').getByTestId('timeline-window')).toContainText(`(${range[3]} ms)`);
  await expect(other.getByTestId('time-range')).toBeVisible();
  await other.context().close();

  // the range follows to the Dispatch tab
  await page.getByRole('tablist').getByRole('tab', { name: 'Dispatch' }).click();
  await expect(page.getByTestId('time-range')).toBeVisible();
});

test('clock offset: shown per source, edited by hand, and the chain follows', async ({ page }) => {
  await upload(page, [EXT4_FTRACE, EXT4_BLK], 'ext4 clocks');
  await page.getByRole('tablist').getByRole('tab', { name: 'Sources' }).click();
  const cards = page.locator('.align-card');
  await expect(cards.nth(0)).toContainText('same clock (spans overlap)');
  await expect(cards.nth(1)).toContainText('reference clock');
  await expect(cards.nth(1)).toContainText('blktrace (CLOCK_MONOTONIC');
  // one second later: no block request completes at the wake-up any more
  const input = cards.nth(0).getByRole('textbox');
  await input.fill('1.000000000');
  await cards.nth(0).getByRole('button', { name: 'Apply' }).click();
  await expect(cards.nth(0)).toContainText('offset 1.000000000 s');
  await expect(cards.nth(0)).toContainText('set by hand');
  await page.getByRole('tablist').getByRole('tab', { name: 'Stalls' }).click();
  await expect(page.getByTestId('chain-detail').getByTestId('request-link')).toHaveCount(0);
  // back to 0: the chain ends at its request again
  await page.getByRole('tablist').getByRole('tab', { name: 'Sources' }).click();
  await cards.nth(0).getByRole('textbox').fill('0');
  await cards.nth(0).getByRole('button', { name: 'Apply' }).click();
  await expect(cards.nth(0)).toContainText('offset 0.000000000 s');
  await page.getByRole('tablist').getByRole('tab', { name: 'Stalls' }).click();
  await expect(page.getByTestId('chain-detail').getByTestId('request-link')).toContainText('8,0 WFS 1465352 + 8');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'stalls-after-offset.png'), fullPage: true });
});

test("the drawer names a chain's tasks and device even when their lanes are filtered out of the tree", async ({ page, request }) => {
  // the incident's chain #1 ends at xfsconvertd/0 (421), woken by the completion of a request on 8,0: with the tree
  // searched for another task, the drawer read "task:2:421 ← io completion ← dev:1:8,0"
  const id = await analysis(request, 'timeline names', INCIDENT.map(file));
  await page.goto(`/a/${id}?tab=timeline&chain=1`);
  const drawer = page.getByTestId('timeline-selected');
  await expect(drawer.locator('.chain-arrows li')).toHaveCount(4);
  await page.getByLabel('Find tracks').fill('file_writer');
  await expect(page.getByTestId('track-tree').locator('.timeline-label')).toHaveCount(1);
  const arrows = drawer.locator('.chain-arrows');
  await expect(arrows).toContainText('xfsconvertd/0 (421) ← io completion ← 8,0 (device)');
  await expect(arrows).toContainText('file_writer (3271) ← woken by ← file_reader (3274)');
  await expect(arrows).not.toContainText(/task:|dev:/);
});

test('a call seen only by its exit says it entered before the capture began', async ({ page, request }) => {
  needsPublic();
  // perf-tools' funcgraph -H -t -p: the trace opens inside schedule_timeout(), whose exit (line 159) prints
  // 19354027 us: the span started 19.35 s before the first line, and the call was a bar from there with no reason
  const id = await analysis(request, 'exit-only calls', [file(path.join(PUBLIC, 'ftrace-funcgraph/perf-tools-funcgraph-Htp-abstime-header.txt'))]);
  await page.setViewportSize({ width: 1600, height: 1000 });
  const source = await sourceOf(request, id, 'ftrace');
  await page.goto(`/a/${id}?tab=timeline&tl_sel=${source}:159`);
  await expect(page.getByTestId('analysis-span')).toContainText('(631.6 ms)'); // the first line to the last
  const drawer = page.getByTestId('timeline-selected');
  await expect(drawer).toContainText('schedule_timeout()');
  await expect(drawer.getByTestId('drawer-early')).toContainText('Entered before the capture began: the trace shows its exit only, at line 159');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'timeline-exit-only-call.png') });
});

test("panning past a source's end keeps its lanes, empty: the canvas does not shrink under the pointer", async ({ page, request }) => {
  // the incident's ftrace capture spans 8.94–13.24 s of the analysis' 0–24 s: past 13.24 s its lanes (CPUs, tasks)
  // were dropped and the canvas lost ~1,000 px under the pointer
  const id = await analysis(request, 'timeline names', INCIDENT.map(file));
  await page.setViewportSize({ width: 1600, height: 1000 });
  await page.goto(`/a/${id}?tab=timeline&v0=12000000000&v1=13000000000`);
  const tree = page.getByTestId('track-tree');
  const ftraceLanes = tree.locator(`[data-lane^="task:"], [data-lane^="cpu:"]`);
  await expect(ftraceLanes.first()).toBeVisible();
  const before = await ftraceLanes.count();
  // D pans a fifth of the window to the right: until the window starts past 13.24 s
  const v0 = () => Number(new URL(page.url()).searchParams.get('v0'));
  const pan = (key: string) => expect.poll(async () => (await page.keyboard.press(key), v0()), { timeout: 20_000 });
  await pan('d').toBeGreaterThan(13_300_000_000);
  await expect(page.getByTestId('lanes-outside')).toContainText('with no events in this window kept, empty (the window reaches past its source)');
  await expect(ftraceLanes).toHaveCount(before);
  await expect(tree.locator('.timeline-label.outside').first()).toBeVisible();
  const canvas = page.getByTestId('timeline-view').locator('canvas').first();
  expect((await canvas.boundingBox())!.height).toBeGreaterThan(800); // the lanes' rows, not the ruler alone
  // back inside the source, they are filled again
  await pan('a').toBeLessThan(12_500_000_000);
  await expect(page.getByTestId('lanes-outside')).toHaveCount(0);
  await expect(ftraceLanes.first()).toBeVisible();
});

test('one time base: from the capture start by default, the trace clock on hover and on one toggle', async ({ page, request }) => {
  needsPublic();
  // langraph's trace.dat: the ruler read "+3.10 s" while the tables and the pointer read "11374.046209 s"
  const id = await analysis(request, 'time base', [file(path.join(PUBLIC, 'trace-cmd-report/trace-dat/langraph-trace.dat'))]);
  await page.setViewportSize({ width: 1600, height: 1000 });
  await page.goto(`/a/${id}?tab=stalls&idle=1`);
  const span = page.getByTestId('analysis-span');
  await expect(span).toContainText(/^Time span \+0\.000000 s → \+\d+\.\d{6} s/);
  const start = page.getByTestId('waits-table').locator('tbody tr').first().locator('.time');
  await expect(start).toHaveText(/^\+\d+\.\d{6} s$/);
  await expect(start).toHaveAttribute('title', /^\d{5}\.\d{6} s on the trace's clock$/); // absolute on hover

  await page.getByRole('tablist').getByRole('tab', { name: 'Timeline' }).click();
  const view = page.getByTestId('timeline-view');
  await expect(view.getByTestId('timeline-window')).toContainText(/\+0\.000000 s → \+/);
  await expect(view.getByTestId('timeline-ticks').locator('.tick').nth(1)).toHaveText(/^\+/);
  const plot = view.locator('canvas').first();
  const box = (await plot.boundingBox())!;
  await page.mouse.move(box.x + box.width / 2, box.y + 40);
  await expect(view.getByTestId('cursor-readout')).toHaveText(/^\+\d+\.\d{6,9} s$/); // the pointer as the ruler

  // one toggle, kept in the URL: the trace's own clock everywhere
  await page.getByTestId('time-base').getByRole('button', { name: 'trace clock' }).click();
  await expect(page).toHaveURL(/[?&]time=abs/);
  await expect(span).toContainText(/^Time span \d{5}\.\d{6} s → \d{5}\.\d{6} s/);
  await expect(view.getByTestId('timeline-window')).toContainText(/\d{5}\.\d{6} s → \d{5}\.\d{6} s/);
  await expect(view.getByTestId('timeline-ticks').locator('.tick').nth(1)).toHaveText(/^\d{5}/);
  await page.mouse.move(box.x + box.width / 2 + 10, box.y + 40);
  await expect(view.getByTestId('cursor-readout')).toHaveText(/^\d{5}\.\d{6,9} s$/);
  await page.screenshot({ path: path.join(SCREENSHOTS, 'timeline-trace-clock.png') });
});
