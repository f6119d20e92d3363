import { expect, test } from '@playwright/test';
import path from 'node:path';
import { copyLinkAndOpenElsewhere } from './share';
import { PUBLIC, SCREENSHOTS, SEED_OFFCPU, needsPublic } from './paths';

const FOLDED = path.join(PUBLIC, 'offcputime/bcc-offcputime-K-f-folded.txt');

test('off-CPU flame graph: stacks unit, search share, zoom, shared link', async ({ page, browser }) => {
  needsPublic();
  await page.goto('/');
  await page.getByTestId('file-input').setInputFiles([SEED_OFFCPU, FOLDED]);
  await page.getByLabel('Name (optional)').fill('offcpu xfs open');
  await page.getByRole('button', { name: /^Analyse/ }).click();
  const result = page.getByTestId('upload-result');
  await expect(result).toBeVisible({ timeout: 30_000 });
  await result.getByRole('link', { name: /Open analysis/ }).click();

  // Only offcputime sources: Off-CPU is the default tab.
  const tabs = page.getByRole('tablist');
  await expect(tabs.getByRole('tab', { name: 'Off-CPU' })).toHaveAttribute('aria-selected', 'true');
  await expect(tabs.getByRole('tab', { name: 'Stalls' })).toHaveCount(0);
  await expect(tabs.getByRole('tab', { name: 'Dispatch' })).toHaveCount(0);
  const flame = page.getByRole('img', { name: 'Off-CPU flame graph' });
  await expect(flame.locator('canvas').first()).toBeVisible();
  await page.screenshot({ path: path.join(SCREENSHOTS, 'offcpu-us.png'), fullPage: true });

  await page.getByRole('group', { name: 'Unit' }).getByRole('button', { name: 'stacks' }).click();
  await expect(page).toHaveURL(/fg_unit=stacks/);
  await page.getByLabel('Search frames').fill('xfs_buf_lock');
  await page.getByLabel('Search frames').press('Enter');
  await expect(page).toHaveURL(/fg_q=xfs_buf_lock/);
  const share = page.getByTestId('search-share');
  await expect(share).toContainText('xfs_buf_lock: 1 of 48 stacks (2.08 %)');
  // The lock frame is listed; without ftrace there are no waits to list.
  await expect(page.getByTestId('lock-frames')).toContainText('xfs_buf_lock');
  await expect(page.getByTestId('lock-frames')).toContainText('no ftrace source');

  // Zoom into the first frame under the root: the crumb trail and the URL follow.
  const box = (await flame.boundingBox())!;
  await page.mouse.click(box.x + box.width / 2, box.y + 18 + 9);
  await expect(page).toHaveURL(/fg_zoom=/);
  await expect(page.getByTestId('crumbs')).toContainText('reset zoom');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'offcpu-search.png'), fullPage: true });

  const { other: p2 } = await copyLinkAndOpenElsewhere(page, browser);
  await expect(p2.getByTestId('search-share')).toContainText('xfs_buf_lock: 1 of 48 stacks (2.08 %)');
  await expect(p2.getByRole('group', { name: 'Unit' }).getByRole('button', { name: 'stacks' })).toHaveAttribute('aria-pressed', 'true');
  await expect(p2.getByLabel('Search frames')).toHaveValue('xfs_buf_lock');
  await expect(p2.getByTestId('crumbs')).toContainText('reset zoom');
  await p2.context().close();

  // Reset zoom, then the differential view of the two sources.
  await page.getByRole('button', { name: 'reset zoom' }).click();
  await expect(page).not.toHaveURL(/fg_zoom=/);
  await page.getByLabel('Clear search').click();
  await page.getByLabel('compare').click();
  await expect(page.getByLabel('compare')).toBeChecked();
  await page.getByLabel('Before').selectOption({ label: 'xfs-open-stall.offcputime.txt' });
  await page.getByLabel('After').selectOption({ label: 'bcc-offcputime-K-f-folded.txt' });
  await expect(page).toHaveURL(/fg_diff=1/);
  await expect(page.getByRole('heading', { name: 'Differential off-CPU flame graph' })).toBeVisible();
  await expect(page.getByText(/before 1 stack · after 47 stacks/)).toBeVisible();
  await page.screenshot({ path: path.join(SCREENSHOTS, 'offcpu-diff.png'), fullPage: true });
});
