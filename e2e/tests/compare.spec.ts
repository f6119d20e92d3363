import { expect, test, type Page } from '@playwright/test';
import path from 'node:path';
import { copyLinkAndOpenElsewhere } from './share';
import { upload } from './upload';
import { PUBLIC, SCREENSHOTS, SEED_XFS, needsPublic } from './paths';

// two public blkparse captures (figures: tests/golden/compare/loop-vs-lvm.json) and the XFS seed's waits
const LOOP = path.join(PUBLIC, 'blkparse-text/derived-romeus-loop0-dump-x0y1.blkparse.txt');
const LVM = path.join(PUBLIC, 'blkparse-text/derived-liuzel01-sda-lvm.blkparse.txt');
const XFS = SEED_XFS;

/** The before | after | change cells of a figure in a row. */
function triple(row: ReturnType<Page['getByTestId']>, id: string) {
  return [row.getByTestId(`${id}-a`), row.getByTestId(`${id}-b`), row.getByTestId(`${id}-delta`)] as const;
}

async function expectLoopVsLvm(page: Page) {
  await expect(page.getByTestId('compare-side-a').getByTestId('compare-side-name')).toHaveText('cmp loop0 before');
  await expect(page.getByTestId('compare-side-b').getByTestId('compare-side-name')).toHaveText('cmp sda after');
  await expect(page.getByTestId('compare-side-a').getByTestId('compare-side-requests')).toContainText('1,024');
  await expect(page.getByTestId('compare-side-b').getByTestId('compare-side-requests')).toContainText('109');
  // per device: different devices, each on its own side
  const devices = page.getByTestId('compare-dispatch-device');
  const loopDev = devices.locator('tr[data-key="7,0"]');
  const [a, b, change] = triple(loopDev, 'count');
  await expect(a).toHaveText('1,024');
  await expect(b).toHaveText('—');
  await expect(change).toHaveText('');
  await expect(triple(loopDev, 'q2c')[0]).toHaveText('176.9 µs'); // the loop device's Q2C p99
  await expect(triple(devices.locator('tr[data-key="8,0"]'), 'count')[1]).toHaveText('109');
  // percentiles side by side, with the change coloured: the LVM disk's I2D is worse at every percentile
  const pct = page.getByTestId('compare-percentiles-i2d');
  await expect(pct.getByTestId('pct-requests')).toContainText('1,024');
  await expect(pct.getByTestId('pct-requests')).toContainText('−915 (−89 %)');
  await expect(pct.getByTestId('pct-p99').locator('td').nth(1)).toHaveText('540 ns');
  await expect(pct.getByTestId('pct-p99').locator('td').nth(2)).toHaveText('2.08 ms');
  await expect(pct.getByTestId('pct-p99').locator('td.delta')).toHaveClass(/worse/);
  // both heatmaps drawn on the page's one scale; no waits on either side: no lock table, no wait heatmap
  for (const side of ['a', 'b']) {
    await expect(page.getByTestId(`compare-heatmap-i2d-${side}`).locator('[data-ready="1"]')).toBeVisible();
  }
  await expect(page.getByTestId('compare-locks')).toHaveCount(0);
  await expect(page.getByTestId('compare-heatmaps-wait')).toHaveCount(0);
}

test('compare two captures from the analysis list; the shared link opens the same view', async ({ page, browser }) => {
  needsPublic();
  await upload(page, [LOOP], 'cmp loop0 before');
  await upload(page, [LVM], 'cmp sda after');
  await upload(page, [LOOP], 'cmp a capture named at length, as people name what they keep: db01 fsync stalls under the nightly backup, before the scheduler change, 2026-11-27');
  await page.goto('/');
  const row = page.getByTestId('analysis-row').filter({ hasText: 'cmp loop0 before' });
  // the list fits its panel whatever the names' length: every row's last action inside it
  await expect(row).toBeVisible();
  const panel = await page.getByTestId('analyses').locator('xpath=ancestor::section[1]').boundingBox();
  for (const del of await page.getByTestId('analysis-row').getByRole('button', { name: /^Delete/ }).all()) {
    const box = await del.boundingBox();
    expect(box!.x + box!.width).toBeLessThanOrEqual(panel!.x + panel!.width);
  }
  await row.getByRole('button', { name: 'Compare cmp loop0 before with…' }).click();
  await row.getByTestId('compare-with').selectOption({ label: 'cmp sda after (after)' });
  await expect(page).toHaveURL(/\/compare\?a=[\w-]+&b=[\w-]+$/);
  await expectLoopVsLvm(page);
  const pct = page.getByTestId('compare-percentiles-i2d');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'compare-loop-vs-lvm.png'), fullPage: true });

  // the 31 ms capture on its own time axis: as many bins as the 110 s one, in ms; the latency axis stays shared
  const i2d = page.getByTestId('compare-heatmaps-i2d');
  await expect(i2d.getByTestId('compare-heatmap-scale')).toContainText('time bins of 1.38 s from each side');
  await i2d.getByLabel('Time axis').selectOption('own');
  await expect(page).toHaveURL(/x_time=own/);
  await expect(i2d.getByTestId('compare-heatmap-scale')).toContainText("each side's own time axis (bins of 384.7 µs and 1.38 s)");
  await expect(page.getByTestId('compare-heatmap-i2d-a').locator('[data-ready="1"]')).toBeVisible();
  await expect(pct.getByTestId('pct-p99').locator('td').nth(1)).toHaveText('540 ns');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'compare-loop-vs-lvm-own-time.png'), fullPage: true });
  await page.reload();
  await expect(i2d.getByLabel('Time axis')).toHaveValue('own');
  await i2d.getByLabel('Time axis').selectOption('shared');
  await expect(page).not.toHaveURL(/x_time/);

  // another statistic: in the URL, and the tables follow
  await page.getByTestId('compare-dispatch-device').getByLabel('Statistic').selectOption('max');
  await expect(page).toHaveURL(/stat=max/);
  await expect(triple(page.getByTestId('compare-dispatch-device').locator('tr[data-key="7,0"]'), 'q2c')[0]).toHaveText(
    '237.8 µs',
  );
  await page.getByTestId('compare-dispatch-device').getByLabel('Statistic').selectOption('p99');

  // reload, and the link copied and opened in a fresh browser: the same view
  await page.reload();
  await expectLoopVsLvm(page);
  const { other } = await copyLinkAndOpenElsewhere(page, browser);
  await expectLoopVsLvm(other);
  // a row leads to the events behind it: that device's requests in its own analysis
  await other.getByTestId('compare-dispatch-device').locator('tr[data-key="8,0"]').getByTestId('events-after').click();
  await expect(other).toHaveURL(/\/a\/[\w-]+\?tab=dispatch&dev=8%2C0/);
  await expect(other.getByRole('heading', { level: 1 })).toHaveText('cmp sda after');
  await other.context().close();
});

test('two halves of one capture, from its analysis page; ranges in the URL', async ({ page }) => {
  needsPublic();
  await upload(page, [LOOP], 'cmp loop0 halves');
  await page.getByTestId('compare-link').click();
  await expect(page.getByTestId('compare-choose')).toBeVisible();
  await page.getByTestId('compare-with').selectOption({ label: 'itself: first half → second half of its time span' });
  await expect(page).toHaveURL(/a_from=0&a_to=15463138&b_from=15463139&b_to=30926276/);
  await expect(page.getByText('two time ranges of one analysis')).toBeVisible();
  // every request once: 376 start in the first half, 648 in the second (tests/golden/compare/loop-halves.json)
  await expect(page.getByTestId('compare-side-a').getByTestId('compare-side-requests')).toContainText('376');
  await expect(page.getByTestId('compare-side-b').getByTestId('compare-side-requests')).toContainText('648');
  const blktst = page.getByTestId('compare-dispatch-process').locator('tr[data-key="blktst"]');
  await expect(triple(blktst, 'count')[2]).toHaveText('+272 (+72 %)');

  // the after range typed in seconds: the URL and the figures follow
  await page.getByLabel('after from (s)').fill('0.020');
  await page.getByLabel('after to (s)').fill('0.030926276');
  await page.getByTestId('compare-side-b').getByRole('button', { name: 'Apply' }).click();
  await expect(page).toHaveURL(/b_from=20000000&b_to=30926276/);
  await expect(triple(blktst, 'count')[1]).not.toHaveText('648');

  // a reversed range is refused with the server's message
  await page.goto(page.url().replace(/a_to=\d+/, 'a_to=0').replace(/a_from=\d+/, 'a_from=5'));
  await expect(page.getByRole('alert')).toContainText('a_to (0) must be after a_from (5)');
});

test('waits per lock in two ranges; a lock row opens that side’s waits on it', async ({ page }) => {
  await upload(page, [XFS], 'cmp xfs waits');
  const id = new URL(page.url()).pathname.split('/').pop();
  // before: up to xfsconvertd's stall on xfs_buf_lock; after: the two xfs_ilock waits
  await page.goto(`/compare?a=${id}&b=${id}&a_to=358613950000000&b_from=358613950000001`);
  const locks = page.getByTestId('compare-locks');
  const ilock = locks.locator('tr[data-key="xfs_ilock"]');
  await expect(triple(ilock, 'waits')[0]).toHaveText('—');
  await expect(triple(ilock, 'waits')[1]).toHaveText('2');
  await expect(triple(ilock, 'total')[1]).toHaveText('637.6 ms');
  await expect(triple(locks.locator('tr[data-key="xfs_buf_lock"]'), 'max')[0]).toHaveText('342.5 ms');
  const wait = page.getByTestId('compare-percentiles-wait');
  await expect(wait.getByTestId('pct-max').locator('td.delta')).toHaveClass(/better/);
  await expect(page.getByTestId('compare-heatmap-wait-b').locator('[data-ready="1"]')).toBeVisible();
  // no block requests on either side: no dispatch tables
  await expect(page.getByTestId('compare-dispatch-device')).toHaveCount(0);
  await expect(locks.getByTestId('compare-locks-note')).toContainText('starting in each side');
  // a lock's link lists the waits its row counts: those starting in the side's range. xfsconvertd's xfs_buf_lock
  // wait begins before the split and ends after it: counted before only, and no link after (no wait starts there)
  const buf = locks.locator('tr[data-key="xfs_buf_lock"]');
  await expect(triple(buf, 'waits')[1]).toHaveText('—');
  await expect(buf.getByTestId('events-after')).toHaveCount(0);
  const compareUrl = page.url();
  const waits = page.getByTestId('waits-table');
  for (const [row, side, key] of [
    [ilock, 1, 'xfs_ilock'],
    [buf, 0, 'xfs_buf_lock'],
  ] as const) {
    const counted = Number(await triple(row, 'waits')[side].innerText());
    await row.getByTestId(side === 0 ? 'events-before' : 'events-after').click();
    await expect(page).toHaveURL(new RegExp(`tab=stalls&t0=\\d+&t1=\\d+&lock_key=${key}&w_start=1`));
    await expect(page.getByTestId('waits-starting')).toBeVisible();
    await expect(waits.locator('tbody tr')).toHaveCount(counted);
    if (key === 'xfs_ilock') {
      await expect(page).toHaveURL(/t0=358613950000001&/);
      await expect(waits).toContainText('file_writer');
    }
    await page.goto(compareUrl);
  }
  expect(Number(await triple(ilock, 'waits')[1].innerText())).toBe(2);
  // split between the two xfs_ilock waits' starts, while flush-8:0's is under way: the after side counts only
  // file_writer's, and its link lists it alone (the range overlaps both)
  await page.goto(`/compare?a=${id}&b=${id}&a_to=358613965999999&b_from=358613966000000`);
  await expect(triple(ilock, 'waits')[0]).toHaveText('1');
  await expect(triple(ilock, 'waits')[1]).toHaveText('1');
  await ilock.getByTestId('events-after').click();
  await expect(page).toHaveURL(/t0=358613966000000&t1=\d+&lock_key=xfs_ilock&w_start=1/);
  await expect(waits.locator('tbody tr')).toHaveCount(1);
  await expect(waits).toContainText('file_writer');
  await expect(waits).not.toContainText('flush-8:0');
  // the chip's ×: every wait overlapping the range, flush-8:0's (begun before it) too
  await page.getByRole('button', { name: 'Show every wait overlapping the range' }).click();
  await expect(page).not.toHaveURL(/w_start/);
  await expect(page.getByTestId('waits-starting')).toHaveCount(0);
  await expect(waits.locator('tbody tr')).toHaveCount(2);
  await expect(waits).toContainText('flush-8:0');
});
