// The lab's ext4-jbd2 recording (samples/real/ext4-jbd2, a real 6.1 kernel: lab/README.md), uploaded as a user
// would: the trace.dat, the blktrace set of both layers and offcputime. dd's fsync waits for the journal; the chain
// ends at the journal write that sat 200+ ms in the device-mapper delay target, not at the fast disk request below
// it, and the request view says where the I/O's time went (values: TRUTH.json, tests/test_lab_truth.py).
import { expect, test } from '@playwright/test';
import fs from 'node:fs';
import path from 'node:path';
import { REPO, SCREENSHOTS } from './paths';
import { upload } from './upload';

const REC = path.join(REPO, 'samples/real/ext4-jbd2');
const FILES = ['trace.dat', 'blktrace/dm-0.blktrace.0', 'blktrace/vdb.blktrace.0', 'offcputime.txt'].map((f) => path.join(REC, f));
const TRUTH = JSON.parse(fs.readFileSync(path.join(REC, 'TRUTH.json'), 'utf8'));

test('a real capture: the fsync chain ends in device-mapper, and the request shows each layer', async ({ page }) => {
  await upload(page, FILES, 'lab ext4-jbd2');
  const tabs = page.getByRole('tablist');
  await expect(tabs.getByRole('tab', { name: 'Stalls' })).toHaveAttribute('aria-selected', 'true');

  // The longest chain: a small dd's fsync in jbd2_log_wait_commit, woken by the journal thread.
  const first = page.getByTestId('chain-list').locator('tbody tr').first();
  await expect(first).toContainText('dd ');
  await expect(first).toContainText(TRUTH.stalled.wait);
  await first.click();
  const detail = page.getByTestId('chain-detail');
  await expect(detail.getByTestId('chain-path')).toContainText(/^dd \d+ woken by jbd2\/dm-0-8 199 I\/O completion/);
  await expect(detail.getByTestId('chain-path')).toContainText('block request 253,0 ');
  const jbd2 = detail.getByTestId('link-2');
  await expect(jbd2).toContainText('jbd2/dm-0-8 199');
  await expect(jbd2).toContainText('the I/O went through 2 block layers: 253,0 (dm-0) held it');
  const req = jbd2.getByTestId('request-link');
  await expect(req).toContainText('253,0 ');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'lab-ext4-chain.png'), fullPage: true });
  await req.click();

  // Dispatch: the dm-0 bio, and where its time went, layer by layer.
  await expect(tabs.getByRole('tab', { name: 'Dispatch' })).toHaveAttribute('aria-selected', 'true');
  const rd = page.getByTestId('request-detail');
  await expect(rd).toContainText('Device 253,0');
  await expect(rd.getByRole('heading', { name: 'Where the time went: 2 block layers' })).toBeVisible();
  const layers = rd.getByTestId('request-layers').locator('tbody tr');
  await expect(layers).toHaveCount(2);
  await expect(layers.nth(0)).toContainText('253,0 (dm-0)');
  await expect(layers.nth(0)).toContainText('bio-based (remapped down)');
  await expect(layers.nth(0)).toContainText('this request');
  await expect(layers.nth(1)).toContainText('254,16 (vdb)');
  await expect(layers.nth(1)).toContainText('the device that served it');
  const held = Number((await layers.nth(0).locator('td').nth(1).innerText()).replace(/ ms$/, ''));
  expect(held).toBeGreaterThanOrEqual(TRUTH.cause.write_delay_ms);
  await page.screenshot({ path: path.join(SCREENSHOTS, 'lab-ext4-layers.png'), fullPage: true });

  // The disk's own request is one click away, and names the dm bio above it.
  await layers.nth(1).getByRole('button', { name: 'Open' }).click();
  await expect(rd).toContainText('Device 254,16');
  await expect(rd).toContainText('Remapped from 253,0');
  await expect(rd.getByTestId('request-layers').locator('tbody tr').nth(1)).toContainText('this request');
});
