// Issue 5: the three-way demo capture (samples/gen_incident.py; values pinned by tests/test_incident.py) walked
// as a user: open the demo from the home page, zoom into the worst stall from a cell of the Stalls heatmap,
// follow the chain down to the starved block request, check the ftrace source's clock offset, share the link.
import { expect, test, type APIRequestContext, type Locator } from '@playwright/test';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { REPO, SCREENSHOTS } from './paths';
import { copyLinkAndOpenElsewhere } from './share';

// backend/cli.py DEMOS[1]: the synthetic incident `stallscope serve --demo` loads after the lab recording.
const DEMO_NAME =
  "Demo: an app's write stalls 2.3 s behind an inode lock, down to the starved metadata write (synthetic, three sources)";
const DEMO_FILES = ['blkparse', 'trace-cmd-report', 'offcputime'].map((k) => path.join(REPO, `samples/incident.${k}.txt`));
// samples/gen_incident.py OFFSET_NS: ftrace (mono clock) time = blktrace time + 5237.418062913 s. The alignment
// finds it from the block events to within 10 µs (tests/test_incident.py::test_aligned_to_the_blktrace).
const TRUE_OFFSET_NS = -5_237_418_062_913;
// Every candidate pair (a block_rq_insert/issue/complete event of the trace and the blktrace record of the same
// device, sector, size and phase) sits at that one offset, give or take the generator's few hundred ns between the
// two records of one tracepoint (the residuals, not pinned here).
const MATCHED = /^995 of 995 block events matched blktrace requests \(device, sector, size\) · residual p50 \d+ ns, max \d+(\.\d+)? (ns|µs)$/;
// As in frontend/src/charts/heatmap.ts (GRID) and views/heatmap/HeatmapBody.tsx (bins).
const GRID = { left: 78, right: 92, top: 14, bottom: 62 };
const X_BINS = 120;
const Y_BINS = 40;

type Cell = { x: number; y: number; count: number; max_ns: number; max_ref: { kind: string; source_id: number; line: number; pid: number | null } };
type HeatmapData = { t0_ns: number; t1_ns: number; x_bins: number; x_bin_ns: number; y_bins: number; cells: Cell[] };
type Analysis = { id: string; name: string };

/** The demos are loaded by `stallscope serve --demo`; a server started without it (as playwright.config.ts
 * does) gets the same files under the same name through the API, so that the home page lists it either way. */
async function ensureDemo(request: APIRequestContext) {
  const listed = (await (await request.get('/api/analyses')).json()) as Analysis[];
  if (listed.some((a) => a.name === DEMO_NAME)) return;
  const form = new FormData();
  form.append('name', DEMO_NAME);
  for (const f of DEMO_FILES) form.append('files', new Blob([fs.readFileSync(f)]), path.basename(f));
  const res = await request.post('/api/analyses', { multipart: form, timeout: 120_000 });
  expect(res.status()).toBe(201);
}

/** "-5237.418062648 s" → ns, exactly (the UI prints the offset in seconds with 9 decimals). */
function secondsTextToNs(text: string): number {
  const m = /^(-?)(\d+)\.(\d{9}) s$/.exec(text.trim());
  expect(m, `an offset in seconds with 9 decimals: ${text}`).not.toBeNull();
  const ns = Number(m![2]) * 1e9 + Number(m![3]);
  return m![1] === '-' ? -ns : ns;
}

/** The page position of the centre of heatmap cell (x, y). */
async function cellCentre(chart: Locator, x: number, y: number): Promise<[number, number]> {
  const box = (await chart.boundingBox())!;
  const cw = (box.width - GRID.left - GRID.right) / X_BINS;
  const ch = (box.height - GRID.top - GRID.bottom) / Y_BINS;
  return [box.x + GRID.left + (x + 0.5) * cw, box.y + GRID.top + (Y_BINS - 1 - y + 0.5) * ch];
}

test('the demo incident: the worst stall from a heatmap cell, its chain down to the starved write, the clock offset, a shared link', async ({
  page,
  browser,
  request,
}) => {
  test.setTimeout(180_000); // the demo may have to be ingested first (24k-line trace) on a slow machine
  await ensureDemo(request);

  // The home page lists the demo; it opens on the Stalls tab (it has an ftrace source).
  await page.goto('/');
  await page.getByTestId('analyses').getByRole('link', { name: DEMO_NAME }).first().click();
  await expect(page.getByRole('heading', { level: 1 })).toHaveText(DEMO_NAME);
  const id = /\/a\/([^/?#]+)/.exec(page.url())![1];
  const tabs = page.getByRole('tablist');
  await expect(tabs.getByRole('tab', { name: 'Stalls' })).toHaveAttribute('aria-selected', 'true');
  for (const t of ['Timeline', 'Dispatch', 'Off-CPU', 'Sources']) await expect(tabs.getByRole('tab', { name: t })).toBeVisible();

  // The heatmap of all waits. The worst stall is the app's write (chain #1's first wait: file_writer's
  // 2.304 s in xfs_ilock, trace line 8656); the server says which cell holds it as its maximum.
  const panel = page.getByTestId('stalls-heatmap');
  const chart = panel.getByRole('img', { name: 'Stalls latency heatmap' });
  await expect(chart.locator('canvas').first()).toBeVisible();
  await expect(panel.getByTestId('heatmap-percentiles').locator('th').first()).toHaveText('wait');
  const h = (await (
    await page.request.get(`/api/analyses/${id}/heatmap`, { params: { metric: 'wait', x_bins: X_BINS, y_bins: Y_BINS } })
  ).json()) as HeatmapData;
  const cell = h.cells.find((c) => c.max_ref.kind === 'wait' && c.max_ref.line === 8656)!;
  expect(cell).toMatchObject({ count: 1, max_ns: 2_304_170_000, max_ref: { pid: 3271 } });

  await page.evaluate(() => window.scrollTo(0, 0));
  await chart.scrollIntoViewIfNeeded();
  const [cx, cy] = await cellCentre(chart, cell.x, cell.y);
  await page.mouse.move(cx, cy);
  await expect(panel.locator('div', { hasText: '1 wait · max: 2.30 s' }).last()).toBeVisible(); // the cell's tooltip
  await page.mouse.click(cx, cy);

  // The cell's waits: file_writer's, which leads to its chain.
  const t0 = h.t0_ns + cell.x * h.x_bin_ns;
  const t1 = Math.min(t0 + h.x_bin_ns - 1, h.t1_ns);
  await expect(page).toHaveURL(new RegExp(`hbox=wait_${t0}_${t1}_\\d+_\\d*(&|$)`));
  await expect(page).toHaveURL(/wait=\d+%3A8656/);
  const list = panel.getByTestId('heatmap-events');
  await expect(list.getByTestId('heatmap-events-count')).toHaveText('1 wait in the box · slowest first');
  const row = list.getByTestId('heatmap-events-table').locator('tbody tr');
  await expect(row).toHaveCount(1);
  await expect(row).toContainText('2.30 s');
  await expect(row).toContainText('file_writer 3271');
  await expect(row).toContainText('xfs_ilock via down_write');
  await expect(row).toContainText('open chain link 1');
  await expect(row).toHaveClass(/selected/);

  // The cell's time range becomes the analysis-wide one: the chip shows it.
  await list.getByRole('button', { name: 'Select this time range' }).click();
  await expect(page).toHaveURL(new RegExp(`t0=${t0}&t1=${t1}`));
  const chip = page.getByTestId('time-range');
  const chipText = `time range +${(t0 / 1e9).toFixed(6)} s → +${(t1 / 1e9).toFixed(6)} s (35.81 ms)`; // from the start, 0 s
  await expect(chip).toContainText(chipText);
  expect(t1 - t0).toBe(h.x_bin_ns - 1);
  await expect(list.getByTestId('heatmap-events-count')).toHaveText('1 wait in the box · slowest first');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'incident-heatmap-cell.png'), fullPage: true });

  // Ranked first among the chains: the app's write, 2.30 s behind the inode lock. Only the chains whose first
  // wait overlaps the time range are listed (fewer than the 100 of the whole analysis), each under its rank.
  const inRange = (await (
    await page.request.get(`/api/analyses/${id}/chains`, { params: { limit: 100, t0_ns: t0, t1_ns: t1 } })
  ).json()) as { id: number }[];
  expect(inRange.length).toBeLessThan(100);
  expect(inRange[0].id).toBe(1);
  const chainRows = page.getByTestId('chain-list').locator('tbody tr');
  await expect(chainRows).toHaveCount(inRange.length);
  await expect(chainRows.last().locator('td').first()).toHaveText(String(inRange[inRange.length - 1].id));
  const first = page.getByTestId('chain-list').locator('tbody tr').first();
  await expect(first).toContainText('file_writer 3271');
  await expect(first).toContainText('2.30 s');
  await expect(first).toContainText('xfs_ilock via down_write');
  await expect(first).toHaveClass(/selected/);

  // The wait's row opens its link of the chain.
  await row.click();
  await expect(page).toHaveURL(/chain=1&link=1/);
  const detail = page.getByTestId('chain-detail');
  await expect(detail.getByRole('heading', { name: 'Chain #1' })).toBeVisible();
  // the path ends at the block request, a link to it (issue 25: one click from the worst stall)
  await expect(detail.getByTestId('chain-path')).toHaveText(
    'file_writer 3271 woken by file_reader 3274 woken by xfsconvertd/0 421 I/O completion xfslogd/0 419 · block request 8,0 WM 141698288 + 8 (4 KiB) →',
  );
  await expect(detail.getByRole('img', { name: 'Wait chain waterfall' }).locator('canvas').first()).toBeVisible();
  const l1 = detail.getByTestId('link-1');
  await expect(l1).toHaveClass(/selected/);
  await expect(l1).toContainText('xfs_ilock via down_write');
  await expect(l1).toContainText('2.30 s');
  await expect(l1).toContainText('woken by file_reader 3274');
  await expect(l1).toContainText('line 8656');
  const l2 = detail.getByTestId('link-2');
  await expect(l2).toContainText('2. file_reader 3274');
  await expect(l2).toContainText('xfs_ilock via down_read');
  await expect(l2).toContainText('2.35 s');
  await expect(l2).toContainText('woken by xfsconvertd/0 421');
  const l3 = detail.getByTestId('link-3');
  await expect(l3).toContainText('3. xfsconvertd/0 421');
  await expect(l3).toContainText('xfs_buf_lock via down');
  await expect(l3).toContainText('3.72 s');
  await expect(l3).toContainText('I/O completion xfslogd/0 419');
  await expect(detail.getByTestId('waker-stack-3')).toContainText('xfs_buf_iodone_work');
  await expect(detail.getByTestId('link-4')).toContainText('running: the end of the chain');

  // Follow the chain: the buffer lock's link, its task's calls, then the block request it waited for.
  await l3.getByRole('button', { name: /xfsconvertd\/0 421/ }).click();
  await expect(page).toHaveURL(/chain=1&link=3/);
  await expect(l3).toHaveClass(/selected/);
  await expect(page.getByTestId('calls-panel')).toContainText('Calls of xfsconvertd/0 421');
  const req = l3.getByTestId('request-link');
  await expect(req).toHaveText('8,0 WM 141698288 + 8 (4 KiB) by xfsaild/sda1 · D2C 5.62 ms → open in Dispatch');
  await expect(l3).toContainText('incident.blkparse.txt line 4069');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'incident-chain.png'), fullPage: true });
  await req.click();

  // The request's detail in Dispatch: the metadata write of xfsaild, 3.72 s between insert and dispatch.
  await expect(tabs.getByRole('tab', { name: 'Dispatch' })).toHaveAttribute('aria-selected', 'true');
  await expect(page).toHaveURL(/tab=dispatch&.*req=\d+%3A4069/);
  await expect(chip).toContainText(chipText); // the time range stays, shown once, above the tab's charts
  await expect(page.getByText(/^time range /)).toHaveCount(1);
  const latency = page.getByRole('img', { name: 'I2D and D2C latency over time' });
  // above the charts in the page's order (the request detail is scrolled into view, so compare the document's
  // order, not positions on the screen)
  const chipFirst = await chip.evaluate(
    (c, chart) => !!chart && !!(c.compareDocumentPosition(chart) & Node.DOCUMENT_POSITION_FOLLOWING),
    await latency.elementHandle(),
  );
  expect(chipFirst).toBe(true);
  const rd = page.getByTestId('request-detail');
  await expect(rd).toContainText('incident.blkparse.txt line 4069');
  await expect(rd).toContainText('Device 8,0');
  await expect(rd).toContainText('Sector 141698288 + 8 (4 KiB)');
  await expect(rd).toContainText('RWBS WM');
  await expect(rd).toContainText('Process 804 xfsaild/sda1');
  await expect(rd).toContainText('Remapped from 8,1 141696240');
  await expect(rd.getByRole('img', { name: 'Request phases waterfall' }).locator('canvas').first()).toBeVisible();
  await expect(rd.locator('.phase-chip.i2d')).toHaveText('I2D 3.72 s');
  await expect(rd.locator('.phase-chip.d2c')).toHaveText('D2C 5.62 ms');
  // Q → G → I → D → C (after the remap A), with their trace lines; D 3.72 s after I.
  const events = rd.getByTestId('request-events').locator('tbody tr');
  await expect(events).toHaveCount(6);
  const actions = ['A', 'Q', 'G', 'I', 'D', 'C'];
  const lines = [4069, 4070, 4071, 4072, 7204, 7205];
  for (let i = 0; i < 6; i++) {
    await expect(events.nth(i).locator('td').nth(0)).toHaveText(String(lines[i]));
    await expect(events.nth(i).locator('td').nth(4)).toHaveText(actions[i]);
  }
  await expect(events.nth(3).locator('td').nth(1)).toHaveText('+9.062189 s');
  await expect(events.nth(4).locator('td').nth(1)).toHaveText('+12.780581 s');
  await expect(events.nth(4).locator('td').nth(2)).toHaveText('+3.72 s');
  // the comm of the process column is whole (not cut by the panel's edge)
  const proc = events.nth(1).locator('td').nth(5);
  await expect(proc).toHaveText('804 xfsaild/sda1');
  const procBox = (await proc.boundingBox())!;
  const tableBox = (await rd.getByTestId('request-events').locator('..').boundingBox())!;
  expect(procBox.x + procBox.width).toBeLessThanOrEqual(tableBox.x + tableBox.width);
  // CFQ logged 1509 messages while it waited: 500 of them spread over the whole wait, then all on demand
  const note = rd.getByTestId('messages-note');
  await expect(note).toContainText('500 of 1,509 scheduler messages shown, spread evenly over the whole wait');
  const messages = rd.getByTestId('request-messages').locator('tbody tr');
  await expect(messages).toHaveCount(500);
  await expect(messages.last().locator('td').first()).toHaveText('7203'); // the last one, just before D
  await expect(rd.getByTestId('request-messages')).toContainText('cfq2210SN / preempt');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'incident-request.png'), fullPage: true });
  await note.getByRole('button', { name: 'Show all 1,509' }).click();
  await expect(messages).toHaveCount(1509);
  await expect(note).toHaveCount(0);
  await expect(rd.getByRole('heading', { name: /Scheduler messages while it waited/ })).toContainText('(1,509)');

  // Sources: the ftrace capture was placed on the blktrace's clock by matching its block events.
  await tabs.getByRole('tab', { name: 'Sources' }).click();
  await expect(page).toHaveURL(/tab=sources/);
  const ftrace = page.getByRole('group', { name: 'Clock of incident.trace-cmd-report.txt' });
  const blk = page.getByRole('group', { name: 'Clock of incident.blkparse.txt' });
  await expect(blk).toContainText('offset 0.000000000 s');
  await expect(blk).toContainText('reference clock');
  await expect(ftrace).toContainText('matched block events');
  await expect(ftrace).toContainText('clock mono');
  await expect(ftrace.locator('[data-testid^="alignment-"]')).toHaveText(MATCHED);
  const offsetText = (await ftrace.locator('[data-testid^="offset-"]').textContent())!;
  const offset = secondsTextToNs(offsetText);
  expect(Math.abs(offset - TRUE_OFFSET_NS)).toBeLessThanOrEqual(10_000);
  await expect(ftrace.getByRole('textbox')).toHaveValue(offsetText.replace(/ s$/, ''));
  // each file's SHA-256, as sha256sum would print it (the first 12 hex digits, the whole in the tooltip)
  for (const f of DEMO_FILES) {
    const digest = createHash('sha256').update(fs.readFileSync(f)).digest('hex');
    const cell = page.getByRole('row', { name: new RegExp(path.basename(f).replace(/\./g, '\\.')) }).locator('[data-testid^="sha256-"]');
    await expect(cell).toHaveText(`${digest.slice(0, 12)}…`);
    await expect(cell).toHaveAttribute('title', `SHA-256 of the file as read: ${digest}`);
  }
  await page.screenshot({ path: path.join(SCREENSHOTS, 'incident-sources.png'), fullPage: true });

  // The link opens the same view in a fresh browser: Sources with that offset, the time range, and the
  // chain, link, box and request chosen on the way (each tab shows its part).
  const { link, other: p2 } = await copyLinkAndOpenElsewhere(page, browser);
  expect(link).toMatch(/tab=sources/);
  expect(link).toMatch(new RegExp(`t0=${t0}&t1=${t1}`));
  const tabs2 = p2.getByRole('tablist');
  await expect(tabs2.getByRole('tab', { name: 'Sources' })).toHaveAttribute('aria-selected', 'true');
  const ftrace2 = p2.getByRole('group', { name: 'Clock of incident.trace-cmd-report.txt' });
  await expect(ftrace2.locator('[data-testid^="offset-"]')).toHaveText(offsetText);
  await expect(ftrace2).toContainText('matched block events');
  await expect(ftrace2.locator('[data-testid^="alignment-"]')).toHaveText(MATCHED);
  await expect(p2.getByTestId('time-range')).toHaveCount(0); // the sources are not filtered by it: no chip here
  await tabs2.getByRole('tab', { name: 'Dispatch' }).click();
  await expect(p2.getByTestId('time-range')).toContainText(chipText);
  await expect(p2.getByTestId('request-detail').locator('.phase-chip.i2d')).toHaveText('I2D 3.72 s');
  await expect(p2.getByTestId('request-detail')).toContainText('Process 804 xfsaild/sda1');
  await tabs2.getByRole('tab', { name: 'Stalls' }).click();
  await expect(p2.getByTestId('chain-list').locator('tr.selected')).toContainText('file_writer 3271');
  await expect(p2.getByTestId('chain-detail').getByTestId('link-3')).toHaveClass(/selected/);
  await expect(p2.getByTestId('calls-panel')).toContainText('Calls of xfsconvertd/0 421');
  const row2 = p2.getByTestId('stalls-heatmap').getByTestId('heatmap-events-table').locator('tbody tr');
  await expect(row2).toHaveCount(1);
  await expect(row2).toContainText('file_writer 3271');
  await expect(p2.getByTestId('time-range')).toContainText(chipText);
  await p2.context().close();
});

test("Off-CPU's lock frame lists the waits on exactly that lock (the semaphore's down, not down_read or down_write)", async ({
  page,
  request,
}) => {
  test.setTimeout(180_000);
  await ensureDemo(request);
  await page.goto('/');
  await page.getByTestId('analyses').getByRole('link', { name: DEMO_NAME }).first().click();
  await page.getByRole('tablist').getByRole('tab', { name: 'Off-CPU' }).click();
  // frames are listed by the lock of /api/locks they take: down and __down are the semaphore
  const row = page.getByTestId('lock-frames').locator('tbody tr').filter({ has: page.getByText('semaphore', { exact: true }) });
  await expect(row).toHaveCount(1);
  await expect(page.getByTestId('lock-frames').getByText('down', { exact: true })).toHaveCount(0);
  // the button says what it lists: xfsconvertd's one wait on the buffer's semaphore, 3.72 s
  await expect(row.getByRole('button', { name: 'Waits on this lock (1, 3.72 s in all)' })).toBeVisible();
  await row.getByRole('button', { name: 'Waits on this lock' }).click();
  await expect(page).toHaveURL(/tab=stalls&lock_key=semaphore(&|$)/);
  const waits = page.getByTestId('waits-panel');
  await expect(waits.locator('.chip')).toHaveText(/on lock “semaphore”/);
  const rows = waits.getByTestId('waits-table').locator('tbody tr');
  await expect(rows).toHaveCount(1); // xfsconvertd's buffer lock; the ilock's down_read and down_write are not it
  await expect(rows).toContainText('xfsconvertd/0 421');
  await expect(rows).toContainText('xfs_buf_lock via down');
  // typed text is still searched in the label: all three
  await waits.getByLabel('Filter waits by lock').fill('down');
  await waits.getByLabel('Filter waits by lock').press('Enter');
  await expect(page).toHaveURL(/lock=down(&|$)/);
  await expect(page).not.toHaveURL(/lock_key=/);
  await expect(rows).toHaveCount(3);
  await expect(waits.locator('.chip')).toHaveText(/whose lock contains “down”/);
});

type FlameNode = { name: string; lock?: string; children?: FlameNode[] };

test("the flame graph's xfs_ilock_map_shared frame: its tooltip leads to the inode lock's waits in the time range", async ({
  page,
  request,
}) => {
  test.setTimeout(180_000);
  await ensureDemo(request);
  const demo = ((await (await request.get('/api/analyses')).json()) as Analysis[]).find((a) => a.name === DEMO_NAME)!;
  // the two waits on the inode lock (tests/test_incident.py): file_reader's (down_read, through
  // xfs_ilock_map_shared) began first, file_writer's (down_write) 47.6 ms later; both end together
  const ilock = (await (await request.get(`/api/analyses/${demo.id}/waits?lock_key=xfs_ilock`)).json()) as { comm: string; start_ns: number }[];
  const [reader, writer] = [...ilock].sort((a, b) => a.start_ns - b.start_ns);
  expect([reader.comm, writer.comm]).toEqual(['file_reader', 'file_writer']);
  const [t0, t1] = [reader.start_ns, writer.start_ns - 1]; // the reader's wait overlaps it, the writer's not

  // Off-CPU with that time range, the graph cut to the stacks through xfs_ilock_map_shared: one stack, every
  // frame the whole width, one row per frame (rows as charts/flame.ts lays them out)
  const q = 'xfs_ilock_map_shared';
  const graph = (await (await request.get(`/api/analyses/${demo.id}/flamegraph?filter=${q}`)).json()) as { root: FlameNode };
  const chain: FlameNode[] = [graph.root];
  while (chain[chain.length - 1].children?.length) chain.push(chain[chain.length - 1].children![0]);
  const depth = chain.findIndex((n) => n.name === q);
  expect(chain[depth].lock).toBe('xfs_ilock'); // marked with the lock it takes, as the waits name it
  // the tooltip reads the waits' counts when it is shown: hover once they are in
  const counted = page.waitForResponse((r) => r.url().includes('/waits/by-lock'));
  await page.goto(`/a/${demo.id}?tab=offcpu&t0=${t0}&t1=${t1}&fg_q=${q}`);
  const flame = page.getByRole('img', { name: 'Off-CPU flame graph' });
  await expect(flame.locator('canvas').first()).toBeVisible();
  await counted;
  // the graph may be taller than the window: bring the frame's row into view, then hover it
  const rowY = (h: number) => ((depth + 0.5) * h) / chain.length;
  const before = (await flame.boundingBox())!;
  await page.evaluate((y) => window.scrollBy(0, y), before.y + rowY(before.height) - 300);
  const box = (await flame.boundingBox())!;
  await page.mouse.move(box.x + box.width / 2, box.y + rowY(box.height));
  const link = page.getByTestId('tooltip-waits-link');
  await expect(link).toBeVisible();
  await expect(link.locator('xpath=..')).toContainText(`${q}`);
  await expect(link).toContainText('1 wait on this lock'); // in the time range, as the list it leads to
  const href = (await link.getAttribute('href'))!;
  const params = new URLSearchParams(href.slice(1));
  expect([params.get('tab'), params.get('lock_key'), params.get('t0'), params.get('t1')]).toEqual(['stalls', 'xfs_ilock', `${t0}`, `${t1}`]);
  await link.click();

  await expect(page.getByRole('tablist').getByRole('tab', { name: 'Stalls' })).toHaveAttribute('aria-selected', 'true');
  await expect(page.getByTestId('time-range')).toContainText(`time range +${(t0 / 1e9).toFixed(6)} s`);
  const waits = page.getByTestId('waits-panel');
  await expect(waits.locator('.chip')).toHaveText(/on lock “xfs_ilock”/);
  const rows = waits.getByTestId('waits-table').locator('tbody tr');
  await expect(rows).toHaveCount(1); // in the time range: the reader's wait only, the writer's began after it
  await expect(rows).toContainText('file_reader 3274');
  await expect(rows).toContainText('xfs_ilock via down_read');
  // the whole analysis: both waits on the inode lock
  await page.getByLabel('Clear the time range').click();
  await expect(page).not.toHaveURL(/t0=/);
  await expect(rows).toHaveCount(2);
});
