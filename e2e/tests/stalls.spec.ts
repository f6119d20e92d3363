import { expect, test } from '@playwright/test';
import path from 'node:path';
import { copyLinkAndOpenElsewhere } from './share';
import { upload } from './upload';
import { REPO, SCREENSHOTS, SEED_XFS } from './paths';

const XFS_FTRACE = SEED_XFS;
const EXT4_FTRACE = path.join(REPO, 'samples/ext4-jbd2-commit.trace-cmd-report.txt');
const EXT4_BLK = path.join(REPO, 'samples/ext4-jbd2-commit.blkparse.txt');

test('the xfs unwritten-extent stall: chain, waterfall, the waker stack, calls, shared link', async ({ page, browser }) => {
  await upload(page, [XFS_FTRACE], 'xfs unwritten stall');

  // An ftrace-only analysis: Stalls is the default tab, no Dispatch or Off-CPU tab.
  const tabs = page.getByRole('tablist');
  await expect(tabs.getByRole('tab', { name: 'Stalls' })).toHaveAttribute('aria-selected', 'true');
  await expect(tabs.getByRole('tab', { name: 'Dispatch' })).toHaveCount(0);
  await expect(tabs.getByRole('tab', { name: 'Off-CPU' })).toHaveCount(0);

  const first = page.getByTestId('chain-list').locator('tbody tr').first();
  await expect(first).toContainText('file_writer 30495');
  await expect(first).toContainText('316.7 ms');
  await expect(first).toContainText('xfs_ilock via down_write');
  await first.click();
  await expect(page).toHaveURL(/[?&]chain=1/);

  const detail = page.getByTestId('chain-detail');
  await expect(detail.getByTestId('chain-path')).toContainText('file_writer 30495 held by xfsconvertd/7 251 I/O completion xfslogd/7 219');
  await expect(detail.getByRole('img', { name: 'Wait chain waterfall' }).locator('canvas').first()).toBeVisible();
  const l1 = detail.getByTestId('link-1');
  await expect(l1).toContainText('xfs_ilock via down_write');
  await expect(l1).toContainText('316.7 ms');
  await expect(l1).toContainText('inferred');
  await expect(l1).toContainText('flush-8:0 505'); // also waiting
  await expect(detail.getByTestId('link-2')).toContainText('xfs_buf_lock via down');
  await expect(detail.getByTestId('link-2')).toContainText('342.5 ms');
  await expect(detail.getByTestId('waker-stack-2')).toContainText('xfs_buf_iodone_work');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'stalls-chain.png'), fullPage: true });

  // Open the last link: the waker's stack at the wake-up, and its calls.
  await detail.getByTestId('link-3').getByRole('button', { name: /xfslogd\/7 219/ }).click();
  await expect(page).toHaveURL(/[?&]link=3/);
  await expect(detail.getByTestId('link-3')).toHaveClass(/selected/);
  const stack = detail.getByTestId('stack-3');
  await expect(stack).toContainText('xfs_buf_iodone_work');
  await expect(stack).toContainText('xfs_buf_unlock');
  await expect(page.getByTestId('calls-panel')).toContainText('Calls of xfslogd/7 219');

  // The first link's calls: a flame chart around the 316.67 ms wait.
  await detail.getByTestId('link-1').getByRole('button', { name: /file_writer 30495/ }).click();
  await expect(page).toHaveURL(/[?&]link=1/);
  await expect(page.getByTestId('calls-panel').getByRole('img', { name: 'Call flame chart' }).locator('canvas').first()).toBeVisible();
  await page.screenshot({ path: path.join(SCREENSHOTS, 'stalls-calls.png'), fullPage: true });
  await detail.getByTestId('link-3').getByRole('button', { name: /xfslogd\/7 219/ }).click();
  await expect(page).toHaveURL(/[?&]link=3/);

  // Copy link → fresh context → the same chain and link.
  const { link, other: p2 } = await copyLinkAndOpenElsewhere(page, browser);
  expect(link).toMatch(/chain=1/);
  const d2 = p2.getByTestId('chain-detail');
  await expect(d2.getByTestId('link-3')).toHaveClass(/selected/);
  await expect(d2.getByTestId('stack-3')).toContainText('xfs_buf_iodone_work');
  await expect(p2.getByTestId('chain-list').locator('tr.selected')).toContainText('file_writer 30495');
  await expect(p2.getByTestId('calls-panel')).toContainText('Calls of xfslogd/7 219');
  await p2.context().close();
});

test('waits filtered by lock from the URL', async ({ page }) => {
  await upload(page, [XFS_FTRACE], 'xfs waits by lock');
  const url = new URL(page.url());
  await page.goto(`${url.pathname}?tab=stalls&lock=xfs_buf_lock`);
  const waits = page.getByTestId('waits-table');
  await expect(waits.locator('tbody tr')).toHaveCount(1);
  await expect(waits).toContainText('xfsconvertd/7 251');
  await expect(waits).toContainText('woken by xfslogd/7 219');
  await page.getByRole('button', { name: 'Clear lock filter' }).click();
  await expect(page).not.toHaveURL(/lock=/);
  // the stalls only: file_reader's sleep (S, on no known lock) comes back with "idle sleeps too", in the URL
  const rows = page.getByTestId('waits-table').locator('tbody tr');
  await expect(rows).toHaveCount(3);
  await expect(page.getByTestId('waits-table')).not.toContainText('file_reader');
  // a click, then the state awaited: the box is checked once the URL's view state has it (check() looked at once,
  // before React had re-rendered from the new URL, and failed now and then)
  const idle = page.getByTestId('waits-panel').getByLabel('idle sleeps too');
  await idle.click();
  await expect(page).toHaveURL(/idle=1/);
  await expect(idle).toBeChecked();
  await expect(rows).toHaveCount(4);
  await expect(rows.nth(3)).toContainText('file_reader 31161');
  await expect(rows.nth(3)).toContainText('246.0 µs+');
});

test('ext4 + blkparse: the chain ends at a block request that opens in Dispatch', async ({ page }) => {
  await upload(page, [EXT4_FTRACE, EXT4_BLK], 'ext4 jbd2 commit');
  const tabs = page.getByRole('tablist');
  await expect(tabs.getByRole('tab', { name: 'Stalls' })).toHaveAttribute('aria-selected', 'true');
  await expect(tabs.getByRole('tab', { name: 'Dispatch' })).toBeVisible();
  const detail = page.getByTestId('chain-detail');
  await expect(detail.getByTestId('chain-path')).toContainText('postgres 4242 woken by jbd2/sda1-8 312');
  const req = detail.getByTestId('request-link');
  await expect(req).toContainText('8,0 WFS 1465352 + 8');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'stalls-ext4.png'), fullPage: true });
  await req.click();
  await expect(page).toHaveURL(/tab=dispatch&req=\d+%3A6/);
  await expect(page.getByTestId('request-detail')).toBeVisible();
  await expect(page.getByTestId('request-detail')).toContainText('jbd2/sda1-8');
});
