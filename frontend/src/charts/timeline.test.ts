import { describe, expect, it } from 'vitest';
import {
  GRID,
  decodeTimeline,
  describeItem,
  sceneHit,
  timelineScene,
  nameColor,
  panWindow,
  segmentBand,
  segmentColor,
  timelineItems,
  timelineLayout,
  laneMatches,
  labelFree,
  chainOfSegment,
  requestOfSegment,
  segmentLabel,
  waitName,
  beganBeforeCapture,
  keepLanesOutside,
  type TimelineSegment,
  zoomWindow,
  type Timeline,
  type TimelineLane,
} from './timeline';

const seg = (o: Partial<TimelineLane['segments'][number]>) => ({
  track: 'state',
  state: 'running',
  t0_ns: 100,
  t1_ns: 200,
  n: 1,
  max_ns: 100,
  source_id: 1,
  line: 10,
  depth: null,
  ...o,
});

const lane = (o: Partial<TimelineLane>): TimelineLane => ({
  id: 'task:1:42',
  kind: 'task',
  source_id: 1,
  label: 'postgres (42)',
  group: null,
  pid: 42,
  dev: null,
  why: '',
  segments: [],
  counter: null,
  band: null,
  ...o,
});

// the ext4 capture (tests/test_timeline.py), cut down: a task with calls, a device, a dump window
const T: Timeline = {
  t0_ns: 0,
  t1_ns: 1000,
  width_px: 100,
  bucket_ns: 10,
  total_lanes: 3,
  max_items: 12000,
  tracks: ['state', 'wait', 'call', 'queued', 'service'],
  lanes: [
    lane({
      segments: [
        seg({ track: 'wait', state: 'wait_transaction_locked', t0_ns: 100, t1_ns: 900, max_ns: 800, line: 45 }),
        seg({ track: 'call', state: 'ext4_file_write_iter', depth: 0, t0_ns: 90, t1_ns: 950, line: 31 }),
        seg({ track: 'call', state: 'start_this_handle', depth: 2, t0_ns: 95, t1_ns: 900, line: 40 }),
      ],
    }),
    lane({
      id: 'dev:2:8,0',
      kind: 'device',
      source_id: 2,
      label: '8,0 (device)',
      pid: null,
      dev: '8,0',
      segments: [seg({ track: 'service', state: 'service', t0_ns: 300, t1_ns: 880, source_id: 2, line: 6, n: 3, max_ns: 580 })],
      counter: { name: 'in flight', unit: 'requests', points: [[0, 0], [500, 2], [1000, 0]], max: 2 },
    }),
    lane({ id: 'window:3', kind: 'window', source_id: 3, label: 'capture window', pid: null, band: { t0_ns: 50, t1_ns: null } }),
  ],
  arrows: [{ chain_id: 1, relation: 'io_completion', from_lane: 'dev:2:8,0', to_lane: 'task:1:42', from_ns: 880, to_ns: 900, request: { source_id: 2, line: 6 } }],
  marks: [{ source_id: 1, line: 46, t_ns: 120, pid: 42, comm: 'postgres', text: 'checkpoint start' }],
};

describe('timeline layout', () => {
  const names: Record<number, string> = { 1: 'ftrace · a.txt', 2: 'blkparse · b.txt', 3: 'offcputime · c.txt' };
  const layout = timelineLayout(T, (id) => names[id]);

  it('groups lanes by source under a header, each with its height (calls add rows)', () => {
    const taskH = 30 + 3 * 15; // depths 0..2, 15 px a call row: its 10 px label fits
    // the task's process is not known (no tgid): it is under "threads (process unknown)", which says how to record it
    expect(layout.headers.map((h) => [h.label, h.y, h.key, h.lanes])).toEqual([
      ['ftrace · a.txt', 0, 'src:1', 1],
      ['threads (process unknown)', 18, 'noproc:1', 1],
      ['blkparse · b.txt', 36 + taskH + 2, 'src:2', 1],
      ['offcputime · c.txt', 36 + taskH + 2 + 18 + 40 + 2, 'src:3', 1],
    ]);
    expect(layout.headers[1].title).toContain('record-tgid');
    const task = layout.byId.get('task:1:42')!;
    expect([task.y, task.h, task.callDepth, task.nested]).toEqual([36, taskH, 3, true]);
    expect(layout.byId.get('dev:2:8,0')!.h).toBe(40);
    expect(layout.height).toBe(36 + taskH + 2 + 18 + 40 + 2 + 18 + 18 + 2);
  });

  it('orders the groups as Perfetto and KernelShark do: CPUs, tasks, block devices, dump windows', () => {
    // the server ranked the device and the dump window first (a chain's device, say)
    const cpu = lane({ id: 'cpu:1:0', kind: 'cpu', source_id: 1, label: 'CPU 0', pid: null, dev: '0' });
    const l = timelineLayout({ lanes: [T.lanes[2], T.lanes[1], T.lanes[0], cpu] }, (id) => names[id]);
    expect(l.headers.filter((h) => !h.nested).map((h) => h.key)).toEqual(['cpus:1', 'src:1', 'src:2', 'src:3']);
  });

  it('is a tree: pinned lanes on top, folded groups drawn as their header only, a search by name, pid or device', () => {
    const pinned = timelineLayout(T, (id) => names[id], { pinned: ['dev:2:8,0'], folded: ['src:1'] });
    expect(pinned.headers.map((h) => [h.key, h.folded, h.shown])).toEqual([
      ['pinned', false, 1],
      ['src:1', true, 0],
      ['src:3', false, 1],
    ]);
    expect(pinned.lanes.map((b) => [b.lane.id, b.pinned])).toEqual([
      ['dev:2:8,0', true],
      ['window:3', false],
    ]);
    expect(pinned.byId.has('task:1:42')).toBe(false);
    expect(timelineLayout(T, (id) => names[id], { query: '42' }).lanes.map((b) => b.lane.id)).toEqual(['task:1:42']);
    expect(timelineLayout(T, (id) => names[id], { query: '8,0' }).lanes.map((b) => b.lane.id)).toEqual(['dev:2:8,0']);
    expect(laneMatches(T.lanes[0], 'POSTGRES')).toBe(true);
  });

  it("draws a source's CPUs in a group of their own on top, each CPU's task over the whole lane in its colour", () => {
    const cpu = lane({
      id: 'cpu:1:3', kind: 'cpu', source_id: 1, label: 'CPU 3', group: 'CPUs', pid: null, dev: '3',
      segments: [seg({ state: 'jbd2/sda1-8', t0_ns: 10, t1_ns: 60, line: 105 })],
    });
    const withCpu = timelineLayout({ lanes: [T.lanes[0], cpu, ...T.lanes.slice(1)] }, (id) => names[id]);
    expect(withCpu.headers.filter((h) => !h.nested).map((h) => [h.key, h.label, h.lanes])).toEqual([
      ['cpus:1', 'CPUs · ftrace · a.txt', 1], // on top, as in Perfetto
      ['src:1', 'ftrace · a.txt', 1],
      ['src:2', 'blkparse · b.txt', 1],
      ['src:3', 'offcputime · c.txt', 1],
    ]);
    const box = withCpu.byId.get('cpu:1:3')!;
    expect(box.h).toBe(20);
    expect(segmentBand(box, cpu.segments[0])).toEqual([2, 16]);
    expect(segmentColor(cpu.segments[0], cpu)).toBe(nameColor('jbd2/sda1-8'));
    expect(describeItem({ kind: 'segment', lane: cpu, seg: cpu.segments[0] })).toContain('jbd2/sda1-8 ran');
    const folded = timelineLayout({ lanes: [T.lanes[0], cpu] }, (id) => names[id], { folded: ['cpus:1'] });
    expect(folded.lanes.map((b) => b.lane.id)).toEqual(['task:1:42']);
    expect(timelineLayout({ lanes: [T.lanes[0], cpu] }, (id) => names[id], { query: 'cpu 3' }).lanes.map((b) => b.lane.id)).toEqual(['cpu:1:3']);
  });

  it("nests a process' threads under it (foldable, searched by its pid); a process of one thread stays flat", () => {
    const t = (pid: number, tgid: number | null, label: string) => lane({ id: `task:1:${pid}`, pid, tgid, label: `${label} (${pid})` });
    const lanes = [t(154962, 154961, 'kshark:thr'), t(148213, 148213, 'bash'), t(154961, 154961, 'kernelshark'), t(77, null, 'kworker/0:2'), t(0, null, '<idle>')];
    const nested = timelineLayout({ lanes }, (id) => names[id]);
    expect(nested.headers.map((h) => [h.key, h.label, h.nested ?? false])).toEqual([
      ['src:1', 'ftrace · a.txt', false],
      ['proc:1:154961', 'kernelshark (154961) · 2 threads', true],
      ['noproc:1', 'threads (process unknown)', true], // its process not said; the idle task stays flat
    ]);
    expect(nested.lanes.map((b) => [b.lane.pid, b.nested ?? false])).toEqual([
      [154962, true],
      [154961, true],
      [148213, false],
      [77, true],
      [0, false],
    ]);
    const folded = timelineLayout({ lanes }, (id) => names[id], { folded: ['proc:1:154961', 'noproc:1'] });
    expect(folded.lanes.map((b) => b.lane.pid)).toEqual([148213, 0]);
    expect(folded.headers[1]).toMatchObject({ folded: true, lanes: 2, shown: 0 });
    expect(timelineLayout({ lanes }, (id) => names[id], { query: '154961' }).lanes.map((b) => b.lane.pid)).toEqual([154962, 154961]);
  });

  it('labels only the slices no other slice of their row overlaps (requests in flight overlap)', () => {
    const dev = lane({
      id: 'dev:2:8,0', kind: 'device', source_id: 2, label: '8,0 (device)', pid: null, dev: '8,0',
      segments: [
        seg({ track: 'queued', state: 'queued', t0_ns: 0, t1_ns: 100, line: 1 }),
        seg({ track: 'queued', state: 'queued', t0_ns: 50, t1_ns: 150, line: 2 }),
        seg({ track: 'queued', state: 'queued', t0_ns: 200, t1_ns: 300, line: 3 }),
        seg({ track: 'service', state: 'service', t0_ns: 60, t1_ns: 90, line: 4 }),
      ],
    });
    const free = labelFree(timelineLayout({ lanes: [dev] }, () => 'b'));
    expect(dev.segments.filter((x) => free.has(x)).map((x) => x.line)).toEqual([3, 4]);
  });

  it('draws the arrows of the selected chain only, unless all are asked for', () => {
    expect(timelineItems(T, layout, { chain: null, all: false }).some((i) => i.kind === 'arrow')).toBe(false);
    expect(timelineItems(T, layout, { chain: 2, all: false }).some((i) => i.kind === 'arrow')).toBe(false);
    expect(timelineItems(T, layout, { chain: 1, all: false }).filter((i) => i.kind === 'arrow')).toHaveLength(1);
    expect(timelineItems(T, layout, { chain: null, all: true }).filter((i) => i.kind === 'arrow')).toHaveLength(1);
  });

  it('finds the chain of a slice (an arrow ends or starts in it) and the request of a block phase', () => {
    const task = T.lanes[0];
    const wait = task.segments[0]; // the arrow ends at 900, in this wait
    expect(chainOfSegment(T.arrows, task, wait)).toBe(wait.t0_ns <= 900 && wait.t1_ns >= 900 ? 1 : null);
    const dev = T.lanes[1];
    expect(chainOfSegment(T.arrows, dev, dev.segments[0])).toBe(1); // the arrow starts at 880, in this service
    expect(requestOfSegment(dev.segments[0])).toEqual({ sourceId: 2, line: 6 });
    expect(requestOfSegment(wait)).toBeNull();
  });

  it('places tracks inside a lane', () => {
    const task = layout.byId.get('task:1:42')!;
    expect(segmentBand(task, T.lanes[0].segments[0])).toEqual([3, 16]);
    expect(segmentBand(task, T.lanes[0].segments[2])).toEqual([22 + 2 * 15, 14]);
    expect(segmentBand(task, seg({}))).toEqual([task.h - 9, 7]);
  });

  it('lists bands, segments, arrows and marks as items, and describes them with units and lines', () => {
    const items = timelineItems(T, layout);
    expect(items.map((i) => i.kind)).toEqual(['band', 'segment', 'segment', 'segment', 'segment', 'arrow', 'mark']);
    const dev = items[4];
    expect(describeItem(dev)).toContain('3 merged, longest 580 ns');
    expect(describeItem(dev)).toContain('source 2, line 6');
    expect(describeItem(items[1])).toContain('wait in wait_transaction_locked');
    expect(describeItem(items[0])).toContain('length unknown');
    expect(describeItem(items[6])).toContain('checkpoint start');
  });

  it('draws the items as a scene: rects in draw order, a step line per counter, the selection, the print markers', () => {
    const items = timelineItems(T, layout);
    // 1000 ns over a plot of 1000 px: 1 px per ns
    const width = 1000 + GRID.left + GRID.right;
    const s = timelineScene(layout, items, { v0: 0, v1: 1000, selection: [200, 400], origin: 0, tickStep: 250 }, width);
    expect(s.plot).toEqual({ x: GRID.left, y: GRID.top, w: 1000, h: layout.height });
    expect(s.height).toBe(layout.height + GRID.top + GRID.bottom);
    expect(s.grid).toEqual([0, 250, 500, 750, 1000].map((t) => GRID.left + t));
    expect(s.selection).toMatchObject({ x: GRID.left + 200, w: 200, y: GRID.top, h: layout.height });
    // the band and the segments, each with the index of its item
    expect(s.rects.map((r) => r.item)).toEqual([0, 1, 2, 3, 4]);
    expect(s.arrows.map((a) => a.line.item)).toEqual([5]);
    expect(s.marks.map((m) => m.line.item)).toEqual([6]);
    // the marker: a line down the plot and a handle above it
    expect(s.marks[0].line).toMatchObject({ x1: GRID.left + 120, y1: GRID.top, y2: GRID.top + layout.height });
    expect(s.marks[0].head.points[2]).toEqual([GRID.left + 120, GRID.top]);
    const dev = layout.byId.get('dev:2:8,0')!;
    // in flight 0 at the bottom of the lane, the max 2 at its top (3 px margins)
    expect(s.steps[0].points[0]).toEqual([GRID.left, GRID.top + dev.y + dev.h - 3, 0]);
    expect(s.steps[0].points[1]).toEqual([GRID.left + 500, GRID.top + dev.y + 3, 2]);
    // a marker outside the window is not drawn
    expect(timelineScene(layout, items, { v0: 500, v1: 1000, selection: null, origin: 0 }, width).marks).toEqual([]);
  });

  it('labels a slice (elided to it) only when wider than 40 px; outlines the selected one', () => {
    const items = timelineItems(T, layout);
    const at = (pxPerNs: number, selected: number | null = null) =>
      timelineScene(layout, items, { v0: 0, v1: 1000, selection: null, origin: 0, selected }, 1000 * pxPerNs + GRID.left + GRID.right);
    const wide = at(1);
    // the device's service segments, 580 px wide: their duration, how many merged; the wait, 800 px
    expect(wide.labels.map((l) => l.text)).toEqual(expect.arrayContaining(['D→C 580 ns ×3', 'wait_transaction_locked']));
    expect(wide.labels.find((l) => l.text === 'wait_transaction_locked')!.w).toBe(794);
    // at 0.05 px per ns: 29 px for the service, 40 px for the wait: bare rects (the calls, 43 and 40.25 px, keep theirs)
    expect(at(0.05).labels.map((l) => l.text)).toEqual(['ext4_file_write_iter', 'start_this_handle']);
    expect(wide.rects.find((r) => r.item === 1)).toMatchObject({ opacity: 0.85 });
    expect(wide.rects.find((r) => r.item === 1)!.stroke).toBeUndefined();
    expect(at(1, 1).rects.find((r) => r.item === 1)).toMatchObject({ stroke: '#ffffff', lineWidth: 2, opacity: 1 });
  });

  it('finds what is under the pointer for tooltips and clicks: markers, arrows, counters, then the topmost slice', () => {
    const items = timelineItems(T, layout);
    const s = timelineScene(layout, items, { v0: 0, v1: 1000, selection: null, origin: 0 }, 1000 + GRID.left + GRID.right);
    const task = layout.byId.get('task:1:42')!;
    const dev = layout.byId.get('dev:2:8,0')!;
    // the wait (3 px under the lane's top, 16 px tall) at t = 500
    const wait = sceneHit(s, items, GRID.left + 500, GRID.top + task.y + 10)!;
    expect(wait.item).toBe(1);
    expect(wait.html).toContain('wait in wait_transaction_locked');
    // the marker's handle above the plot, and its line
    expect(sceneHit(s, items, GRID.left + 121, GRID.top - 4)!.item).toBe(6);
    // the counter's line: its value there
    const c = sceneHit(s, items, GRID.left + 600, GRID.top + dev.y + 3)!;
    expect(c.item).toBe(-1);
    expect(c.html).toContain('2 requests in flight');
    // the service slice under it, away from the line
    expect(sceneHit(s, items, GRID.left + 600, GRID.top + dev.y + dev.h - 6)!.item).toBe(4);
    // nothing: outside the plot, or between items
    expect(sceneHit(s, items, 2, GRID.top + 5)).toBeNull();
    expect(sceneHit(s, items, GRID.left + 990, GRID.top + task.y + 10)).toBeNull();
    // a trace's names are escaped in the tooltip
    const hostile = timelineItems({ ...T, marks: [{ ...T.marks[0], text: '<img src=x onerror=alert(1)>' }] }, layout);
    const hs = timelineScene(layout, hostile, { v0: 0, v1: 1000, selection: null, origin: 0 }, 1000 + GRID.left + GRID.right);
    expect(sceneHit(hs, hostile, GRID.left + 120, GRID.top - 4)!.html).toContain('&lt;img');
  });
});

describe('window arithmetic', () => {
  it('zooms around a point and stays inside the analysis', () => {
    const M = 1e6;
    expect(zoomWindow(0, 1000 * M, 0.5, 500 * M, 0, 1000 * M)).toEqual([250 * M, 750 * M]);
    expect(zoomWindow(0, 1000 * M, 0.5, 0, 0, 1000 * M)).toEqual([0, 500 * M]);
    expect(zoomWindow(250 * M, 750 * M, 4, 500 * M, 0, 1000 * M)).toEqual([0, 1000 * M]);
    expect(zoomWindow(0, 10_000, 1e-9, 5000, 0, 10_000)).toEqual([4975, 5025]); // never under 50 ns
  });

  it('pans by a fraction of the window, clamped', () => {
    expect(panWindow(200, 400, 0.5, 0, 1000)).toEqual([300, 500]);
    expect(panWindow(200, 400, -5, 0, 1000)).toEqual([0, 200]);
    expect(panWindow(800, 1000, 1, 0, 1000)).toEqual([800, 1000]);
  });

  it('colours a name the same way every time', () => {
    expect(nameColor('xfs_ilock')).toBe(nameColor('xfs_ilock'));
    expect(nameColor('xfs_ilock')).not.toBe(nameColor('xfs_buf_lock'));
    expect(nameColor('xfs_ilock')).toMatch(/^hsl\(\d+, 55%, 58%\)$/);
  });
});

describe('decodeTimeline', () => {
  it('turns the columns of each lane into items on the analysis timeline', () => {
    const wire = {
      t0_ns: 7341200000000,
      t1_ns: 7341215920058,
      width_px: 800,
      bucket_ns: 19901,
      total_lanes: 1,
      max_items: 12000,
      tracks: ['state', 'wait', 'call', 'queued', 'service'],
      arrows: [],
      marks: [],
      lanes: [
        {
          id: 'task:1:4242', kind: 'task' as const, source_id: 1, label: 'postgres (4242)', group: null, pid: 4242, dev: null,
          why: 'chain #1', bucket_ns: 19901, counter: null, band: null,
          segs: {
            states: ['wait_transaction_locked', 'ext4_file_write_iter'],
            track: [1, 2], state: [0, 1], t0: [1620000, 1000], t1: [14888000, 31000], n: [1, 1],
            max: [13268000, 30000], line: [45, 12], depth: [null, 0],
          },
        },
      ],
    };
    const t = decodeTimeline(wire);
    expect(t.lanes[0].segments).toEqual([
      { track: 'wait', state: 'wait_transaction_locked', t0_ns: 7341201620000, t1_ns: 7341214888000, n: 1,
        max_ns: 13268000, source_id: 1, line: 45, depth: null },
      { track: 'call', state: 'ext4_file_write_iter', t0_ns: 7341200001000, t1_ns: 7341200031000, n: 1, max_ns: 30000,
        source_id: 1, line: 12, depth: 0 },
    ]);
    expect('segs' in t.lanes[0]).toBe(false);
  });
});

describe('waits of no known lock', () => {
  it('are named "wait", never "?" (the server says "?" where Stalls says "—")', () => {
    const w = seg({ track: 'wait', state: '?' });
    expect(segmentLabel(w)).toBe('wait');
    expect(segmentLabel({ ...w, n: 3 })).toBe('wait ×3');
    expect(waitName(w)).toBe('wait (no known lock)');
    expect(waitName({ state: 'xfs_ilock' })).toBe('wait in xfs_ilock');
    // a call of unknown function keeps its "?" (its entry was not traced)
    expect(segmentLabel(seg({ track: 'call', state: '?' }))).toBe('?');
    const lane: TimelineLane = { id: 't', kind: 'task', label: 'flush-8:0 (498)', why: '', source_id: 1, pid: 498, group: null, dev: null, segments: [w] } as unknown as TimelineLane;
    expect(describeItem({ kind: 'segment', lane, seg: w })).toContain('wait (no known lock)');
  });
});

describe('a slice that began before its capture', () => {
  const seg = (over: Partial<TimelineSegment>): TimelineSegment =>
    ({ track: 'call', state: 'schedule_timeout', t0_ns: 1000, t1_ns: 1059, n: 1, max_ns: 19_354_027_000, line: 159, source_id: 1, depth: 2, ...over }) as TimelineSegment;
  const starts = new Map([[1, 1000]]);

  it('is a call or wait of one segment whose printed duration starts it before the first line', () => {
    expect(beganBeforeCapture(seg({}), starts)).toBe(true);
    expect(beganBeforeCapture(seg({ max_ns: 59 }), starts)).toBe(false); // entered at the first line
    expect(beganBeforeCapture(seg({ n: 3 }), starts)).toBe(false); // merged: the longest says nothing of this one
    expect(beganBeforeCapture(seg({ track: 'state' }), starts)).toBe(false);
    expect(beganBeforeCapture(seg({ source_id: 2 }), starts)).toBe(false);
  });

  it('says so on its label, not a bare name', () => {
    expect(segmentLabel(seg({}), true)).toBe('schedule_timeout · entered before the capture began');
    expect(segmentLabel(seg({ track: 'wait', state: '?' }), true)).toBe('wait · waiting since before the capture began');
    expect(segmentLabel(seg({}))).toBe('schedule_timeout');
  });
});

describe('lanes of a source the window has left', () => {
  const lane = (id: string, source_id: number, segments: TimelineLane['segments'] = []): TimelineLane =>
    ({ id, kind: 'task', source_id, label: id, group: null, pid: 1, dev: null, why: '', segments }) as TimelineLane;
  const spans = new Map<number, readonly [number, number]>([
    [1, [0, 100]],
    [2, [50, 400]],
  ]);
  const deep = [{ track: 'call', depth: 2 } as TimelineLane['segments'][number]];

  it('keeps them in their places, empty and as tall, while the window is past their source', () => {
    const prev = [lane('a', 1, deep), lane('b', 2), lane('c', 1)];
    const next = [lane('b', 2), lane('d', 2)];
    const out = keepLanesOutside(prev, next, spans, 200, 300);
    expect(out.map((l) => [l.id, !!l.outside])).toEqual([['a', true], ['b', false], ['c', true], ['d', false]]);
    expect(out[0].segments).toEqual([]);
    expect(out[0].callRows).toBe(3);
    // the window reaching past its source's end: kept too (the server dropped it, no events in the part inside)
    expect(keepLanesOutside(prev, next, spans, 90, 300).map((l) => l.id)).toEqual(['a', 'b', 'c', 'd']);
    // inside its source's span, a lane the server drops (ranked out) goes
    expect(keepLanesOutside(prev, next, spans, 10, 90).map((l) => l.id)).toEqual(['b', 'd']);
  });
});
