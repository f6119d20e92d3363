import { expect, test, type Page } from '@playwright/test';
import fs from 'node:fs';
import path from 'node:path';
import { copyLinkAndOpenElsewhere } from './share';
import { PUBLIC, REPO, SCREENSHOTS, SEED_CFQ, needsPublic } from './paths';
import { upload } from './upload';

async function uploadSeed(page: Page, name: string) {
  await page.goto('/');
  await page.getByTestId('file-input').setInputFiles(SEED_CFQ);
  await page.getByLabel('Name (optional)').fill(name);
  await page.getByRole('button', { name: /^Analyse/ }).click();
  const result = page.getByTestId('upload-result');
  await expect(result).toBeVisible();
  return result;
}

test('upload a blkparse trace, find the 15.6 s dispatch stall, share its link', async ({ page, browser }) => {
  const result = await uploadSeed(page, 'cfq dispatch starvation');
  await expect(result.getByTestId('source-format')).toHaveText('blkparse');
  await expect(result).toContainText('cfq-dispatch-starvation.blkparse.txt');
  await expect(result.locator('tbody tr').first()).toContainText('12'); // events
  await page.screenshot({ path: path.join(SCREENSHOTS, 'home-after-upload.png'), fullPage: true });

  // The new analysis is listed, and opens.
  await expect(page.getByTestId('analyses')).toContainText('cfq dispatch starvation');
  await result.getByRole('link', { name: /Open analysis/ }).click();
  await expect(page).toHaveURL(/\/a\/[^/?]+$/);
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('cfq dispatch starvation');

  // The summary per process shows xfsaild's I2D max.
  const summary = page.getByTestId('summary-table');
  await expect(summary.locator('tbody tr', { hasText: 'xfsaild/sda1' })).toContainText('15.63 s');

  // The slowest request by I2D is xfsaild's metadata write.
  const row = page.getByTestId('requests-table').locator('tbody tr', { hasText: 'xfsaild/sda1' }).first();
  await expect(row).toContainText('15.63 s');
  await expect(row).toContainText('141698288 + 8 (4 KiB)');
  await expect(row).toContainText('WM');
  await expect(row).toContainText('+0.000000 s'); // 81.092473 s, the trace's first event
  await row.click();

  const detail = page.getByTestId('request-detail');
  await expect(detail).toBeVisible();
  await expect(page).toHaveURL(/[?&]req=\d+%3A\d+/);
  await expect(detail.getByRole('img', { name: 'Request phases waterfall' }).locator('canvas').first()).toBeVisible();
  await expect(detail.locator('.phase-chip.i2d')).toContainText('15.63 s');
  await expect(detail.getByTestId('request-events')).toContainText('+15.626289 s'); // 96.718761 s on the trace's clock
  const messages = detail.getByTestId('request-messages');
  await expect(messages).toContainText('cfq767A / slice expired t=1');
  await expect(messages.locator('tr', { hasText: 'cfq767A / slice expired t=1' })).toContainText('+25.42 ms');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'analysis-detail.png'), fullPage: true });

  // Copy link, open it in a fresh context: the same request detail.
  const { other: p2 } = await copyLinkAndOpenElsewhere(page, browser);
  const d2 = p2.getByTestId('request-detail');
  await expect(d2).toBeVisible();
  await expect(d2.locator('.phase-chip.i2d')).toContainText('15.63 s');
  await expect(d2.getByTestId('request-messages')).toContainText('cfq767A / slice expired t=1');
  await expect(p2.getByTestId('requests-table').locator('tr.selected')).toContainText('xfsaild/sda1');
  await p2.context().close();
});

test('without a clipboard the link is shown in a field', async ({ page }) => {
  await uploadSeed(page, 'no clipboard');
  await page.getByTestId('upload-result').getByRole('link', { name: /Open analysis/ }).click();
  await page.getByTestId('requests-table').locator('tbody tr').first().click();
  await expect(page.getByTestId('request-detail')).toBeVisible();
  await page.evaluate(() => Object.defineProperty(navigator, 'clipboard', { value: undefined, configurable: true }));
  await page.getByTestId('copy-link').click();
  await expect(page.getByTestId('share-link')).toHaveValue(page.url());
});

test('grouping, sorting and filtering live in the URL', async ({ page }) => {
  await uploadSeed(page, 'url state');
  await page.getByTestId('upload-result').getByRole('link', { name: /Open analysis/ }).click();
  await page.getByRole('button', { name: 'per device' }).click();
  await expect(page).toHaveURL(/by=device/);
  const devRow = page.getByTestId('summary-table').locator('tbody tr').first();
  await expect(devRow).toContainText('8,0');
  await devRow.click();
  await expect(page).toHaveURL(/dev=8%2C0/);
  await expect(page.getByTestId('filters')).toContainText('device 8,0');
  await page.getByTestId('summary-table').getByRole('columnheader', { name: /^p99/ }).first().click();
  await expect(page).toHaveURL(/sort=-i2d\.p99/);
  // the seed has no C events: D2C and Q2C cannot order the requests (issue 33), time can
  const orders = page.getByRole('group', { name: 'Order requests by' });
  await expect(orders.getByRole('button', { name: 'D2C' })).toBeDisabled();
  await orders.getByRole('button', { name: 'time' }).click();
  await expect(page).toHaveURL(/order=time/);
  await page.reload();
  await expect(page.getByRole('button', { name: 'per device' })).toHaveAttribute('aria-pressed', 'true');
  await expect(page.getByTestId('summary-table').locator('tr.selected')).toContainText('8,0');
});

test('a file in an unknown format gets a clear per-file error', async ({ page }) => {
  await page.goto('/');
  await page.getByTestId('file-input').setInputFiles({
    name: 'notes.txt',
    mimeType: 'text/plain',
    buffer: Buffer.from('hello world\nthis is not a trace\n'),
  });
  await page.getByRole('button', { name: /^Analyse/ }).click();
  const err = page.getByTestId('upload-error');
  await expect(err).toBeVisible();
  await expect(err).toContainText('notes.txt');
  await expect(err).toContainText('line 1');
  await expect(err).toContainText(/unknown format/i);
});

test('an unknown analysis id says so', async ({ page }) => {
  await page.goto('/a/does-not-exist');
  await expect(page.getByRole('alert')).toContainText('No such analysis.');
});

/** btt -A's Per Device figures of one metric for a device (MIN, AVG, MAX, N as printed), read from its report. */
function bttReport(file: string, metric: string, dev: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  const lines = text.slice(text.indexOf('==================== Per Device')).split('\n');
  const head = lines.findIndex((l) => l.trim().startsWith(`${metric} `) && l.includes('MIN'));
  const [maj, min] = dev.split(',');
  const row = lines.slice(head + 2).find((l) => l.replace(/\s+/g, '').startsWith(`(${maj},${min})`));
  if (!row) throw new Error(`no ${metric} row for ${dev} in ${file}`);
  return row.slice(row.indexOf(')') + 1).trim().split(/\s+/);
}

test("btt's way shows btt's own figures for a real sample", async ({ page }) => {
  needsPublic();
  const sample = 'derived-liuzel01-sda-lvm.blkparse.txt';
  await upload(page, [path.join(PUBLIC, 'blkparse-text', sample)], 'btt way');
  await page.getByRole('button', { name: 'per device' }).click();
  const table = page.getByTestId('summary-table');
  const row = table.locator('tbody tr', { hasText: '8,0' }).first();
  await expect(table.getByRole('columnheader', { name: 'avg' }).first()).toBeVisible(); // per request: min, avg too
  await page.getByRole('button', { name: "btt's way" }).click();
  await expect(page).toHaveURL(/btt=1/);
  await expect(page.getByTestId('btt-note')).toContainText('per queued bio');
  const cells = await row.locator('td').allInnerTexts(); // device, requests, then N MIN AVG MAX per I2D D2C Q2C
  ['I2D', 'D2C', 'Q2C'].forEach((metric, k) => {
    const [bMin, bAvg, bMax, bN] = bttReport(path.join(REPO, 'tests/golden/btt', `${sample}.btt.avg`), metric, '8,0');
    expect(cells.slice(2 + 4 * k, 6 + 4 * k)).toEqual([bN, bMin, bAvg, bMax]);
  });
  await page.reload();
  await expect(page.getByRole('button', { name: "btt's way" })).toHaveAttribute('aria-pressed', 'true');
});

test('the dispatch summary fits its panel at 1,440 px; narrower, it scrolls with its first column pinned', async ({ page }) => {
  // liuzel01's sda set (LVM, 5 processes): its 20 columns were 1,608 px in a 1,370 px panel at 1,440 px, Q2C cut
  needsPublic();
  const SET = path.join(PUBLIC, 'blktrace-binary/liuzel01-sda');
  await page.setViewportSize({ width: 1440, height: 1000 });
  await upload(page, ['sda.blktrace.0', 'sda.blktrace.1'].map((f) => path.join(SET, f)), 'summary fit');
  await page.getByRole('tablist').getByRole('tab', { name: 'Dispatch' }).click();
  const scroll = page.getByTestId('summary-scroll');
  await expect(scroll.locator('tbody tr')).toHaveCount(5);
  const fit = await scroll.evaluate((e) => ({ scroll: e.scrollWidth, client: e.clientWidth }));
  expect(fit.scroll).toBeLessThanOrEqual(fit.client);
  await scroll.screenshot({ path: path.join(SCREENSHOTS, 'summary-1440.png') });

  await page.setViewportSize({ width: 1000, height: 1000 });
  await expect.poll(() => scroll.evaluate((e) => e.scrollWidth > e.clientWidth)).toBe(true);
  await scroll.evaluate((e) => (e.scrollLeft = e.scrollWidth));
  const first = scroll.locator('tbody tr').first().locator('td').first();
  const [box, cell] = await Promise.all([scroll.boundingBox(), first.boundingBox()]);
  expect(Math.abs(cell!.x - box!.x)).toBeLessThan(2); // still at the left edge, over the scrolled columns
  await expect(first).toContainText('xfsaild');
  const lastHead = scroll.locator('thead tr').last().locator('th').last();
  const head = await lastHead.boundingBox();
  expect(head!.x + head!.width).toBeLessThanOrEqual(box!.x + box!.width + 1); // Q2C max in view
});
