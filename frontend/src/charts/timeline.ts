// The analysis timeline: lanes of segments from the server (already aggregated per pixel), drawn on a 2D canvas
// (views/timeline/TimelineCanvas.tsx paints timelineScene: no chart library on this tab's path), y in px from the top
// of the plot, so lanes can have heights of their own. Pure: the layout and the scene depend only on the data, the
// window and the width.
import type { components } from '../api/schema';
import { ABSOLUTE_TIME, formatCount, formatNs, formatTime, type TimeBase } from '../lib/format';
import { html, tooltipLines } from './html';
import { C } from './theme';

/** The timeline as the API sends it: each lane's items as columns (compact: a response holds thousands). */
export type TimelineWire = components['schemas']['Timeline'];
type WireLane = components['schemas']['TimelineLane'];
/** One drawable item: a segment, or segments shorter than the lane's bucket merged (n > 1). */
export type TimelineSegment = {
  track: string;
  state: string;
  t0_ns: number;
  t1_ns: number;
  n: number;
  max_ns: number;
  source_id: number;
  line: number;
  depth: number | null;
};
// outside: kept from the previous response, its source having no events in the window (keepLanesOutside), with the
// call rows it had then (callRows), so that it keeps its height
export type TimelineLane = Omit<WireLane, 'segs'> & { segments: TimelineSegment[]; outside?: boolean; callRows?: number };
export type Timeline = Omit<TimelineWire, 'lanes'> & { lanes: TimelineLane[] };
export type TimelineArrow = components['schemas']['TimelineArrow'];

/** The API's columns turned into one object per item (times back on the analysis timeline). */
export function decodeTimeline(t: TimelineWire): Timeline {
  const base = t.t0_ns ?? 0;
  return {
    ...t,
    lanes: t.lanes.map(({ segs, ...lane }) => {
      const segments: TimelineSegment[] = [];
      if (segs) {
        for (let i = 0; i < segs.t0.length; i++) {
          segments.push({
            track: t.tracks[segs.track[i]] ?? 'state',
            state: segs.states[segs.state[i]] ?? '?',
            t0_ns: base + segs.t0[i],
            t1_ns: base + segs.t1[i],
            n: segs.n[i],
            max_ns: segs.max[i],
            source_id: lane.source_id,
            line: segs.line[i],
            depth: segs.depth[i] ?? null,
          });
        }
      }
      return { ...lane, segments };
    }),
  };
}

export const STATE_COLORS: Record<string, string> = {
  running: '#3fb950',
  runnable: '#d29922',
  blocked: '#4a5566',
  queued: C.i2d,
  service: C.d2c,
};
export const RELATION_COLORS: Record<string, string> = { woken_by: '#f2cc60', held_by: '#ff7b72', io_completion: '#58a6ff' };
const CALL_H = 15; // a call row: tall enough for its 10 px label (at 9 px the labels of two depths overlapped)
const HEADER_H = 18;

/** The lanes to draw for a response: its own, and, when the window reaches past a source's span (starts before it or
 * ends after it: the server returns only the lanes with events in the window, none once the window has left the
 * source), the lanes of that source the previous response had and this one has not, kept in their places, empty and
 * marked `outside`. Zooming or panning past a source's end used to drop its lanes: the canvas shrank under the
 * pointer. Inside a source's span its lanes come and go as the server ranks them. `spans`: each source's [start, end]
 * on the analysis timeline. */
export function keepLanesOutside(prev: TimelineLane[], next: TimelineLane[], spans: ReadonlyMap<number, readonly [number, number]>, v0: number, v1: number): TimelineLane[] {
  const fresh = new Map(next.map((l) => [l.id, l]));
  const left = (sid: number) => {
    const s = spans.get(sid);
    return s !== undefined && (s[0] > v0 || s[1] < v1);
  };
  const kept = prev.filter((l) => !fresh.has(l.id) && left(l.source_id));
  if (!kept.length) return next;
  const out: TimelineLane[] = [];
  for (const l of prev) {
    const now = fresh.get(l.id);
    if (now) out.push(now);
    else if (left(l.source_id))
      out.push({ ...l, segments: [], counter: null, outside: true, callRows: laneHeight(l).depth, why: 'no events in this window, which reaches past its source' });
  }
  const placed = new Set(out.map((l) => l.id));
  return [...out, ...next.filter((l) => !placed.has(l.id))];
}

/** A stable colour for a lock or function name (the same name is always the same colour). */
export function nameColor(name: string): string {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
  return `hsl(${h % 360}, 55%, 58%)`;
}

/** A lane where it is drawn; `nested`: a thread under its process' header. */
export type LaneBox = { lane: TimelineLane; y: number; h: number; callDepth: number; pinned: boolean; nested?: boolean };
/** A group's header: a source (or the pinned tracks, a source's CPUs), folded or not, with how many of its lanes
 * are drawn; `nested`: a process' header inside its source's group ("proc:<source>:<tgid>"), over its threads. */
export type Header = { label: string; y: number; key: string; folded: boolean; lanes: number; shown: number; nested?: boolean; title?: string };
export type Layout = { lanes: LaneBox[]; headers: Header[]; height: number; byId: Map<string, LaneBox> };
/** The track tree's state: lanes pinned to the top, groups folded (by key: "src:<id>", "cpus:<id>", "pinned",
 * "proc:<id>:<tgid>", "noproc:<id>"), a search of the labels. */
export type TreeState = { pinned?: string[]; folded?: string[]; query?: string | null };

function laneHeight(l: TimelineLane): { h: number; depth: number } {
  if (l.kind === 'window') return { h: 18, depth: 0 };
  if (l.kind === 'process') return { h: 26, depth: 0 };
  if (l.kind === 'device') return { h: 40, depth: 0 };
  if (l.kind === 'cpu') return { h: 20, depth: 0 };
  const depth = l.callRows ?? Math.max(-1, ...l.segments.filter((s) => s.track === 'call').map((s) => s.depth ?? 0)) + 1;
  return { h: 30 + depth * CALL_H, depth };
}

/** Does a lane match a search: its label (name and pid), its device, its group or its process' pid (tgid),
 * case-insensitively. */
export function laneMatches(l: Pick<TimelineLane, 'label' | 'group' | 'dev' | 'pid'> & { tgid?: number | null }, query: string): boolean {
  const q = query.trim().toLowerCase();
  if (!q) return true;
  return [l.label, l.group ?? '', l.dev ?? '', l.pid === null ? '' : String(l.pid), l.tgid == null ? '' : String(l.tgid)].some((x) =>
    x.toLowerCase().includes(q),
  );
}

/** A nested group of a source's tasks: a process' threads (same tgid), or the threads whose process the capture does
 * not say (tgid null: no record-tgid, no process events; key "noproc"). */
type Nest = { tgid: number | null; label: string; title: string; threads: TimelineLane[] };

/** Says a thread's process is unknown: a task lane of a real task (not the idle task, not a CPU's pseudo-task). */
const noProcess = (l: TimelineLane) => l.kind === 'task' && l.tgid == null && l.pid !== null && l.pid > 0;

/** A group's lanes with the threads of each process of several threads (same tgid) together under that process,
 * at the place of its first-ranked thread, and the threads of unknown process together under "threads (process
 * unknown)", at the place of the first of them; a process of one thread stays as it is. */
function nestThreads(lanes: TimelineLane[]): ({ lane: TimelineLane } | Nest)[] {
  const threads = new Map<number, TimelineLane[]>();
  for (const l of lanes) if (l.kind === 'task' && l.tgid != null) threads.set(l.tgid, [...(threads.get(l.tgid) ?? []), l]);
  const unknown = lanes.filter(noProcess);
  const out: ({ lane: TimelineLane } | Nest)[] = [];
  const done = new Set<number>();
  for (const l of lanes) {
    if (noProcess(l)) {
      if (l === unknown[0])
        out.push({
          tgid: null,
          label: 'threads (process unknown)',
          title: 'The capture does not say which process these threads belong to: record with trace-cmd record -O record-tgid (or echo 1 > options/record-tgid), or with the task_newtask and sched_process_exec events',
          threads: unknown,
        });
      continue;
    }
    const ts = l.kind === 'task' && l.tgid != null ? threads.get(l.tgid)! : null;
    if (!ts || ts.length < 2) out.push({ lane: l });
    else if (!done.has(l.tgid!)) {
      done.add(l.tgid!);
      const main = ts.find((x) => x.pid === l.tgid) ?? ts[0];
      const label = `${main.label.replace(/ \(\d+\)$/, '')} (${l.tgid}) · ${ts.length} threads`;
      out.push({ tgid: l.tgid!, label, title: `process ${l.tgid}: fold or unfold its threads`, threads: ts });
    }
  }
  return out;
}

/** Where a source's group is drawn, as in Perfetto and KernelShark: the CPUs on top, then the tasks (processes and
 * their threads), the block devices (and the processes issuing their requests), the offcputime windows. */
function groupRank(key: string, lanes: TimelineLane[]): number {
  if (key === 'pinned') return 0;
  if (key.startsWith('cpus:')) return 1;
  if (lanes.some((l) => l.kind === 'task')) return 2;
  if (lanes.some((l) => l.kind === 'device' || l.kind === 'process')) return 3;
  return 4;
}

/** The group a lane is drawn in (unless pinned): its source's CPUs ("cpus:<id>"), else its source ("src:<id>"). */
function groupOf(l: TimelineLane, sourceName: (id: number) => string): { key: string; label: string } {
  if (l.kind === 'cpu') return { key: `cpus:${l.source_id}`, label: `CPUs · ${sourceName(l.source_id)}` };
  return { key: `src:${l.source_id}`, label: sourceName(l.source_id) };
}

/** Lanes as a tree: the pinned ones first (in the order pinned), then each source's CPUs in a group of their own,
 * then the other lanes grouped by source (tasks' sources, then block devices', then offcputime windows'; in a group,
 * in the order the server ranked them, threads nested under their process), each group under a header that folds it;
 * each lane with its y and height in px. */
export function timelineLayout(t: Pick<Timeline, 'lanes'>, sourceName: (id: number) => string, tree: TreeState = {}): Layout {
  const pinned = tree.pinned ?? [];
  const folded = new Set(tree.folded ?? []);
  const shown = t.lanes.filter((l) => laneMatches(l, tree.query ?? ''));
  const groups = new Map<string, { label: string; lanes: TimelineLane[] }>();
  const pins = pinned.map((id) => shown.find((l) => l.id === id)).filter((l): l is TimelineLane => !!l);
  if (pins.length) groups.set('pinned', { label: 'Pinned', lanes: pins });
  for (const l of shown) {
    if (pinned.includes(l.id)) continue;
    const { key, label } = groupOf(l, sourceName);
    const g = groups.get(key) ?? { label, lanes: [] };
    g.lanes.push(l);
    groups.set(key, g);
  }
  // the groups in the order Perfetto and KernelShark users expect (groupRank), sources of one kind in the order of
  // their first lane (the server's rank)
  const ordered = [...groups].map(([key, g], i) => ({ key, g, rank: groupRank(key, g.lanes), i }));
  ordered.sort((a, b) => a.rank - b.rank || a.i - b.i);
  const lanes: LaneBox[] = [];
  const headers: Header[] = [];
  let y = 0;
  for (const { key, g } of ordered) {
    const isFolded = folded.has(key);
    headers.push({ label: g.label, y, key, folded: isFolded, lanes: g.lanes.length, shown: isFolded ? 0 : g.lanes.length });
    y += HEADER_H;
    if (isFolded) continue;
    const place = (lane: TimelineLane, nested: boolean) => {
      const { h, depth } = laneHeight(lane);
      lanes.push({ lane, y, h, callDepth: depth, pinned: key === 'pinned', ...(nested ? { nested } : {}) });
      y += h + 2;
    };
    for (const item of key === 'pinned' ? g.lanes.map((lane) => ({ lane })) : nestThreads(g.lanes)) {
      if ('lane' in item) {
        place(item.lane, false);
        continue;
      }
      const procKey = item.tgid === null ? `noproc:${item.threads[0].source_id}` : `proc:${item.threads[0].source_id}:${item.tgid}`;
      const procFolded = folded.has(procKey);
      headers.push({ label: item.label, title: item.title, y, key: procKey, folded: procFolded, lanes: item.threads.length, shown: procFolded ? 0 : item.threads.length, nested: true });
      y += HEADER_H;
      if (!procFolded) for (const lane of item.threads) place(lane, true);
    }
  }
  return { lanes, headers, height: Math.max(y, 40), byId: new Map(lanes.map((b) => [b.lane.id, b])) };
}

/** The chain a segment belongs to: the chain whose arrow ends in its lane within it (the wait the arrow explains),
 * or starts there (the waker, holder or device), else null. */
export function chainOfSegment(arrows: TimelineArrow[], lane: TimelineLane, seg: TimelineSegment): number | null {
  if (seg.track === 'state') return null;
  const slack = Math.max(1, (seg.t1_ns - seg.t0_ns) * 0.01);
  const within = (t: number) => t >= seg.t0_ns - slack && t <= seg.t1_ns + slack;
  const into = arrows.find((a) => a.to_lane === lane.id && within(a.to_ns));
  if (into) return into.chain_id;
  const out = arrows.find((a) => a.from_lane === lane.id && within(a.from_ns));
  return out ? out.chain_id : null;
}

/** The block request behind a segment of a device or process lane. */
export function requestOfSegment(seg: TimelineSegment): { sourceId: number; line: number } | null {
  return seg.track === 'queued' || seg.track === 'service' ? { sourceId: seg.source_id, line: seg.line } : null;
}

/** What a drawn item is: the segment (or arrow, mark) behind it, for tooltips and clicks. */
export type Item =
  | { kind: 'segment'; lane: TimelineLane; seg: TimelineSegment; early?: boolean }
  | { kind: 'arrow'; arrow: TimelineArrow }
  | { kind: 'mark'; mark: Timeline['marks'][number] }
  | { kind: 'band'; lane: TimelineLane };

export type TimelineOptions = {
  v0: number; // the window drawn (ns, analysis timeline)
  v1: number;
  selection: [number, number] | null; // the analysis-wide time range, shaded
  origin: number; // axis labels are relative to this (the analysis start; 0 on the trace's clock)
  time?: TimeBase; // how tooltips write times (lib/timeBase.tsx)
  tickStep?: number; // the grid lines' step (ns): the ruler's ticks (timeAxis.ts), drawn above the chart in HTML
  selected?: number | null; // the index in items of the selected item: outlined
};

/** Segment geometry inside its lane: [top offset, height] in px. */
export function segmentBand(box: LaneBox, seg: TimelineSegment): [number, number] {
  const h = box.h;
  if (box.lane.kind === 'cpu') return [2, h - 4]; // the task running there: the whole lane
  switch (seg.track) {
    case 'state':
      return [h - 9, 7];
    case 'wait':
      return [3, 16];
    case 'call':
      return [22 + (seg.depth ?? 0) * CALL_H, CALL_H - 1];
    case 'queued':
      return [2, h / 2 - 3];
    case 'service':
      return [h / 2, h / 2 - 3];
    default:
      return [2, h - 4];
  }
}

/** A wait's lock, as the server names it ("?": no known lock on its stack, as Stalls' "—"). */
export const UNKNOWN_LOCK = '?';

/** What a wait slice is: "wait in xfs_ilock", or "wait (no known lock)". */
export function waitName(seg: Pick<TimelineSegment, 'state'>): string {
  return seg.state === UNKNOWN_LOCK ? 'wait (no known lock)' : `wait in ${seg.state}`;
}

/** The text on a slice: the lock or function ("wait" for a wait of no known lock), the duration of a block phase;
 * `early`: it began before its capture (earlyNote). */
export function segmentLabel(seg: TimelineSegment, early = false): string {
  if (seg.track === 'queued' || seg.track === 'service') return `${seg.track === 'queued' ? 'I→D' : 'D→C'} ${formatNs(seg.max_ns)}${seg.n > 1 ? ` ×${seg.n}` : ''}`;
  const name = seg.track === 'wait' && seg.state === UNKNOWN_LOCK ? 'wait' : seg.state;
  if (early) return `${name} · ${earlyNote(seg)}`;
  return seg.n > 1 ? `${name} ×${seg.n}` : name;
}

export function segmentColor(seg: TimelineSegment, lane?: Pick<TimelineLane, 'kind'>): string {
  if (seg.track === 'wait' || seg.track === 'call' || lane?.kind === 'cpu') return nameColor(seg.state); // a CPU's: its task
  return STATE_COLORS[seg.state] ?? C.q2c;
}

/** Which chains' arrows are drawn: those of one chain (the selected one), all of them (a toggle), or none. 50–100
 * arrows crossing every lane hid the lanes. */
export type ArrowFilter = { chain: number | null; all: boolean };

/** Where each source's capture began (ns, analysis timeline: its first printed timestamp): source id → time. */
export type CaptureStarts = ReadonlyMap<number, number>;

/** Did this call or wait begin before its capture did? A call seen only by its exit has the start its printed
 * duration gives (exit − duration), before the trace's first line; so has the wait inferred from it. Only a slice
 * that is one segment (n = 1) says when it began. */
export function beganBeforeCapture(seg: TimelineSegment, starts: CaptureStarts): boolean {
  const start = starts.get(seg.source_id);
  return (seg.track === 'call' || seg.track === 'wait') && seg.n === 1 && start !== undefined && seg.t1_ns - seg.max_ns < start;
}

/** What a slice that began before its capture says, on it and in its details. */
export function earlyNote(seg: Pick<TimelineSegment, 'track'>): string {
  return seg.track === 'call' ? 'entered before the capture began' : 'waiting since before the capture began';
}

/** Every drawable item, in draw order (bands, segments, counters' lanes, arrows, marks). */
export function timelineItems(t: Timeline, layout: Layout, arrows: ArrowFilter = { chain: null, all: true }, starts: CaptureStarts = new Map()): Item[] {
  const items: Item[] = [];
  for (const b of layout.lanes) if (b.lane.band) items.push({ kind: 'band', lane: b.lane });
  for (const b of layout.lanes)
    for (const seg of b.lane.segments) items.push({ kind: 'segment', lane: b.lane, seg, ...(beganBeforeCapture(seg, starts) ? { early: true } : {}) });
  for (const a of t.arrows) {
    if (!layout.byId.has(a.from_lane) || !layout.byId.has(a.to_lane)) continue;
    if (arrows.all || a.chain_id === arrows.chain) items.push({ kind: 'arrow', arrow: a });
  }
  for (const m of t.marks ?? []) items.push({ kind: 'mark', mark: m });
  return items;
}

export function describeItem(it: Item, time: TimeBase = ABSOLUTE_TIME): string {
  switch (it.kind) {
    case 'segment': {
      const s = it.seg;
      const what =
        it.lane.kind === 'cpu'
          ? `${s.state} ran${s.n > 1 ? ' (the task that ran most of it)' : ''}`
          : s.track === 'call'
            ? `call ${s.state}()`
            : s.track === 'wait'
              ? waitName(s)
              : s.track === 'state'
                ? s.state
                : `${s.state} (${s.track === 'queued' ? 'I→D' : 'D→C'})`;
      const merged = s.n > 1 ? `${formatCount(s.n)} merged, longest ${formatNs(s.max_ns)}` : `${formatNs(s.max_ns)}`;
      return tooltipLines(
        html`<b>${it.lane.label}</b>`,
        html`${what}`,
        ...(it.early ? [html`<i>${earlyNote(s)}</i>: the trace shows its end only`] : []),
        html`${formatTime(s.t0_ns, time)} → ${formatTime(s.t1_ns, time)}`,
        html`${merged}`,
        html`<span style="color:${C.muted}">source ${s.source_id}, line ${s.line}</span>`,
      );
    }
    case 'arrow': {
      const a = it.arrow;
      return tooltipLines(html`chain #${a.chain_id}: ${a.relation.replace('_', ' ')}`, html`${formatTime(a.to_ns, time)}`);
    }
    case 'mark':
      return tooltipLines(
        html`print: ${it.mark.text ?? ''}`,
        html`${it.mark.comm ?? ''} (${it.mark.pid})`,
        html`${formatTime(it.mark.t_ns, time)} · line ${it.mark.line}`,
      );
    case 'band': {
      const b = it.lane.band!;
      return tooltipLines(
        html`${it.lane.group ?? ''}: capture window`,
        html`${formatTime(b.t0_ns, time)} → ${b.t1_ns === null ? 'length unknown' : formatTime(b.t1_ns, time)}`,
      );
    }
  }
}

/** The segments that may carry a label: those no other segment of the same row (lane, track, call depth) overlaps.
 * A device's requests in flight overlap one another: their labels were printed over each other. */
export function labelFree(layout: Layout): Set<TimelineSegment> {
  const free = new Set<TimelineSegment>();
  for (const b of layout.lanes) {
    const rows = new Map<string, TimelineSegment[]>();
    for (const seg of b.lane.segments) {
      if (seg.track === 'state') continue;
      const k = `${seg.track}:${seg.depth ?? 0}`;
      const r = rows.get(k) ?? [];
      r.push(seg);
      rows.set(k, r);
    }
    for (const r of rows.values()) {
      r.sort((a, c) => a.t0_ns - c.t0_ns);
      let maxEnd = -Infinity;
      r.forEach((seg, i) => {
        const next = r[i + 1];
        if (seg.t0_ns >= maxEnd && (!next || next.t0_ns >= seg.t1_ns)) free.add(seg);
        maxEnd = Math.max(maxEnd, seg.t1_ns);
      });
    }
  }
  return free;
}

/** The plot's margins inside the canvas (px): the ruler above and the track tree on the left line up with them. */
export const GRID = { left: 8, right: 16, top: 12, bottom: 4 };

/** What the canvas draws, in CSS px from its top left: pure data, so the drawing is tested without a canvas. `item`: the
 * index in items of what a shape shows (for tooltips and clicks), -1 for none. */
export type SceneRect = { x: number; y: number; w: number; h: number; fill: string; opacity: number; item: number; stroke?: string; lineWidth?: number; dash?: number[] };
export type SceneLabel = { x: number; y: number; w: number; text: string };
export type SceneLine = { x1: number; y1: number; x2: number; y2: number; color: string; width: number; dash?: number[]; opacity?: number; item: number };
export type ScenePolygon = { points: [number, number][]; fill: string; item: number };
/** A device's requests in flight: a step line, each point [x, y, value]. */
export type SceneStep = { lane: TimelineLane; points: [number, number, number][]; unit: string; name: string };
export type Scene = {
  width: number;
  height: number;
  plot: { x: number; y: number; w: number; h: number };
  grid: number[]; // x of the vertical grid lines
  selection: SceneRect | null; // under the lanes
  rects: SceneRect[]; // bands and segments, in draw order (clipped to the plot)
  labels: SceneLabel[]; // over the segments
  arrows: { line: SceneLine; head: ScenePolygon }[]; // clipped to the plot
  marks: { line: SceneLine; head: ScenePolygon }[]; // not clipped: the handle is above the plot
  steps: SceneStep[];
  time?: TimeBase; // how its tooltips write times (TimelineOptions.time)
};

/** The timeline drawn at `width` px (the canvas): each item as rects, lines and polygons, the labels that fit. A cold
 * page drew ~2,000 items through ECharts' custom series (its chunk evaluated, an element per item: ~330 ms of main
 * thread); here they are plain rects on a 2D canvas. */
export function timelineScene(layout: Layout, items: Item[], o: TimelineOptions, width: number): Scene {
  const plot = { x: GRID.left, y: GRID.top, w: Math.max(1, width - GRID.left - GRID.right), h: layout.height };
  const span = Math.max(1, o.v1 - o.v0);
  const x = (ns: number) => plot.x + ((ns - o.v0) / span) * plot.w;
  const y = (py: number) => plot.y + py;
  const clipX = (v: number) => Math.max(plot.x, Math.min(plot.x + plot.w, v));
  const free = labelFree(layout);
  const scene: Scene = { width, height: layout.height + GRID.top + GRID.bottom, plot, grid: [], selection: null, rects: [], labels: [], arrows: [], marks: [], steps: [], time: o.time };
  if (o.tickStep && o.tickStep > 0 && span / o.tickStep < 500) {
    // the ruler's ticks: multiples of the step from the analysis start
    for (let t = Math.ceil((o.v0 - o.origin) / o.tickStep) * o.tickStep; t <= o.v1 - o.origin; t += o.tickStep) scene.grid.push(x(t + o.origin));
  }
  if (o.selection) {
    const [a, b] = o.selection;
    scene.selection = { x: x(a), y: plot.y, w: Math.max(1, x(b) - x(a)), h: plot.h, fill: 'rgba(88,166,255,0.10)', opacity: 1, stroke: 'rgba(88,166,255,0.6)', lineWidth: 1, item: -1 };
  }
  items.forEach((it, i) => {
    if (it.kind === 'segment') {
      const box = layout.byId.get(it.lane.id);
      if (!box) return;
      const [top, h] = segmentBand(box, it.seg);
      const x0 = clipX(x(it.seg.t0_ns));
      const x1 = clipX(x(it.seg.t1_ns));
      if (x(it.seg.t1_ns) < plot.x || x(it.seg.t0_ns) > plot.x + plot.w) return; // outside the window
      const w = Math.max(1, x1 - x0);
      const fill = segmentColor(it.seg, it.lane);
      const sel = i === o.selected;
      const opacity = sel ? 1 : it.seg.track === 'state' && it.seg.state === 'blocked' ? 0.9 : 0.85;
      scene.rects.push({ x: x0, y: y(box.y + top), w, h, fill, opacity, item: i, ...(sel ? { stroke: '#ffffff', lineWidth: 2 } : {}) });
      // a label only where it fits (waits, calls and block phases wider than 40 px, elided to the rect), and only on a
      // slice no other slice of its row overlaps: labels never run over each other
      const labelled =
        (it.seg.track === 'wait' || it.seg.track === 'call' || it.lane.kind === 'cpu' || ((it.seg.track === 'queued' || it.seg.track === 'service') && h >= 10)) &&
        w > 40 &&
        free.has(it.seg);
      if (labelled) scene.labels.push({ x: x0 + 5, y: y(box.y + top) + h / 2, w: w - 6, text: segmentLabel(it.seg, it.early) });
    } else if (it.kind === 'band') {
      const box = layout.byId.get(it.lane.id);
      if (!box) return;
      const b = it.lane.band!;
      const x0 = clipX(x(b.t0_ns));
      const x1 = b.t1_ns === null ? plot.x + plot.w : clipX(x(b.t1_ns));
      scene.rects.push({
        x: x0,
        y: y(box.y + 2),
        w: Math.max(1, x1 - x0),
        h: box.h - 4,
        fill: 'rgba(185,156,240,0.35)',
        opacity: 1,
        stroke: '#b99cf0',
        lineWidth: 1,
        ...(b.t1_ns === null ? { dash: [4, 3] } : {}),
        item: i,
      });
    } else if (it.kind === 'arrow') {
      const a = it.arrow;
      const f = layout.byId.get(a.from_lane);
      const tt = layout.byId.get(a.to_lane);
      if (!f || !tt) return;
      const x0 = x(a.from_ns);
      const x1 = x(a.to_ns);
      const y0 = y(f.y + f.h / 2);
      const y1 = y(tt.y + (tt.y > f.y ? 3 : tt.h - 3));
      const color = RELATION_COLORS[a.relation] ?? C.text;
      const dir = y1 > y0 ? 1 : -1;
      scene.arrows.push({
        line: { x1: x0, y1: y0, x2: x1, y2: y1, color, width: 1.6, item: i },
        head: { points: [[x1, y1], [x1 - 4, y1 - 7 * dir], [x1 + 4, y1 - 7 * dir]], fill: color, item: i },
      });
    } else if (it.kind === 'mark') {
      // print markers: a dashed line down the plot and a handle above it; those outside the window are not drawn
      if (it.mark.t_ns < o.v0 || it.mark.t_ns > o.v1) return;
      const xm = x(it.mark.t_ns);
      scene.marks.push({
        line: { x1: xm, y1: plot.y, x2: xm, y2: plot.y + plot.h, color: C.message, width: 1, dash: [3, 3], opacity: 0.8, item: i },
        head: { points: [[xm - 4, plot.y - 8], [xm + 4, plot.y - 8], [xm, plot.y]], fill: C.message, item: i },
      });
    }
  });
  for (const b of layout.lanes) {
    const c = b.lane.counter;
    if (!c) continue;
    const scale = c.max > 0 ? (b.h - 6) / c.max : 0;
    scene.steps.push({ lane: b.lane, unit: c.unit, name: c.name, points: c.points.map(([t, v]) => [x(t), y(b.y + b.h - 3 - v * scale), v]) });
  }
  return scene;
}

/** What is under the point (x, y) of the canvas: the item's index (-1: a counter's value, described in `html`), and the
 * tooltip's HTML (escaped: charts/html.ts). Marks first, then arrows, the counters' lines, the topmost slice. */
export function sceneHit(scene: Scene, items: Item[], px: number, py: number): { item: number; html: string } | null {
  const at = (item: number) => ({ item, html: describeItem(items[item], scene.time) });
  for (const m of scene.marks) {
    const [hx, hy] = m.head.points[2];
    if (Math.abs(px - hx) <= 3 && py >= hy - 9 && py <= m.line.y2) return at(m.line.item);
  }
  const inPlot = px >= scene.plot.x && px <= scene.plot.x + scene.plot.w && py >= scene.plot.y && py <= scene.plot.y + scene.plot.h;
  if (!inPlot) return null;
  for (const a of scene.arrows) if (nearSegment(a.line, px, py, 4)) return at(a.line.item);
  for (const s of scene.steps) {
    let k = -1;
    for (let i = 0; i < s.points.length && s.points[i][0] <= px; i++) k = i;
    if (k >= 0 && Math.abs(s.points[k][1] - py) <= 3) {
      return {
        item: -1,
        html: tooltipLines(html`${s.lane.label}: ${s.points[k][2]} ${s.unit} ${s.name}`, html`at ${formatTime(s.lane.counter!.points[k][0], scene.time)}`),
      };
    }
  }
  for (let i = scene.rects.length - 1; i >= 0; i--) {
    const r = scene.rects[i];
    if (px >= r.x - 0.5 && px <= r.x + r.w + 0.5 && py >= r.y && py <= r.y + r.h) return at(r.item);
  }
  return null;
}

function nearSegment(l: SceneLine, px: number, py: number, tol: number): boolean {
  const dx = l.x2 - l.x1;
  const dy = l.y2 - l.y1;
  const len2 = dx * dx + dy * dy;
  const t = len2 > 0 ? Math.max(0, Math.min(1, ((px - l.x1) * dx + (py - l.y1) * dy) / len2)) : 0;
  const ex = l.x1 + t * dx - px;
  const ey = l.y1 + t * dy - py;
  return ex * ex + ey * ey <= tol * tol;
}

/** Zoom the window [v0, v1] by `factor` (<1 in, >1 out) around `at`, kept inside [lo, hi]. */
export function zoomWindow(v0: number, v1: number, factor: number, at: number, lo: number, hi: number): [number, number] {
  const minSpan = 50; // ns: a few nanoseconds per 100 px, the precision of the trace clocks
  let span = Math.max(minSpan, (v1 - v0) * factor);
  span = Math.min(span, hi - lo);
  const frac = v1 > v0 ? (at - v0) / (v1 - v0) : 0.5;
  let a = Math.round(at - frac * span);
  a = Math.max(lo, Math.min(hi - span, a));
  return [a, Math.round(a + span)];
}

/** Pan the window by `frac` of its span (negative: left), kept inside [lo, hi]. */
export function panWindow(v0: number, v1: number, frac: number, lo: number, hi: number): [number, number] {
  const span = v1 - v0;
  const a = Math.max(lo, Math.min(hi - span, Math.round(v0 + frac * span)));
  return [a, a + span];
}
