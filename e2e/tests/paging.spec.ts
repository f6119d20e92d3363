import { expect, test } from '@playwright/test';
import path from 'node:path';
import { PUBLIC, needsPublic } from './paths';
import { upload } from './upload';

needsPublic();

// a real capture of 1168 block requests (SOURCES.md): more than a table's first page of 100
const BLK = path.join(PUBLIC, 'blkparse-text/derived-isotopp-keks-8cpu-sdd4-zfs.blkparse.txt');

test('a long table brings its next pages by cursor: show more, then show all, each request once', async ({ page }) => {
  await upload(page, [BLK], 'paging');
  await page.getByRole('tablist').getByRole('tab', { name: 'Dispatch' }).click();
  const rows = page.getByTestId('requests-table').locator('tbody tr');
  await expect(rows).toHaveCount(100);
  const more = page.getByTestId('more-rows');
  await expect(more).toContainText('the first 100 requests');

  const pages: string[] = [];
  page.on('request', (r) => r.url().includes('/requests/page') && pages.push(r.url()));
  await more.getByTestId('show-more').click();
  await expect(rows).toHaveCount(600);
  expect(new URL(pages[0]).searchParams.get('cursor')).toBeTruthy(); // the next page, by the first one's cursor
  await more.getByTestId('show-all-pages').click();
  await expect(rows).toHaveCount(1168);
  await expect(more).toHaveCount(0); // every request is there
  const keys = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-req')));
  expect(new Set(keys).size).toBe(1168);
  // (keks has only D and C events: the slowest by D2C, issue 33)
  await expect(page.getByRole('heading', { name: 'Slowest requests by D2C' })).toBeVisible();

  // another order starts over from its own first page
  await page.getByRole('group', { name: 'Order requests by' }).getByRole('button', { name: 'time' }).click();
  await expect(rows).toHaveCount(100);
  await more.getByTestId('show-all-pages').click();
  await expect(rows).toHaveCount(1168);
  const times = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-req')));
  expect(new Set(times).size).toBe(1168);
});
