import { expect, test } from '@playwright/test';
import path from 'node:path';
import { upload } from './upload';
import { PUBLIC, SCREENSHOTS, needsPublic } from './paths';

needsPublic();
const FG_ONLY = path.join(PUBLIC, 'ftrace-funcgraph/perf-tools-funcgraph-Htp-abstime-header.txt');
const FG_ONCPU = path.join(PUBLIC, 'ftrace-funcgraph/perf-tools-funcgraph-Ctp-oncpu-abstime.txt');
const LANGRAPH = path.join(PUBLIC, 'trace-cmd-report/derived-langraph-report-sched-softirq-kstack.txt');

test('function_graph alone, no task column: waits of the CPU\'s pseudo-task, its lane, and what it lacks', async ({ page }) => {
  await upload(page, [FG_ONLY], 'funcgraph only');
  // calls per CPU (no funcgraph-proc column): waits inferred from CPU 0's long schedule() calls, its timeline lane
  const panel = page.getByTestId('capabilities');
  await expect(panel.locator('summary')).toContainText('data for Stalls, Timeline');
  await panel.locator('summary').click();
  const views = panel.getByTestId('capability-views');
  await expect(views).toContainText('5 waits (5 inferred from long sleeping calls), 5 with a stack');
  await expect(views).toContainText('calls per CPU (task unknown)');
  const missing = panel.getByTestId('capability-missing');
  await expect(missing).toContainText('waits, who woke whom, runnable delay');
  await expect(missing).toContainText("995 calls are kept per CPU, as 'CPU n (task unknown)'");
  await expect(missing.locator('code').first()).toHaveText('trace-cmd record -p function_graph -e sched_switch -e sched_wakeup -T');

  // it opens on Stalls: the waits, each marked inferred, of "CPU 0 (task unknown)" (no pid shown); the four in
  // n_tty_read (a tty read waiting for input: idle, issue 33) one toggle away
  await expect(page.getByRole('tab', { name: 'Stalls' })).toHaveAttribute('aria-selected', 'true');
  const rows = page.getByTestId('waits-table').locator('tbody tr');
  await expect(rows).toHaveCount(1);
  await expect(rows.first().getByTestId('wait-why')).toHaveText('other unexplained sleep');
  await page.getByTestId('waits-panel').getByLabel('idle sleeps too').check();
  await expect(rows).toHaveCount(5);
  await expect(rows.first()).toContainText('CPU 0 (task unknown)');
  await expect(rows.first()).not.toContainText('unknown) -1');
  await expect(rows.first().locator('.badge.inferred')).toBeVisible();
  const slow = page.getByTestId('waits-table').locator('tr[data-wait$=":480"]');
  await expect(slow).toContainText('207.9 ms');
  await expect(slow).toContainText('n_tty_read');
  await slow.click();
  await expect(page.getByTestId('wait-stack')).toContainText('schedule_timeout');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'capabilities-funcgraph-only.png'), fullPage: false });

  // the timeline: CPU 0's lane
  await page.getByRole('tab', { name: 'Timeline' }).click();
  await expect(page.locator('body')).toContainText('1 of 1 lanes with something in this window');
  await expect(page.locator('body')).toContainText('CPU 0 (task unknown)');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'capabilities-funcgraph-only-timeline.png'), fullPage: false });
});

test('function_graph on-CPU only (no wait): the Stalls heatmap opens on function durations', async ({ page }) => {
  await upload(page, [FG_ONCPU], 'funcgraph on-CPU');
  // no task waited: the analysis opens on the Timeline (its calls), the tab with something to say
  await expect(page.getByRole('tab', { name: 'Timeline' })).toHaveAttribute('aria-selected', 'true');
  await page.getByRole('tab', { name: 'Stalls' }).click();
  await expect(page.getByRole('tab', { name: 'Stalls' })).toHaveAttribute('aria-selected', 'true');
  const heatmap = page.getByTestId('stalls-heatmap');
  await expect(heatmap.getByRole('button', { name: 'function duration' })).toHaveAttribute('aria-pressed', 'true');
  await expect(heatmap.getByLabel('Function')).toHaveValue('vfs_read');
  await expect(heatmap.locator('canvas').first()).toBeVisible();
  await expect(heatmap).not.toContainText('No calls');
  await expect(page).not.toHaveURL(/shm=/); // chosen from what the capture has, not written in the address
  await heatmap.scrollIntoViewIfNeeded();
  await page.screenshot({ path: path.join(SCREENSHOTS, 'capabilities-funcgraph-oncpu-heatmap.png'), fullPage: false });
});

test('trace-cmd -T capture: waits carry their kernel stacks and locks', async ({ page }) => {
  await upload(page, [LANGRAPH], 'langraph -T');
  const panel = page.getByTestId('capabilities');
  await expect(panel.locator('summary')).toContainText('data for Stalls, Timeline');
  await panel.locator('summary').click();
  await expect(panel.getByTestId('capability-views')).toContainText('1126 waits (1126 from scheduler events), 1126 with a stack');

  // the waits on the buffer lock: jbd2's commit, its stack from the kernel_stack event 4 µs after the switch
  const url = new URL(page.url());
  url.searchParams.set('tab', 'stalls');
  url.searchParams.set('lock_key', '__wait_on_buffer');
  await page.goto(url.toString());
  const table = page.getByTestId('waits-table');
  await expect(table.locator('tbody tr')).toHaveCount(4);
  const jbd2 = table.locator('tr[data-wait$=":120324"]');
  await expect(jbd2).toContainText('jbd2/sda3-8');
  await expect(jbd2).toContainText('__wait_on_buffer via I/O');
  await expect(jbd2).toContainText('229.7 ms');
  await jbd2.click();
  const body = page.locator('body');
  await expect(body).toContainText('jbd2_journal_commit_transaction');
  await expect(body).toContainText('stack from the kernel_stack event at line 120333');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'langraph-wait-stack.png'), fullPage: false });
});
