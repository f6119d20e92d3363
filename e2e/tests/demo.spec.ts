import { expect, test } from '@playwright/test';
import path from 'node:path';
import { REPO, SCREENSHOTS } from './paths';

const DEMO = path.join(REPO, 'samples/demo-cfq-starvation.blkparse.txt');

test('the demo trace: chart, time window from the slider, request from a chart point', async ({ page }) => {
  await page.goto('/');
  await page.getByTestId('file-input').setInputFiles(DEMO);
  await page.getByRole('button', { name: /^Analyse/ }).click();
  const result = page.getByTestId('upload-result');
  await expect(result.getByTestId('source-format')).toHaveText('blkparse', { timeout: 30_000 });
  await page.screenshot({ path: path.join(SCREENSHOTS, 'home-demo.png'), fullPage: true });
  await result.getByRole('link', { name: /Open analysis/ }).click();

  const chart = page.getByRole('img', { name: 'I2D and D2C latency over time' });
  await expect(chart.locator('canvas').first()).toBeVisible();
  await expect(page.getByTestId('requests-table').locator('tbody tr').first()).toBeVisible();
  await page.screenshot({ path: path.join(SCREENSHOTS, 'analysis-demo.png'), fullPage: true });

  // Zoom into the plot with shift + wheel (as the chart's hint says): a time window lands in the URL.
  const box = (await chart.boundingBox())!;
  await page.mouse.move(box.x + box.width * 0.37, box.y + box.height * 0.45);
  await page.keyboard.down('Shift');
  for (let i = 0; i < 4; i++) await page.mouse.wheel(0, -240);
  await page.keyboard.up('Shift');
  await expect(page).toHaveURL(/t0=\d+&t1=\d+/);
  await expect(page.getByTestId('time-range')).toContainText('time range'); // once, above the tab
  await expect(page.getByTestId('filters')).toHaveCount(0);

  await page.getByTestId('requests-table').locator('tbody tr').first().click();
  await expect(page.getByTestId('request-detail')).toBeVisible();
  await page.screenshot({ path: path.join(SCREENSHOTS, 'analysis-demo-window.png'), fullPage: true });
});

test('the home page lists, per tool, the capture command whose output is dropped as it is', async ({ page }) => {
  await page.setViewportSize({ width: 1600, height: 1000 });
  await page.goto('/');
  const list = page.getByTestId('capture-commands');
  const rows = list.locator('tbody tr');
  const command = (tool: string) => rows.filter({ has: page.getByRole('cell', { name: tool, exact: true }) }).locator('code');
  await expect(command('blktrace')).toHaveText('blktrace -d /dev/sda -w 30');
  await expect(command('blkparse')).toContainText('| blkparse -i - >');
  await expect(command('trace-cmd (function_graph)')).toContainText('trace-cmd record -p function_graph -e sched_switch -e sched_wakeup');
  await expect(command('ftrace (tracefs)')).toContainText('cat trace >');
  await expect(command('perf script')).toContainText('perf record -a -g -e sched:sched_switch');
  await expect(command('bcc offcputime')).toHaveText('offcputime -K -f 30 > offcpu.folded.txt');
  await expect(command('bcc offwaketime')).toHaveText('offwaketime -K -f 30 > offwake.folded.txt');
  await expect(page.locator('.upload-panel .hint')).toContainText('perf script');
  await list.screenshot({ path: path.join(SCREENSHOTS, 'home-capture-commands.png') });
});
