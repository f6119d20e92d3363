import { expect, test } from '@playwright/test';
import path from 'node:path';
import { copyLinkAndOpenElsewhere } from './share';
import { upload } from './upload';
import { PUBLIC, REPO, SCREENSHOTS, needsPublic } from './paths';

const OFFWAKE = path.join(PUBLIC, 'offwaketime/bcc-offwaketime_example.txt');
const EXT4 = ['trace-cmd-report', 'blkparse', 'offwaketime'].map((k) => path.join(REPO, `samples/ext4-jbd2-commit.${k}.txt`));

test('offwaketime alone: wake-up pairs in Stalls, a pair selected by lock, shared link', async ({ page, browser }) => {
  needsPublic();
  await upload(page, [OFFWAKE], 'offwaketime example');

  // No ftrace, but waker stacks: the Stalls tab is there (the default) and shows the pairs, no chains.
  const tabs = page.getByRole('tablist');
  await expect(tabs.getByRole('tab', { name: 'Stalls' })).toHaveAttribute('aria-selected', 'true');
  await expect(page.getByTestId('chain-list')).toHaveCount(0);
  const pairs = page.getByTestId('wakeup-pairs');
  await expect(pairs.getByRole('heading', { name: 'Wake-up pairs (offwaketime)' })).toBeVisible();
  await expect(pairs.getByTestId('pairs-summary')).toContainText('49 pairs · 53 records · 107.1 s (107,072,970 µs) blocked until woken');

  // The top pair: supervise in poll(), woken by the timer interrupt on CPU 0 (lines 138 and 299).
  const first = pairs.getByTestId('pair-list').locator('tbody tr').first();
  await expect(first).toContainText('supervise');
  await expect(first).toContainText('swapper/0');
  await expect(first).toContainText('36,747,539');
  const card = pairs.getByTestId('pair-card');
  await expect(card.getByTestId('pair-value')).toHaveText('36.75 s (36,747,539 µs)');
  await expect(card.getByTestId('pair-waker-stack')).toContainText('hrtimer_wakeup');
  await expect(card.getByTestId('pair-target-stack')).toContainText('do_sys_poll');
  await expect(card).toContainText('bcc-offwaketime_example.txt lines 138, 299');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'wakers-pairs.png'), fullPage: true });

  // Pairs blocked on a page lock; pick the second (cksum's read() woken by `run`, line 284).
  await pairs.getByLabel('Filter wake-up pairs by lock').fill('page lock');
  await pairs.getByLabel('Filter wake-up pairs by lock').press('Enter');
  await expect(page).toHaveURL(/wp_lock=page\+lock/);
  await expect(pairs.getByTestId('pairs-summary')).toContainText('11 pairs on “page lock” · 12 records');
  const rows = pairs.getByTestId('pair-list').locator('tbody tr');
  await expect(rows.first()).toContainText('8,054,934');
  await rows.nth(1).click();
  await expect(page).toHaveURL(/wp=\d+%3A284/); // source ids depend on what the database already holds
  await expect(card).toHaveAttribute('aria-label', 'Wake-up pair 2: cksum woken by run');
  await expect(card.getByTestId('pair-value')).toHaveText('109.5 ms (109,480 µs)');
  await expect(card).toContainText('__lock_page_killable via I/O');
  await expect(card.getByTestId('pair-waker-stack')).toContainText('mpage_end_io');

  const { link, other: p2 } = await copyLinkAndOpenElsewhere(page, browser);
  expect(link).toMatch(/wp=\d+%3A284&wp_lock=page\+lock/);
  await expect(p2.getByRole('tablist').getByRole('tab', { name: 'Stalls' })).toHaveAttribute('aria-selected', 'true');
  const card2 = p2.getByTestId('pair-card');
  await expect(card2).toHaveAttribute('aria-label', 'Wake-up pair 2: cksum woken by run');
  await expect(card2.getByTestId('pair-value')).toHaveText('109.5 ms (109,480 µs)');
  await expect(card2.getByTestId('pair-waker-stack')).toContainText('mpage_end_io');
  await expect(p2.getByLabel('Filter wake-up pairs by lock')).toHaveValue('page lock');
  await p2.context().close();

  // The lock is matched exactly, by any of its names in the lock table (as the waits' lock_key): a function of the
  // page lock gives the same pairs; a part of a name is no lock.
  await pairs.getByLabel('Filter wake-up pairs by lock').fill('lock_page');
  await pairs.getByLabel('Filter wake-up pairs by lock').press('Enter');
  await expect(page).toHaveURL(/wp_lock=lock_page/);
  await expect(pairs.getByTestId('pairs-summary')).toContainText('11 pairs on “lock_page” · 12 records');
  await pairs.getByLabel('Filter wake-up pairs by lock').fill('page');
  await pairs.getByLabel('Filter wake-up pairs by lock').press('Enter');
  await expect(pairs).toContainText('No offwaketime record with a waker stack on “page”.');
});

test('ftrace + offwaketime: each link of the chain shows its waker side', async ({ page }) => {
  await upload(page, EXT4, 'ext4 jbd2 with offwaketime');
  const detail = page.getByTestId('chain-detail');
  await expect(detail.getByTestId('chain-path')).toContainText('postgres 4242 woken by jbd2/sda1-8 312');

  // postgres waits in wait_transaction_locked: offwaketime saw jbd2 wake it, 13265 µs after it blocked.
  const pg = detail.getByTestId('offwake-1');
  await expect(pg).toContainText('postgres 4242 matched by pid');
  await expect(pg).toContainText('blocked until woken on jbd2 handle'); // the link's lock, asked exactly (lock_key)
  await expect(pg.getByTestId('offwake-1-1')).toContainText('woken by jbd2/sda1-8 312');
  await expect(pg.getByTestId('offwake-1-1')).toContainText('13.27 ms (13,265 µs) · 100.0 % of the total · 1 record');
  await expect(pg.getByTestId('offwake-1-1')).toContainText('kjournald2');
  // jbd2 waits for its commit record: woken by the disk interrupt on CPU 3.
  const jbd2 = detail.getByTestId('offwake-2');
  await expect(jbd2.getByTestId('offwake-2-1')).toContainText('woken by <idle> 0 (swapper/3)'); // the idle task named as ftrace names it
  await expect(jbd2.getByTestId('offwake-2-1')).toContainText('__wait_on_buffer via I/O');
  await expect(jbd2.getByTestId('offwake-2-1')).toContainText('ata_qc_complete_multiple');
  // The interrupt that ends the chain was not waiting: no waker side.
  await expect(detail.getByTestId('offwake-3')).toHaveCount(0);

  // Below the chains, the three wake-up pairs.
  await expect(page.getByTestId('wakeup-pairs').getByTestId('pair-list').locator('tbody tr')).toHaveCount(3);
  await page.screenshot({ path: path.join(SCREENSHOTS, 'wakers-chain.png'), fullPage: true });
});
