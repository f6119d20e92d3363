import { expect, test } from '@playwright/test';
import path from 'node:path';
import { upload } from './upload';
import { SCREENSHOTS, SHARED } from './paths';

const PUBLIC = path.join(SHARED, 'samples-public');
const FG_ONLY = path.join(PUBLIC, 'ftrace-funcgraph/perf-tools-funcgraph-Htp-abstime-header.txt');
const LANGRAPH = path.join(PUBLIC, 'trace-cmd-report/derived-langraph-report-sched-softirq-kstack.txt');

test('function_graph alone: the panel says what the capture lacks and how to capture it', async ({ page }) => {
  await upload(page, [FG_ONLY], 'funcgraph only');
  const panel = page.getByTestId('capabilities');
  await expect(panel).toHaveAttribute('open', '');
  await expect(panel.locator('summary')).toContainText('What this capture can tell');
  const views = panel.getByTestId('capability-views');
  await expect(views.locator('tr[data-state="empty"]').first()).toContainText('Stalls');
  await expect(views).toContainText('no funcgraph-proc column');
  const missing = panel.getByTestId('capability-missing');
  await expect(missing).toContainText('waits, who woke whom, runnable delay');
  await expect(missing.locator('code').first()).toHaveText('trace-cmd record -p function_graph -e sched_switch -e sched_wakeup -T');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'capabilities-funcgraph-only.png'), fullPage: false });
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
