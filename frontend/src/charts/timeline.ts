// The analysis timeline: lanes of segments from the server (already aggregated per pixel), drawn with one
// ECharts custom series on a pixel-exact y axis (y = px from the top of the plot), so lanes can have heights
// of their own. Pure: the layout and the option depend only on the data and the window.
import type { CustomSeriesRenderItemAPI, CustomSeriesRenderItemParams, CustomSeriesRenderItemReturn } from 'echarts';
import type { components } from '../api/schema';
import { formatAbsTime, formatCount, formatNs } from '../lib/format';
import { html, tooltipLines } from './html';
import { C, axisCommon, baseTextStyle, tooltipStyle } from './theme';
import type { EChartsOption } from './types';

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
export type TimelineLane = Omit<WireLane, 'segs'> & { segments: TimelineSegment[] };
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
export type Header = { label: string; y: number; key: string; folded: boolean; lanes: number; shown: number; nested?: boolean };
export type Layout = { lanes: LaneBox[]; headers: Header[]; height: number; byId: Map<string, LaneBox> };
/** The track tree's state: lanes pinned to the top, groups folded (by key: "src:<id>", "cpus:<id>", "pinned",
 * "proc:<id>:<tgid>"), a search of the labels. */
export type TreeState = { pinned?: string[]; folded?: string[]; query?: string | null };

function laneHeight(l: TimelineLane): { h: number; depth: number } {
  if (l.kind === 'window') return { h: 18, depth: 0 };
  if (l.kind === 'process') return { h: 26, depth: 0 };
  if (l.kind === 'device') return { h: 40, depth: 0 };
  if (l.kind === 'cpu') return { h: 20, depth: 0 };
  const depth = Math.max(-1, ...l.segments.filter((s) => s.track === 'call').map((s) => s.depth ?? 0)) + 1;
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

/** A group's lanes with the threads of each process of several threads (same tgid) together under that process,
 * at the place of its first-ranked thread; a process of one thread (or a lane without tgid) stays as it is. */
function nestThreads(lanes: TimelineLane[]): ({ lane: TimelineLane } | { tgid: number; label: string; threads: TimelineLane[] })[] {
  const threads = new Map<number, TimelineLane[]>();
  for (const l of lanes) if (l.kind === 'task' && l.tgid != null) threads.set(l.tgid, [...(threads.get(l.tgid) ?? []), l]);
  const out: ({ lane: TimelineLane } | { tgid: number; label: string; threads: TimelineLane[] })[] = [];
  const done = new Set<number>();
  for (const l of lanes) {
    const ts = l.kind === 'task' && l.tgid != null ? threads.get(l.tgid)! : null;
    if (!ts || ts.length < 2) out.push({ lane: l });
    else if (!done.has(l.tgid!)) {
      done.add(l.tgid!);
      const main = ts.find((x) => x.pid === l.tgid) ?? ts[0];
      out.push({ tgid: l.tgid!, label: `${main.label.replace(/ \(\d+\)$/, '')} (${l.tgid}) · ${ts.length} threads`, threads: ts });
    }
  }
  return out;
}

/** The group a lane is drawn in (unless pinned): its source's CPUs ("cpus:<id>"), else its source ("src:<id>"). */
function groupOf(l: TimelineLane, sourceName: (id: number) => string): { key: string; label: string } {
  if (l.kind === 'cpu') return { key: `cpus:${l.source_id}`, label: `CPUs · ${sourceName(l.source_id)}` };
  return { key: `src:${l.source_id}`, label: sourceName(l.source_id) };
}

/** Lanes as a tree: the pinned ones first (in the order pinned), then each source's CPUs in a group of their own,
 * then the other lanes grouped by source (in the order the server ranked them), each group under a header that folds
 * it; each lane with its y and height in px. */
export function timelineLayout(t: Pick<Timeline, 'lanes'>, sourceName: (id: number) => string, tree: TreeState = {}): Layout {
  const pinned = tree.pinned ?? [];
  const folded = new Set(tree.folded ?? []);
  const shown = t.lanes.filter((l) => laneMatches(l, tree.query ?? ''));
  const groups = new Map<string, { label: string; lanes: TimelineLane[] }>();
  const pins = pinned.map((id) => shown.find((l) => l.id === id)).filter((l): l is TimelineLane => !!l);
  if (pins.length) groups.set('pinned', { label: 'Pinned', lanes: pins });
  // the CPUs on top, as in Perfetto and KernelShark, then the sources' groups in the order of their first lane
  const cpusFirst = [...shown.filter((l) => l.kind === 'cpu'), ...shown.filter((l) => l.kind !== 'cpu')];
  for (const l of cpusFirst) {
    if (pinned.includes(l.id)) continue;
    const { key, label } = groupOf(l, sourceName);
    const g = groups.get(key) ?? { label, lanes: [] };
    g.lanes.push(l);
    groups.set(key, g);
  }
  const lanes: LaneBox[] = [];
  const headers: Header[] = [];
  let y = 0;
  for (const [key, g] of groups) {
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
      const procKey = `proc:${item.threads[0].source_id}:${item.tgid}`;
      const procFolded = folded.has(procKey);
      headers.push({ label: item.label, y, key: procKey, folded: procFolded, lanes: item.threads.length, shown: procFolded ? 0 : item.threads.length, nested: true });
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
  | { kind: 'segment'; lane: TimelineLane; seg: TimelineSegment }
  | { kind: 'arrow'; arrow: TimelineArrow }
  | { kind: 'mark'; mark: Timeline['marks'][number] }
  | { kind: 'band'; lane: TimelineLane };

export type TimelineOptions = {
  v0: number; // the window drawn (ns, analysis timeline)
  v1: number;
  selection: [number, number] | null; // the analysis-wide time range, shaded
  origin: number; // axis labels are relative to this (the analysis start)
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

/** The text on a slice: the lock or function, the duration of a block phase. */
export function segmentLabel(seg: TimelineSegment): string {
  if (seg.track === 'queued' || seg.track === 'service') return `${seg.track === 'queued' ? 'I→D' : 'D→C'} ${formatNs(seg.max_ns)}${seg.n > 1 ? ` ×${seg.n}` : ''}`;
  return seg.n > 1 ? `${seg.state} ×${seg.n}` : seg.state;
}

export function segmentColor(seg: TimelineSegment, lane?: Pick<TimelineLane, 'kind'>): string {
  if (seg.track === 'wait' || seg.track === 'call' || lane?.kind === 'cpu') return nameColor(seg.state); // a CPU's: its task
  return STATE_COLORS[seg.state] ?? C.q2c;
}

/** Which chains' arrows are drawn: those of one chain (the selected one), all of them (a toggle), or none. 50–100
 * arrows crossing every lane hid the lanes. */
export type ArrowFilter = { chain: number | null; all: boolean };

/** Every drawable item, in draw order (bands, segments, counters' lanes, arrows, marks). */
export function timelineItems(t: Timeline, layout: Layout, arrows: ArrowFilter = { chain: null, all: true }): Item[] {
  const items: Item[] = [];
  for (const b of layout.lanes) if (b.lane.band) items.push({ kind: 'band', lane: b.lane });
  for (const b of layout.lanes) for (const seg of b.lane.segments) items.push({ kind: 'segment', lane: b.lane, seg });
  for (const a of t.arrows) {
    if (!layout.byId.has(a.from_lane) || !layout.byId.has(a.to_lane)) continue;
    if (arrows.all || a.chain_id === arrows.chain) items.push({ kind: 'arrow', arrow: a });
  }
  for (const m of t.marks ?? []) items.push({ kind: 'mark', mark: m });
  return items;
}

export function describeItem(it: Item): string {
  switch (it.kind) {
    case 'segment': {
      const s = it.seg;
      const what =
        it.lane.kind === 'cpu'
          ? `${s.state} ran${s.n > 1 ? ' (the task that ran most of it)' : ''}`
          : s.track === 'call'
            ? `call ${s.state}()`
            : s.track === 'wait'
              ? `wait in ${s.state}`
              : s.track === 'state'
                ? s.state
                : `${s.state} (${s.track === 'queued' ? 'I→D' : 'D→C'})`;
      const merged = s.n > 1 ? `${formatCount(s.n)} merged, longest ${formatNs(s.max_ns)}` : `${formatNs(s.max_ns)}`;
      return tooltipLines(
        html`<b>${it.lane.label}</b>`,
        html`${what}`,
        html`${formatAbsTime(s.t0_ns)} → ${formatAbsTime(s.t1_ns)}`,
        html`${merged}`,
        html`<span style="color:${C.muted}">source ${s.source_id}, line ${s.line}</span>`,
      );
    }
    case 'arrow': {
      const a = it.arrow;
      return tooltipLines(html`chain #${a.chain_id}: ${a.relation.replace('_', ' ')}`, html`${formatAbsTime(a.to_ns)}`);
    }
    case 'mark':
      return tooltipLines(
        html`print: ${it.mark.text ?? ''}`,
        html`${it.mark.comm ?? ''} (${it.mark.pid})`,
        html`${formatAbsTime(it.mark.t_ns)} · line ${it.mark.line}`,
      );
    case 'band': {
      const b = it.lane.band!;
      return tooltipLines(
        html`${it.lane.group ?? ''}: capture window`,
        html`${formatAbsTime(b.t0_ns)} → ${b.t1_ns === null ? 'length unknown' : formatAbsTime(b.t1_ns)}`,
      );
    }
  }
}

/** The item behind a click or tooltip on the timeline's series (each datum is [index in items]). */
export function itemOf(items: Item[], p: { seriesName?: string; value?: unknown } | null | undefined): Item | null {
  if (p?.seriesName !== 'timeline' && p?.seriesName !== 'marks') return null;
  const i = Array.isArray(p.value) ? p.value[0] : undefined;
  return typeof i === 'number' ? (items[i] ?? null) : null;
}

type Rendered = CustomSeriesRenderItemReturn;

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

export function buildTimelineOption(layout: Layout, items: Item[], o: TimelineOptions): EChartsOption {
  const free = labelFree(layout);
  const render = (p: CustomSeriesRenderItemParams, api: CustomSeriesRenderItemAPI): Rendered => {
    const it = items[api.value(0) as number];
    const x = (ns: number) => api.coord([ns - o.origin, 0])[0];
    const y = (py: number) => api.coord([0, py])[1];
    const cs = p.coordSys as unknown as { x: number; width: number; y: number; height: number };
    const clipX = (v: number) => Math.max(cs.x, Math.min(cs.x + cs.width, v));
    if (it.kind === 'segment') {
      const box = layout.byId.get(it.lane.id)!;
      const [top, h] = segmentBand(box, it.seg);
      const x0 = clipX(x(it.seg.t0_ns));
      const x1 = clipX(x(it.seg.t1_ns));
      const w = Math.max(1, x1 - x0);
      const shape = { x: x0, y: y(box.y + top), width: w, height: h };
      const fill = segmentColor(it.seg, it.lane);
      const opacity = it.seg.track === 'state' && it.seg.state === 'blocked' ? 0.9 : 0.85;
      const sel = api.value(0) === o.selected;
      const style = sel ? { fill, opacity: 1, stroke: '#ffffff', lineWidth: 2 } : { fill, opacity };
      // a label only where it fits (waits, calls and block phases wider than 40 px, elided to the rect): the others
      // are bare rects (no text to lay out), so labels never run over each other
      const labelled =
        (it.seg.track === 'wait' || it.seg.track === 'call' || it.lane.kind === 'cpu' || ((it.seg.track === 'queued' || it.seg.track === 'service') && h >= 10)) &&
        w > 40 &&
        free.has(it.seg);
      if (!labelled) return { type: 'rect', shape, style } as unknown as Rendered;
      return {
        type: 'rect',
        shape,
        style,
        textContent: { silent: true, style: { text: segmentLabel(it.seg), fill: '#0d1117', fontSize: 10, width: w - 6, overflow: 'truncate', ellipsis: '…' } },
        textConfig: { position: 'insideLeft' },
      } as unknown as Rendered;
    }
    if (it.kind === 'band') {
      const box = layout.byId.get(it.lane.id)!;
      const b = it.lane.band!;
      const x0 = clipX(x(b.t0_ns));
      const x1 = b.t1_ns === null ? cs.x + cs.width : clipX(x(b.t1_ns));
      return {
        type: 'rect',
        shape: { x: x0, y: y(box.y + 2), width: Math.max(1, x1 - x0), height: box.h - 4 },
        style: { fill: 'rgba(185,156,240,0.35)', stroke: '#b99cf0', lineWidth: 1, lineDash: b.t1_ns === null ? [4, 3] : undefined },
      } as unknown as Rendered;
    }
    if (it.kind === 'arrow') {
      const a = it.arrow;
      const f = layout.byId.get(a.from_lane)!;
      const tt = layout.byId.get(a.to_lane)!;
      const x0 = x(a.from_ns);
      const x1 = x(a.to_ns);
      const y0 = y(f.y + f.h / 2);
      const y1 = y(tt.y + (tt.y > f.y ? 3 : tt.h - 3));
      const color = RELATION_COLORS[a.relation] ?? C.text;
      const dir = y1 > y0 ? 1 : -1;
      return {
        type: 'group',
        children: [
          { type: 'line', shape: { x1: x0, y1: y0, x2: x1, y2: y1 }, style: { stroke: color, lineWidth: 1.6 } },
          { type: 'polygon', shape: { points: [[x1, y1], [x1 - 4, y1 - 7 * dir], [x1 + 4, y1 - 7 * dir]] }, style: { fill: color } },
        ],
      } as unknown as Rendered;
    }
    return null as unknown as Rendered;
  };
  // print markers: a dashed line down the plot and a handle above it (outside the plot: their series is not
  // clipped, so the markers outside the window are not drawn at all)
  const renderMark = (p: CustomSeriesRenderItemParams, api: CustomSeriesRenderItemAPI): Rendered => {
    const it = items[api.value(0) as number];
    if (it.kind !== 'mark' || it.mark.t_ns < o.v0 || it.mark.t_ns > o.v1) return null as unknown as Rendered;
    const xm = api.coord([it.mark.t_ns - o.origin, 0])[0];
    const cs = p.coordSys as unknown as { x: number; width: number; y: number; height: number };
    return {
      type: 'group',
      children: [
        { type: 'line', shape: { x1: xm, y1: cs.y, x2: xm, y2: cs.y + cs.height }, style: { stroke: C.message, lineWidth: 1, lineDash: [3, 3], opacity: 0.8 } },
        { type: 'polygon', shape: { points: [[xm - 4, cs.y - 8], [xm + 4, cs.y - 8], [xm, cs.y]] }, style: { fill: C.message } },
      ],
    } as unknown as Rendered;
  };

  const drawn: number[][] = [];
  const marks: number[][] = [];
  items.forEach((it, i) => (it.kind === 'mark' ? marks : drawn).push([i]));
  const tooltip = { formatter: (p: { value: number[] }) => describeItem(items[p.value[0]]) };
  const counters = layout.lanes.filter((b) => b.lane.counter);
  return {
    backgroundColor: 'transparent',
    animation: false,
    textStyle: baseTextStyle,
    grid: { left: 8, right: 16, top: 12, bottom: 4 }, // the chart is layout.height + 16 px tall: 1 y unit = 1 px
    tooltip: { ...tooltipStyle, trigger: 'item', confine: true },
    xAxis: {
      type: 'value',
      min: o.v0 - o.origin,
      max: o.v1 - o.origin,
      ...axisCommon,
      ...(o.tickStep ? { interval: o.tickStep } : { splitNumber: 8 }),
      axisLabel: { show: false }, // the ruler above the chart labels the ticks (distinct, as precise as the zoom)
      axisTick: { show: false },
    },
    yAxis: { type: 'value', min: 0, max: layout.height, inverse: true, show: false },
    series: [
      {
        type: 'custom',
        name: 'timeline',
        renderItem: render,
        clip: true,
        // drawn in one pass: progressively (ECharts' default above 3000 items) it took a frame per 400 items,
        // repainting each time, and drew them unclipped
        progressive: 0,
        data: drawn,
        encode: { x: [], y: [] },
        tooltip,
        z: 2,
      },
      ...counters.map((b) => counterSeries(b, o, layout)),
      selectionSeries(o, layout),
      {
        type: 'custom',
        name: 'marks',
        renderItem: renderMark,
        clip: false,
        progressive: 0,
        data: marks,
        encode: { x: [], y: [] },
        tooltip,
        z: 2, // under the segments' labels, over the segments (after them)
      },
    ],
  } as EChartsOption;
}

/** Requests in flight, as a step line across the device lane (scaled to its height). */
function counterSeries(b: LaneBox, o: TimelineOptions, _layout: Layout) {
  const c = b.lane.counter!;
  const scale = c.max > 0 ? (b.h - 6) / c.max : 0;
  return {
    type: 'line' as const,
    name: `${b.lane.label} ${c.name}`,
    step: 'end' as const,
    symbol: 'none',
    lineStyle: { color: '#e6edf3', width: 1, opacity: 0.7 },
    data: c.points.map(([t, v]) => [t - o.origin, b.y + b.h - 3 - v * scale, v]),
    tooltip: {
      formatter: (p: { value: number[] }) =>
        tooltipLines(html`${b.lane.label}: ${p.value[2]} ${c.unit} ${c.name}`, html`at ${formatAbsTime(p.value[0] + o.origin)}`),
    },
    z: 3,
  };
}

/** The analysis-wide time range, shaded. */
function selectionSeries(o: TimelineOptions, layout: Layout) {
  const s = o.selection;
  return {
    type: 'custom' as const,
    name: 'selection',
    silent: true,
    data: s ? [[0]] : [],
    encode: { x: [], y: [] },
    renderItem: (_p: CustomSeriesRenderItemParams, api: CustomSeriesRenderItemAPI) => {
      const x0 = api.coord([s![0] - o.origin, 0])[0];
      const x1 = api.coord([s![1] - o.origin, 0])[0];
      const y0 = api.coord([0, 0])[1];
      const y1 = api.coord([0, layout.height])[1];
      return {
        type: 'rect',
        shape: { x: x0, y: y0, width: Math.max(1, x1 - x0), height: y1 - y0 },
        style: { fill: 'rgba(88,166,255,0.10)', stroke: 'rgba(88,166,255,0.6)', lineWidth: 1 },
      } as unknown as CustomSeriesRenderItemReturn;
    },
    z: 1,
  };
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
