// Issue 25: every view fits its data, walked on real captures at 1600×1000: a capture of one request, of completions
// only, a dump without timestamps, function_graph calls without a wait; the idle task's one name; the time range chip
// and the capabilities panel only where they say something; the ruler's labels whole; an upload's errors once; the
// Timeline tab without the charts' library.
import { expect, test } from '@playwright/test';
import fs from 'node:fs';
import path from 'node:path';
import { PUBLIC, SCREENSHOTS, SEED_CFQ, needsPublic } from './paths';
import { INCIDENT, analysis, file } from './walks';

test.use({ viewport: { width: 1600, height: 1000 } });

const COMPLETIONS_ONLY = path.join(PUBLIC, 'blkparse-text/shl812-leveldb-ramdisk-completions.blkparse.txt');
const LVM = path.join(PUBLIC, 'blkparse-text/derived-liuzel01-sda-lvm.blkparse.txt');
const OFFCPU_ONLY = path.join(PUBLIC, 'offcputime/bcc-offcputime-K-default-stacks.txt');
const OFFWAKE = path.join(PUBLIC, 'offwaketime/bcc-offwaketime_example.txt');
const PING = path.join(PUBLIC, 'ftrace-funcgraph/packt-lkd-ping-funcgraph-latency-format.txt');

test('the Timeline tab loads no ECharts chunk; Dispatch still draws its charts', async ({ page, request }) => {
  const id = await analysis(request, 'landing incident', INCIDENT.map(file));
  const asked: string[] = [];
  page.on('request', (r) => asked.push(new URL(r.url()).pathname));
  const charts = () => asked.filter((p) => /\/assets\/EChart-[^/]+\.js$/.test(p));
  await page.goto(`/a/${id}?tab=timeline`);
  await expect(page.locator('[aria-label="Analysis timeline"]')).toHaveAttribute('data-ready', '1');
  await page.waitForLoadState('networkidle');
  expect(charts()).toEqual([]);
  expect(await page.locator('link[rel="modulepreload"][href*="/EChart-"]').count()).toBe(0);
  // another tab asks for it when shown
  await page.getByRole('tablist').getByRole('tab', { name: 'Dispatch' }).click();
  await expect(page.locator('[aria-label="I2D and D2C latency over time"]')).toHaveAttribute('data-ready', '1');
  expect(charts()).toHaveLength(1);
  // a page of a tab that draws charts preloads it beside the entry
  asked.length = 0;
  await page.goto(`/a/${id}?tab=dispatch`);
  await expect(page.locator('link[rel="modulepreload"][href*="/EChart-"]')).toHaveCount(1);
  await expect(page.locator('[aria-label="Latency heatmap"]')).toHaveAttribute('data-ready', '1');
  expect(charts()).toHaveLength(1);
});

test('the time range chip only where the view follows it; a dump without timestamps says so', async ({ page, request }) => {
  const id = await analysis(request, 'landing incident', INCIDENT.map(file));
  const chip = page.getByTestId('time-range');
  await page.goto(`/a/${id}?tab=dispatch&t0=10000000000&t1=12000000000`);
  await expect(chip).toContainText('time range +10.000000 s → +12.000000 s'); // from the analysis' start (0 s)
  for (const tab of ['Sources', 'SQL']) {
    await page.getByRole('tablist').getByRole('tab', { name: tab }).click();
    await expect(page.getByRole('tablist').getByRole('tab', { name: tab })).toHaveAttribute('aria-selected', 'true');
    await expect(chip).toHaveCount(0);
  }
  await page.getByRole('tablist').getByRole('tab', { name: 'Stalls' }).click();
  await expect(chip).toBeVisible();

  needsPublic(); // (what precedes runs without it)
  const dump = await analysis(request, 'landing offcputime only', [file(OFFCPU_ONLY)]);
  await page.goto(`/a/${dump}`);
  await expect(page.getByTestId('no-time-span')).toHaveText('none: offcputime totals per stack carry no timestamps');
});

test('a capture of one request: its heatmap is one column labelled with its instant, without a slider', async ({ page, request }) => {
  needsPublic();
  // one request of a real capture (Q G I D C of one sector, SOURCES.md), as blkparse printed it
  const lines = fs.readFileSync(LVM, 'utf8').split('\n');
  const one = [...lines.slice(0, 6), lines[12]].join('\n') + '\n';
  expect(one).toContain(' C   W 24803160 + 160');
  const id = await analysis(request, 'landing one request', [{ name: 'one-request.blkparse.txt', bytes: Buffer.from(one) }]);
  await page.goto(`/a/${id}?tab=dispatch`);
  const panel = page.locator('section', { has: page.getByRole('heading', { name: 'Latency heatmap' }) });
  await expect(panel).toContainText('requests per latency bin (all at one instant)');
  await expect(panel).not.toContainText('the slider');
  const chart = page.locator('[aria-label="Latency heatmap"]');
  await expect(chart).toHaveAttribute('data-ready', '1');
  await chart.scrollIntoViewIfNeeded();
  await page.screenshot({ path: path.join(SCREENSHOTS, 'fit-one-request-heatmap.png') });
  // the request's cell spans the plot (it was 1 of 120 columns in the corner): three quarters across, the highest
  // latency bin (the bins run from its decade to just above it; as charts/heatmap.ts's GRID lays it out), opens it
  const h = (await (await request.get(`/api/analyses/${id}/heatmap`, { params: { metric: 'i2d', x_bins: 120, y_bins: 40 } })).json()) as { y_bins: number };
  const b = (await chart.boundingBox())!;
  const GRID = { left: 78, right: 92, top: 14, bottom: 62 };
  const rowH = (b.height - GRID.top - GRID.bottom) / h.y_bins;
  await page.mouse.click(b.x + GRID.left + 0.75 * (b.width - GRID.left - GRID.right), b.y + GRID.top + rowH / 2);
  await expect(page.getByTestId('request-detail')).toContainText('24803160');
});

test('a capture of completions only: its requests belong to no traced process, and say so', async ({ page, request }) => {
  needsPublic();
  const id = await analysis(request, 'landing completions', [file(COMPLETIONS_ONLY)]);
  await page.goto(`/a/${id}?tab=dispatch`);
  const first = page.getByTestId('summary-table').locator('tbody tr').first();
  await expect(first).toContainText('(process not traced)');
  await expect(first).not.toContainText('None');
});

test('the idle task has one name: an offwaketime waker swapper/N is <idle> 0', async ({ page, request }) => {
  needsPublic();
  const id = await analysis(request, 'landing offwaketime', [file(OFFWAKE)]);
  await page.goto(`/a/${id}`);
  await expect(page.locator('.sources-table .badge')).toHaveText('offwaketime');
  const first = page.getByTestId('pair-list').locator('tbody tr').first();
  await expect(first).toContainText('<idle> 0 (swapper/0)');
  await expect(page.getByTestId('pair-card')).toContainText('woken by <idle> 0 (swapper/0)');
});

test('an upload prints a refused file once; its progress polls never meet a 404', async ({ page }) => {
  const notFound: string[] = [];
  page.on('response', (r) => r.url().includes('/api/progress/') && r.status() === 404 && notFound.push(r.url()));
  await page.goto('/');
  await page.getByTestId('file-input').setInputFiles([
    { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('hello world\nthis is not a trace\n') },
    { name: 'cfq.blkparse.txt', mimeType: 'text/plain', buffer: fs.readFileSync(SEED_CFQ) },
  ]);
  await page.getByRole('button', { name: /^Analyse/ }).click();
  const err = page.getByTestId('upload-error');
  await expect(err).toContainText('notes.txt line 1');
  await expect(page.getByText(/notes\.txt line 1/)).toHaveCount(1); // printed once, not once per list
  // a 15 MB trace-cmd report: the page polls the server's progress while it parses
  needsPublic(); // (what precedes runs without it)
  const polls: number[] = [];
  page.on('response', (r) => r.url().includes('/api/progress/') && polls.push(r.status()));
  await page.goto('/');
  await page.getByTestId('file-input').setInputFiles(path.join(PUBLIC, 'trace-cmd-report/derived-langraph-report-sched-softirq-kstack.txt'));
  await page.getByRole('button', { name: /^Analyse/ }).click();
  await expect(page.getByTestId('upload-result')).toBeVisible({ timeout: 60_000 });
  expect(notFound).toEqual([]);
  expect(polls.length).toBeGreaterThan(0); // it did poll while the server parsed
  expect(polls.every((s) => s === 200)).toBe(true);
});

test("the ruler's labels end inside it: none cut at its right edge", async ({ page, request }) => {
  needsPublic();
  // the ping capture (function_graph, 255 ms): its +250 ms tick sat at the ruler's end, printed "+250 m"
  const id = await analysis(request, 'landing ping', [file(PING)]);
  for (const q of ['', '&v0=384905506000&v1=384905506050']) {
    await page.goto(`/a/${id}?tab=timeline${q}`);
    const ruler = page.getByTestId('timeline-ticks');
    await expect(ruler.locator('.tick').nth(2)).toBeVisible();
    const right = (await ruler.boundingBox())!;
    const ends = await ruler.locator('.tick').evaluateAll((els) =>
      els.map((e) => {
        const r = document.createRange();
        r.selectNodeContents(e);
        return { text: e.textContent, right: r.getBoundingClientRect().right };
      }),
    );
    for (const e of ends) if (e.text) expect(e.right, e.text).toBeLessThanOrEqual(right.x + right.width);
    expect(ends.filter((e) => e.text).length).toBeGreaterThanOrEqual(3);
  }
});

test('a function_graph capture where no task waited opens on its Timeline, not an empty Stalls', async ({ page, request }) => {
  needsPublic();
  const id = await analysis(request, 'landing ping', [file(PING)]);
  await page.goto(`/a/${id}`);
  await expect(page.getByRole('tablist').getByRole('tab', { name: 'Timeline' })).toHaveAttribute('aria-selected', 'true');
  await expect(page.getByTestId('track-tree')).toContainText('ping (1556)');
  // the Stalls tab is there all the same
  await page.getByRole('tablist').getByRole('tab', { name: 'Stalls' }).click();
  await expect(page.getByText('No task waited in this trace.')).toBeVisible();
});

test("'What this capture can tell' opens only when a tab of the analysis is empty", async ({ page, request }) => {
  needsPublic();
  // the Hadoop blkparse: every tab it has shows data (it lacks ftrace and offcputime: said in one line)
  const hadoop = await analysis(request, 'landing hadoop', [file(path.join(PUBLIC, 'blkparse-text/derived-zzunny97-hadoop-sdb-cpu0-1.blkparse.txt'))]);
  await page.goto(`/a/${hadoop}`);
  const panel = page.getByTestId('capabilities');
  // (ftrace, offcputime, and the completions its missing per-CPU file held)
  await expect(panel.locator('summary')).toContainText('data for Timeline, Dispatch · 3 things it lacks');
  await expect(panel).not.toHaveAttribute('open');
  // Dispatch's heatmap in the first screen (the open panel pushed it ~215 px down, to the window's bottom edge)
  const heat = (await page.locator('[aria-label="Latency heatmap"]').boundingBox())!;
  expect(heat.y).toBeLessThan(page.viewportSize()!.height * 0.7);
  // the ping capture: its Stalls tab has nothing, the panel says why
  const ping = await analysis(request, 'landing ping', [file(PING)]);
  await page.goto(`/a/${ping}`);
  await expect(panel).toHaveAttribute('open', '');
  await expect(panel.getByTestId('capability-views').locator('tr[data-state="empty"]').first()).toContainText('no task waited');
});
