// perf script with block tracepoints: the requests it rebuilds from them are the analysis' (no blktrace beside it), so
// the page has a Dispatch tab, and it shows them (tests/test_perf.py: 12 requests on 254,0).
import { expect, test } from '@playwright/test';
import path from 'node:path';
import { upload } from './upload';
import { REPO, SCREENSHOTS } from './paths';

const PERF_G = path.join(REPO, 'tests/fixtures/perf/sandbox-g.perf-script.txt');

test('perf script with block tracepoints: Dispatch shows the requests it rebuilt', async ({ page }) => {
  await upload(page, [PERF_G], 'perf block');
  const tabs = page.getByRole('tablist');
  await expect(tabs.getByRole('tab')).toHaveText(['Stalls', 'Timeline', 'Dispatch', 'Sources', 'SQL']);
  await tabs.getByRole('tab', { name: 'Dispatch' }).click();
  await page.getByRole('group', { name: 'Group by' }).getByRole('button', { name: 'per device' }).click();
  const rows = page.getByTestId('summary-table').locator('tbody tr');
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toContainText('254,0');
  await expect(rows.first()).toContainText('12');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'perf-dispatch.png'), fullPage: true });
});
