// Issue 25: a timeline and navigation that Perfetto and KernelShark users feel at home in. Each path is walked as a
// new user would, at 1600×1000: what a click opens must be in the viewport (its box checked), without scrolling.
import { expect, test, type APIRequestContext, type Page } from '@playwright/test';
import path from 'node:path';
import { PUBLIC, REPO, SCREENSHOTS, needsPublic } from './paths';
import { analysis as upload, expectInView, file, INCIDENT } from './walks';

test.use({ viewport: { width: 1600, height: 1000 } });

const HADOOP = path.join(PUBLIC, 'blkparse-text/derived-zzunny97-hadoop-sdb-cpu0-1.blkparse.txt');
const SEED_OFFCPU = path.join(REPO, 'samples/xfs-open-stall.offcputime.txt');
const CFQ_DEMO = path.join(REPO, 'samples/demo-cfq-starvation.blkparse.txt');
const SCHED_SWITCH = path.join(PUBLIC, 'trace-cmd-report/derived-elainecole-report-sched_switch.txt');
const RECORD_TGID = path.join(PUBLIC, 'ftrace-funcgraph/langraph-tracefs-events-record-tgid.log');

/** An analysis of these files (made once per run, through the API). */
const analysis = (request: APIRequestContext, name: string, paths: string[]) => upload(request, name, paths.map(file));

const scrollY = (page: Page) => page.evaluate(() => window.scrollY);

test('from the worst stall to its block request in one click, the request in view', async ({ page, request }) => {
  const id = await analysis(request, 'nav incident', INCIDENT);
  await page.goto(`/a/${id}`);
  // Stalls opens on the worst chain; its path ends at the block request, in view without scrolling
  const link = page.getByTestId('chain-detail').getByTestId('chain-request');
  await expect(link).toContainText('8,0 WM 141698288 + 8');
  await expectInView(page, link);
  expect(await scrollY(page)).toBe(0);
  await link.click();
  await expect(page.getByRole('tablist').getByRole('tab', { name: 'Dispatch' })).toHaveAttribute('aria-selected', 'true');
  const detail = page.getByTestId('request-detail');
  await expect(detail).toContainText('141698288');
  await expectInView(page, detail);
  await page.screenshot({ path: path.join(SCREENSHOTS, 'nav-stall-to-request.png') });

  // the link card's "→ open in Dispatch", far down the Stalls page, lands the same way
  await page.goBack();
  const card = page.getByTestId('chain-detail').getByTestId('request-link');
  await card.scrollIntoViewIfNeeded();
  await card.click();
  await expectInView(page, page.getByTestId('request-detail'));
});

test('a flame frame pins its details; its lock leads to the waits on it, in view', async ({ page, request }) => {
  const id = await analysis(request, 'nav incident', INCIDENT);
  const q = 'xfs_ilock_map_shared';
  await page.goto(`/a/${id}?tab=offcpu&fg_q=${q}`);
  const flame = page.getByRole('img', { name: 'Off-CPU flame graph' });
  await expect(flame.locator('canvas').first()).toBeVisible();
  // the stacks through the frame, every frame the whole width: the frame's row, as charts/flame.ts lays it out
  const graph = (await (await request.get(`/api/analyses/${id}/flamegraph?filter=${q}`)).json()) as { root: { name: string; children?: unknown[] } };
  type N = { name: string; children?: N[] };
  const chain: N[] = [graph.root as N];
  while (chain[chain.length - 1].children?.length) chain.push(chain[chain.length - 1].children![0]);
  const depth = chain.findIndex((n) => n.name === q);
  const box = (await flame.boundingBox())!;
  await page.mouse.click(box.x + box.width / 2, box.y + depth * 18 + 9); // ROW_PX = 18
  const frame = page.getByTestId('frame-detail');
  await expect(frame).toContainText(q);
  await expect(frame).toContainText('xfs_ilock');
  await expectInView(page, frame);
  await frame.getByRole('button', { name: /Waits on this lock/ }).click();
  const waits = page.getByTestId('waits-panel');
  await expect(waits.locator('.chip')).toHaveText(/on lock “xfs_ilock”/);
  await expectInView(page, waits);
});

test('timeline: a wait clicked opens its details in view, M measures it, its chain only is drawn', async ({ page, request }) => {
  const id = await analysis(request, 'nav incident', INCIDENT);
  const waits = (await (await request.get(`/api/analyses/${id}/waits?lock_key=xfs_ilock`)).json()) as {
    comm: string; pid: number; source_id: number; start_ns: number; end_ns: number; duration_ns: number;
  }[];
  const w = waits.find((x) => x.comm === 'file_writer')!;
  const pad = Math.round(w.duration_ns / 2);
  await page.goto(`/a/${id}?tab=timeline&v0=${w.start_ns - pad}&v1=${w.end_ns + pad}`);
  const view = page.getByTestId('timeline-view');
  await expect(view.getByTestId('timeline-window')).toContainText(/\(4\.6\d s\)/);
  // no chain selected: no arrows across the lanes
  await expect(view.locator('.timeline-foot')).toContainText('chain arrows: click a wait');
  // the wait: the middle of its slice, in its lane (the wait band: 3 px under the lane's top, 16 px tall)
  const lane = view.locator(`[data-lane="task:${w.source_id}:${w.pid}"]`);
  const lb = (await lane.boundingBox())!;
  const plot = (await view.locator('.timeline-plot').boundingBox())!;
  const x = plot.x + 8 + ((w.start_ns + w.duration_ns / 2 - (w.start_ns - pad)) / (w.duration_ns + 2 * pad)) * (plot.width - 8 - 16);
  await page.mouse.click(x, lb.y + 3 + 8);
  const drawer = page.getByTestId('timeline-selected');
  await expect(drawer).toContainText('file_writer (3271): wait in xfs_ilock');
  await expectInView(page, drawer);
  await expect(page).toHaveURL(/chain=1/);
  await expect(view.locator('.timeline-foot')).toContainText("chain #1's");
  await expect(drawer).toContainText('Chain #1');
  // M: measure the selected wait
  await page.keyboard.press('m');
  await expect(view.getByTestId('measure')).toHaveText(/Δt 2\.30 s/);
  await page.screenshot({ path: path.join(SCREENSHOTS, 'nav-timeline-measure.png') });
  // the drawer's request button: the chain's block request, in view
  await drawer.getByTestId('drawer-request').click();
  await expectInView(page, page.getByTestId('request-detail'));
  // Esc clears the selection and the measurement
  await page.goBack();
  await expect(drawer).toBeVisible();
  await page.keyboard.press('Escape');
  await expect(drawer).toHaveCount(0);
  await expect(view.getByTestId('measure')).toHaveCount(0);
});

test('timeline ruler: distinct labels at every zoom; Shift+drag measures; the track tree folds, pins, finds', async ({ page, request }) => {
  const id = await analysis(request, 'nav incident', INCIDENT);
  // a 242 ms window at +10.85 s: the axis once printed "+10.9 s" four times
  await page.goto(`/a/${id}?tab=timeline&v0=10850000000&v1=11092000000`);
  const view = page.getByTestId('timeline-view');
  const ticks = view.getByTestId('timeline-ticks').locator('.tick');
  const distinct = async () => {
    await expect(ticks.nth(2)).toBeVisible();
    const labels = await ticks.allTextContents();
    expect(labels.length).toBeGreaterThanOrEqual(3);
    expect(new Set(labels).size).toBe(labels.length);
    return labels;
  };
  expect(await distinct()).toContain('+10.90 s');
  // W all the way down to nanoseconds: still distinct, and precise
  await page.mouse.move(10, 10);
  // (under load a key may land while the previous zoom is drawn: press on until the smallest window)
  const windowText = view.getByTestId('timeline-window');
  for (let i = 0; i < 80 && !((await windowText.textContent()) ?? '').includes('(50 ns)'); i++) await page.keyboard.press('w');
  await expect(windowText).toContainText('(50 ns)');
  await expect(ticks.first()).toHaveText(/^\+10\.97[01] \d{3} \d{2,3} s$/); // to 10 ns or 1 ns
  await distinct();

  // the pointer's time, then Shift+drag: a measurement, not a time range
  await page.goto(`/a/${id}?tab=timeline`);
  const plot = (await view.locator('.timeline-plot').boundingBox())!;
  await page.mouse.move(plot.x + plot.width * 0.3, plot.y + 60);
  await expect(view.getByTestId('cursor-readout')).toHaveText(/^\+\d+\.\d{6} s$/); // as the ruler, from the start
  await page.keyboard.down('Shift');
  await page.mouse.down();
  await page.mouse.move(plot.x + plot.width * 0.55, plot.y + 60, { steps: 4 });
  await page.mouse.up();
  await page.keyboard.up('Shift');
  await expect(view.getByTestId('measure')).toHaveText(/Δt [\d.]+ s/);
  await expect(page).toHaveURL(/tl_mark=\d+_\d+/);
  await expect(page).not.toHaveURL(/t0=/);

  // the tree: a group folds; a lane pins to the top; a search keeps the lanes that match
  const tree = view.getByTestId('track-tree');
  const header = tree.locator('.timeline-header').first();
  await expect(header).toHaveAttribute('aria-expanded', 'true');
  await page.getByLabel('Find tracks').fill('xfslogd');
  await expect(tree.locator('.timeline-label')).toHaveCount(1);
  await expect(tree.locator('.timeline-label')).toHaveText('xfslogd/0 (419)');
  await page.getByLabel('Find tracks').fill('');
  await expect(tree.locator('[data-lane^="task:"]').first()).toHaveText('file_writer (3271)');
  await tree.getByRole('button', { name: 'Pin xfslogd/0 (419) to the top' }).click();
  await expect(tree.locator('.timeline-header').first()).toContainText('Pinned');
  await expect(tree.locator('.timeline-label').first()).toHaveText('xfslogd/0 (419)');
  await tree.locator('.timeline-header', { hasText: 'ftrace' }).filter({ hasNotText: 'CPUs' }).click();
  await expect(page).toHaveURL(/tl_fold=src/);
  await expect(tree.locator('[data-lane^="task:"]')).toHaveCount(1); // the pinned one
  await page.screenshot({ path: path.join(SCREENSHOTS, 'nav-timeline-tree.png') });
  // every chain's arrows, on a toggle
  // a controlled checkbox (its state is the URL's): click, then wait for the new state (check() wants it at once)
  await view.getByTestId('all-arrows').click();
  await expect(view.getByTestId('all-arrows')).toBeChecked();
  await expect(view.locator('.timeline-foot')).toContainText(/\d+ chain arrows/);
});

test('CPU tracks: what ran on each CPU of a real capture, a group of their own that folds and is searched', async ({ page, request }) => {
  needsPublic();
  // trace-cmd report of sched_switch on a 4-CPU desktop (shared/samples-public/trace-cmd-report/SOURCES.md)
  const id = await analysis(request, 'nav sched_switch', [SCHED_SWITCH]);
  await page.goto(`/a/${id}?tab=timeline`);
  const view = page.getByTestId('timeline-view');
  const tree = view.getByTestId('track-tree');
  const cpus = tree.locator('.timeline-header', { hasText: 'CPUs' });
  await expect(cpus).toContainText('(4)');
  await expect(tree.locator('[data-lane^="cpu:"]')).toHaveText(['CPU 0', 'CPU 1', 'CPU 2', 'CPU 3']);
  // the CPUs on top, as in Perfetto and KernelShark, then the source's task lanes
  await expect(tree.locator('.timeline-header').first()).toContainText('CPUs');
  await expect(tree.locator('.timeline-label').first()).toHaveText('CPU 0');
  // each slice is the task that ran: a click on CPU 0's lane opens it in the drawer, named by its comm
  const lane = (await tree.locator('[data-lane$=":0"][data-lane^="cpu:"]').boundingBox())!;
  const plot = (await view.locator('.timeline-plot').boundingBox())!;
  await expect(view.locator('[aria-label="Analysis timeline"]')).toHaveAttribute('data-ready', '1');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'timeline-cpu-tracks.png') });
  let opened = false;
  for (const f of [0.5, 0.3, 0.7, 0.1, 0.9]) {
    await page.mouse.click(plot.x + plot.width * f, lane.y + lane.height / 2);
    if (await page.getByTestId('timeline-selected').locator('h3', { hasText: /^CPU 0: .+ running$/ }).isVisible()) {
      opened = true;
      break;
    }
  }
  expect(opened).toBe(true);
  // the group folds (in the URL) and the search finds a CPU by name
  await cpus.click();
  await expect(page).toHaveURL(/tl_fold=cpus%3A\d+|tl_fold=cpus:\d+/);
  await expect(tree.locator('[data-lane^="cpu:"]')).toHaveCount(0);
  await cpus.click();
  await page.getByLabel('Find tracks').fill('cpu 2');
  await expect(tree.locator('.timeline-label')).toHaveText(['CPU 2']);
});

test("a process' threads nest under it (record-tgid): fold it, find it by its pid", async ({ page, request }) => {
  needsPublic();
  // tracefs events with record-tgid: kernelshark (154961) and its threads (shared/samples-public/ftrace-funcgraph)
  const id = await analysis(request, 'nav record-tgid', [RECORD_TGID]);
  await page.goto(`/a/${id}?tab=timeline&tl_n=200`);
  const tree = page.getByTestId('timeline-view').getByTestId('track-tree');
  const proc = tree.locator('.timeline-header.nested', { hasText: 'kernelshark (154961)' });
  await expect(proc).toContainText(/· \d+ threads/);
  const threads = Number((await proc.textContent())!.match(/· (\d+) threads/)![1]);
  expect(threads).toBeGreaterThanOrEqual(2);
  await expect(tree.locator('.timeline-label.nested')).not.toHaveCount(0);
  await page.screenshot({ path: path.join(SCREENSHOTS, 'timeline-threads-nested.png') });
  await proc.click();
  await expect(page).toHaveURL(/tl_fold=proc/);
  await expect(proc).toHaveAttribute('aria-expanded', 'false');
  await proc.click();
  await page.getByLabel('Find tracks').fill('154961');
  await expect(tree.locator('.timeline-label')).toHaveCount(threads);
});

test('long tables: the first 20 rows, show all, a filter; the unnamed processes of a real capture as one row', async ({ page, request }) => {
  needsPublic();
  const id = await analysis(request, 'nav hadoop', [HADOOP]);
  await page.goto(`/a/${id}?tab=dispatch`);
  const table = page.getByTestId('summary-table');
  const group = table.locator('tbody tr.group-head');
  await expect(group).toContainText('188 unnamed processes');
  await expect(table.locator('tbody tr')).toHaveCount(20);
  const showAll = page.getByTestId('show-all');
  await expect(showAll).toContainText('the first 20 of 38 processes');
  await group.click();
  await expect(table.locator('tbody tr.member')).toHaveCount(188);
  await group.click();
  await showAll.getByRole('button', { name: 'Show all 38' }).click();
  await expect(table.locator('tbody tr')).toHaveCount(38);
  await page.getByLabel('Filter processes').fill('2554');
  await expect(table.locator('tbody tr')).toHaveCount(1);
  await expect(table.locator('tbody tr')).toContainText('2554 DataXceiver');
  // the slowest requests are no longer thousands of pixels down
  await page.getByLabel('Filter processes').fill('');
  const requests = page.getByTestId('requests-table');
  expect((await requests.boundingBox())!.y).toBeLessThan(3200);
  // a row of the requests table opens its detail, in view
  await requests.locator('tbody tr').first().click();
  await expectInView(page, page.getByTestId('request-detail'));
});

test('every view fits its data: an offcputime dump alone', async ({ page, request }) => {
  const id = await analysis(request, 'nav seed offcpu', [SEED_OFFCPU]);
  // a time range in the URL: Off-CPU has no timestamps, no chip
  await page.goto(`/a/${id}?t0=1&t1=2`);
  const tabs = page.getByRole('tablist');
  await expect(tabs.getByRole('tab', { name: 'Off-CPU' })).toHaveAttribute('aria-selected', 'true');
  await expect(tabs.getByRole('tab', { name: 'Timeline' })).toHaveCount(0); // nothing on a clock
  await expect(page.getByTestId('time-range')).toHaveCount(0);
  // no µs totals in this excerpt: the unit with data, and the graph drawn
  const unit = page.getByRole('group', { name: 'Unit' });
  await expect(unit.getByRole('button', { name: 'stacks' })).toHaveAttribute('aria-pressed', 'true');
  await expect(unit.getByRole('button', { name: 'µs off CPU' })).toBeDisabled();
  await expect(page.getByRole('img', { name: 'Off-CPU flame graph' }).locator('canvas').first()).toBeVisible();
  await expect(page.getByText('Nothing to draw')).toHaveCount(0);
});

test('a request row opens its detail in view; every row of the waits table is a link', async ({ page, request }) => {
  const id = await analysis(request, 'nav cfq', [CFQ_DEMO]);
  await page.goto(`/a/${id}?tab=dispatch`);
  await expect(page.getByTestId('requests-table')).toBeVisible();
  await page.getByTestId('requests-table').locator('tbody tr').nth(3).click();
  await expectInView(page, page.getByTestId('request-detail'));

  const inc = await analysis(request, 'nav incident', INCIDENT);
  await page.goto(`/a/${inc}?tab=stalls&idle=1`);
  const rows = page.getByTestId('waits-table').locator('tbody tr');
  await expect(rows.first()).toBeVisible();
  // a wait of a chain opens its link (the chain and the task's calls, in view)
  const inChain = rows.filter({ hasText: 'chain #1' }).first();
  await inChain.click();
  await expect(page).toHaveURL(/chain=\d+&link=\d/);
  await expectInView(page, page.getByTestId('calls-panel'));
  // another opens its evidence and stacks under it
  await page.goto(`/a/${inc}?tab=stalls&idle=1`);
  const other = rows.filter({ hasNotText: 'chain #' }).first();
  await other.click();
  const detail = page.getByTestId('wait-detail');
  await expect(detail).toContainText('Evidence');
  await expectInView(page, detail);
  await detail.getByRole('button', { name: 'Show on the timeline' }).click();
  await expect(page.getByTestId('timeline-selected')).toBeVisible();
});

test('a first view keeps every CPU track, says which lanes are hidden and finds a hidden one', async ({ page, request }) => {
  needsPublic();
  // the 4-CPU desktop capture has more tasks than 5 lanes: its CPUs are drawn all the same
  const id = await analysis(request, 'nav sched_switch', [SCHED_SWITCH]);
  await page.goto(`/a/${id}?tab=timeline&tl_n=5`);
  const view = page.getByTestId('timeline-view');
  const tree = view.getByTestId('track-tree');
  await expect(tree.locator('[data-lane^="cpu:"]')).toHaveText(['CPU 0', 'CPU 1', 'CPU 2', 'CPU 3']);
  await expect(tree.locator('[data-lane^="task:"]')).toHaveCount(5);
  // no record-tgid, no process events: the tasks are grouped as threads of an unknown process, which says how to know
  const unknown = tree.locator('.timeline-header.nested', { hasText: 'threads (process unknown)' });
  await expect(unknown).toHaveAttribute('title', /record-tgid/);
  const hidden = view.getByTestId('hidden-lanes');
  await expect(hidden).toContainText(/\d+ task and process lanes? hidden/);
  await expect(hidden).toContainText('every CPU, device and dump window is shown');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'timeline-hidden-lanes.png') });
  // a task ranked out of the first 5: the search asks the server for the lanes it ranks, and finds it
  const all = (await (await request.get(`/api/analyses/${id}/timeline?max_lanes=200`)).json()) as { lanes: { kind: string; pid: number | null; label: string }[] };
  const last = all.lanes.filter((l) => l.kind === 'task').pop()!;
  await expect(tree.locator(`[data-lane$=":${last.pid}"][data-lane^="task:"]`)).toHaveCount(0);
  await page.getByLabel('Find tracks').fill(String(last.pid));
  await expect(tree.locator(`[data-lane$=":${last.pid}"][data-lane^="task:"]`)).toHaveText(last.label);
  // "Show more" asks for 40 more lanes
  await page.getByLabel('Find tracks').fill('');
  await hidden.getByRole('button', { name: /Show \d+ more/ }).click();
  await expect(page).toHaveURL(/tl_n=45/);
});
