import { expect, test } from '@playwright/test';
import fs from 'node:fs';
import path from 'node:path';
import { copyLinkAndOpenElsewhere } from './share';
import { upload } from './upload';
import { REPO, SCREENSHOTS, SHARED, needsPublic } from './paths';

const INCIDENT = ['incident.blkparse.txt', 'incident.trace-cmd-report.txt', 'incident.offcputime.txt'].map((n) =>
  path.join(REPO, 'samples', n),
);

test('SQL: a question no view asks, a shared link, refusals, downloads, a chain as text', async ({ page, browser }) => {
  await upload(page, INCIDENT, 'sql console');
  await page.getByRole('tablist').getByRole('tab', { name: 'SQL' }).click();
  await expect(page).toHaveURL(/[?&]tab=sql/);
  await expect(page.getByTestId('sql-views')).toContainText('waits');

  const editor = page.getByTestId('sql-editor');
  await editor.fill(
    "SELECT pid, comm, count(*) AS waits, max(duration_ns) AS longest_ns FROM waits WHERE lock LIKE 'xfs_ilock%' GROUP BY ALL ORDER BY longest_ns DESC",
  );
  await page.getByTestId('sql-run').click();
  await expect(page).toHaveURL(/[?&]sql=SELECT/);
  const table = page.getByTestId('sql-table');
  await expect(table.locator('thead th')).toHaveText(['pid', 'comm', 'waits', 'longest_ns']);
  await expect(table.locator('tbody tr').first()).toContainText('file_reader');
  await expect(page.getByTestId('sql-summary')).toContainText('rows');

  // sort by a column: the header toggles, the rows follow
  await table.locator('thead th', { hasText: 'pid' }).click();
  await expect(table.locator('thead th', { hasText: 'pid' })).toHaveAttribute('aria-sort', 'descending');
  const pids = await table.locator('tbody tr td:first-child').allInnerTexts();
  expect(pids.map(Number)).toEqual([...pids.map(Number)].sort((a, b) => b - a));

  // the quick chart is drawn; the CSV downloads
  await expect(page.getByRole('img', { name: "chart of the query's result" }).locator('canvas').first()).toBeVisible();
  const [csv] = await Promise.all([page.waitForEvent('download'), page.getByTestId('sql-csv').click()]);
  expect(csv.suggestedFilename()).toBe('query.csv');

  // the sort and the chart are in the URL, by column names
  await expect(page).toHaveURL(/[?&]sql_sort=pid&sql_desc=1/);
  const kind = page.getByTestId('sql-chart-kind');
  await kind.selectOption({ label: 'histogram of waits' });
  await expect(page).toHaveURL(/[?&]sql_chart=histogram&sql_y=waits/);

  // the link shares the query, its sort and its chart: another browser runs it and gets the same table, sorted the
  // same, and the same chart
  const { other } = await copyLinkAndOpenElsewhere(page, browser);
  const otherTable = other.getByTestId('sql-table');
  await expect(otherTable.locator('tbody tr').first()).toContainText(/file_(reader|writer)/);
  await expect(other.getByTestId('sql-editor')).toHaveValue(/xfs_ilock/);
  await expect(otherTable.locator('thead th', { hasText: 'pid' })).toHaveAttribute('aria-sort', 'descending');
  expect(await otherTable.locator('tbody tr td:first-child').allInnerTexts()).toEqual(pids);
  await expect(other.getByTestId('sql-chart-kind').locator('option:checked')).toHaveText('histogram of waits');
  await expect(other.getByRole('img', { name: "chart of the query's result" }).locator('canvas').first()).toBeVisible();
  await other.context().close();

  // no chart, sorted the other way: kept too; another query drops both (its own columns)
  await kind.selectOption({ label: 'none' });
  await expect(page).toHaveURL(/[?&]sql_chart=none/);
  await expect(page.getByRole('img', { name: "chart of the query's result" })).toHaveCount(0);
  await table.locator('thead th', { hasText: 'pid' }).click();
  await expect(page).toHaveURL(/[?&]sql_sort=pid(&|$)/);
  await expect(page).not.toHaveURL(/sql_desc/);
  await page.reload();
  await expect(page.getByTestId('sql-table').locator('thead th', { hasText: 'pid' })).toHaveAttribute('aria-sort', 'ascending');
  await expect(page.getByRole('img', { name: "chart of the query's result" })).toHaveCount(0);

  // refused: a file read, a write
  await editor.fill("SELECT * FROM read_csv('/etc/passwd')");
  await page.getByTestId('sql-run').click();
  await expect(page.getByTestId('sql-result').getByRole('alert')).toContainText('no file, network or extension access');
  await editor.fill("COPY waits TO '/tmp/x.csv'");
  await page.getByTestId('sql-run').click();
  await expect(page.getByTestId('sql-result').getByRole('alert')).toContainText('only a SELECT');

  // an example fills the editor
  await page.getByRole('button', { name: 'Requests by I2D bucket per process' }).click();
  await expect(editor).toHaveValue(/i2d_bucket/);
  await page.getByTestId('sql-run').click();
  await expect(page.getByTestId('sql-table').locator('thead th')).toContainText(['comm', 'pid', 'i2d_bucket', 'requests']);

  // downloads: a view as Parquet, the Perfetto trace
  const downloads = page.getByTestId('downloads');
  const perfetto = await page.request.get(await downloads.getByTestId('perfetto-link').getAttribute('href') as string);
  expect(perfetto.ok()).toBe(true);
  const trace = await perfetto.json();
  expect(trace.metadata.waits).toBeGreaterThan(0);
  const parquet = await page.request.get(await downloads.getByRole('link', { name: 'Parquet' }).first().getAttribute('href') as string);
  expect((await parquet.body()).subarray(0, 4).toString()).toBe('PAR1');

  // a chain as text for an email
  await page.getByRole('tablist').getByRole('tab', { name: 'Stalls' }).click();
  await page.getByTestId('chain-list').locator('tbody tr').first().click();
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
  await page.getByTestId('copy-chain-text').click();
  await expect(page.getByTestId('copy-chain-text')).toHaveText('Copied');
  const text = await page.evaluate(() => navigator.clipboard.readText());
  expect(text.split('\n')[0]).toBe('Stall: file_writer (pid 3271) blocked 2.304 s on xfs_ilock via down_write');
  expect(text.split('\n').every((l) => l.length <= 80)).toBe(true);
});

test("SQL: a GROUP BY's quick chart is a bar per category, on a real trace.dat", async ({ page }) => {
  needsPublic();
  // langraph's trace.dat (trace-cmd v7): waits per task, one row per comm. A histogram of the counts said nothing of
  // which task waited; a bar per comm does.
  await upload(page, [path.join(SHARED, 'samples-public/trace-cmd-report/trace-dat/langraph-trace.dat')], 'sql bars');
  await page.getByRole('tablist').getByRole('tab', { name: 'SQL' }).click();
  await page.getByTestId('sql-editor').fill('SELECT comm, count(*) AS waits FROM waits GROUP BY comm ORDER BY waits DESC');
  await page.getByTestId('sql-run').click();
  await expect(page.getByTestId('sql-table').locator('thead th')).toHaveText(['comm', 'waits']);
  await expect(page.getByTestId('sql-chart-kind').locator('option:checked')).toHaveText('waits per comm (bars)');
  const chart = page.getByRole('img', { name: "chart of the query's result" });
  await expect(chart.locator('canvas').first()).toBeVisible();
  await expect(page.getByTestId('sql-bars-note')).toContainText('The 30 largest of');
  await page.getByTestId('sql-chart-kind').selectOption({ label: 'histogram of waits' });
  await expect(page).toHaveURL(/[?&]sql_chart=histogram&sql_y=waits/);
  await page.getByTestId('sql-chart-kind').selectOption({ label: 'waits per comm (bars)' });
  await expect(page).toHaveURL(/[?&]sql_chart=bars&sql_x=comm&sql_y=waits/);
  await chart.screenshot({ path: path.join(SCREENSHOTS, 'sql-bars-langraph.png') });
});

test('SQL: a shared link cannot put a formula in the downloaded CSV; numbers stay numbers', async ({ page }) => {
  await upload(page, INCIDENT.slice(0, 1), 'sql inert csv');
  const url = new URL(page.url());
  url.searchParams.set('tab', 'sql');
  url.searchParams.set('sql', "SELECT '=cmd|'' /C calc''!A0' AS name, -5 AS n, '-7' AS t, '@SUM(A1)' AS a, '+1+x' AS p");
  await page.goto(url.toString());
  await expect(page.getByTestId('sql-table').locator('tbody tr')).toHaveCount(1);
  const [csv] = await Promise.all([page.waitForEvent('download'), page.getByTestId('sql-csv').click()]);
  const text = fs.readFileSync((await csv.path())!, 'utf8');
  expect(text).toBe(`name,n,t,a,p\r\n"'=cmd|' /C calc'!A0",-5,-7,"'@SUM(A1)","'+1+x"\r\n`);
});
