// Latency heatmap: events (block requests, calls of a function, waits) counted per time bin (x, seconds) ×
// latency bin (y, equal steps in log10, labelled with units), binned on the server. Colour = count, on a
// log scale (legend in the events' noun). Clicking a cell leads to the event behind its max; dragging a
// rectangle (brush) selects a box of cells whose events are listed below the chart.
import type { paths } from '../api/schema';
import { ABSOLUTE_TIME, formatCount, formatNs, formatNsShort, formatTime, pickTimeUnit, secondsLabel, type TimeBase } from '../lib/format';
import type { HeatmapBox, RequestRef } from '../state/viewState';
import { html, tooltipLines } from './html';
import { secondDecimals } from './latencyOverTime';
import { C, axisCommon, baseTextStyle, tooltipStyle } from './theme';
import type { ComposeOption } from 'echarts/core';
import type { HeatmapSeriesOption } from 'echarts/charts';
import type {
  BrushComponentOption,
  DataZoomComponentOption,
  GridComponentOption,
  TooltipComponentOption,
  VisualMapComponentOption,
} from 'echarts/components';

/** The heatmap's option type: its series, visualMap and brush are registered in views/heatmap/HeatmapBody.tsx. */
export type HeatmapOption = ComposeOption<
  | HeatmapSeriesOption
  | GridComponentOption
  | TooltipComponentOption
  | DataZoomComponentOption
  | VisualMapComponentOption
  | BrushComponentOption
>;

export type Heatmap =
  paths['/api/analyses/{analysis_id}/heatmap']['get']['responses'][200]['content']['application/json'];
export type HeatmapCell = Heatmap['cells'][number];
export type EventRef = HeatmapCell['max_ref'];
export type EventKind = Heatmap['kind'];
export type HeatmapEvents =
  paths['/api/analyses/{analysis_id}/heatmap/events']['get']['responses'][200]['content']['application/json'];
export type HeatmapEvent = HeatmapEvents['events'][number];

/** One heatmap datum: [x bin, y bin, log10(count) (colour), count, max (ns), source_id, line] (the max's event). */
export type HeatmapDatum = [number, number, number, number, number, number, number];

/** Colours from few to many events (the lowest still stands out on the panel). */
export const HEAT_COLORS = ['#2b4c7e', '#3f7cac', '#7a9e3e', '#f2cc60', '#ff8a5b', '#ff4d4d'];
/** Cells outside a brushed box are drawn at this opacity. */
export const OUTSIDE_BOX_OPACITY = 0.3;

export const GRID = { left: 78, right: 92, top: 14, bottom: 62 } as const;

/** The action that turns the mouse into the rectangle brush (dispatch it after each setOption). */
export const BRUSH_CURSOR = { type: 'takeGlobalCursor', key: 'brush', brushOption: { brushType: 'rect', brushMode: 'single' } };

const NOUN: Record<EventKind, [string, string]> = {
  request: ['request', 'requests'],
  call: ['call', 'calls'],
  wait: ['wait', 'waits'],
};

/** "1 request", "520 requests", "3 waits". */
/** A heatmap's two category axes: time bins across, log-latency bins up (a label every `yLabelEvery` bins). */
export function heatAxes(a: { xLabels: string[]; xName: string; yLabels: string[]; yName: string; yLabelEvery: number }) {
  return {
    xAxis: {
      ...axisCommon,
      type: 'category' as const,
      data: a.xLabels,
      name: a.xName,
      nameLocation: 'middle' as const,
      nameGap: 24,
      splitArea: { show: false },
      axisLabel: { ...axisCommon.axisLabel, hideOverlap: true },
    },
    yAxis: {
      ...axisCommon,
      type: 'category' as const,
      data: a.yLabels,
      name: a.yName,
      nameLocation: 'middle' as const,
      nameGap: 60,
      splitArea: { show: false },
      axisLabel: { ...axisCommon.axisLabel, interval: Math.max(0, a.yLabelEvery - 1) },
    },
  };
}

/** The colour scale of counts per cell, on a log scale from 1 to `top`, labelled by `text` (top, bottom). */
export function heatScale(top: number, text: [string, string], height: number, width: number) {
  return {
    type: 'continuous' as const,
    dimension: 2,
    min: 0,
    max: Math.max(Math.log10(Math.max(top, 1)), 0.001),
    calculable: false,
    orient: 'vertical' as const,
    right: 4,
    top: 'middle',
    itemHeight: height,
    itemWidth: width,
    text,
    textStyle: { color: C.muted, fontSize: 10 },
    inRange: { color: [...HEAT_COLORS] },
  };
}

export function countOf(kind: EventKind, n: number): string {
  return `${formatCount(n)} ${NOUN[kind][n === 1 ? 0 : 1]}`;
}

/** What the latency is: "I2D", "xfs_ilock duration", "wait on xfs_ilock", "wait", "wait (idle sleeps too)". */
export function metricTitle(data: Pick<Heatmap, 'metric' | 'filter'> & { idle?: boolean }): string {
  if (data.metric === 'func') return `${data.filter ?? 'function'} duration`;
  if (data.metric === 'wait') return `${data.filter ? `wait on ${data.filter}` : 'wait'}${data.idle ? ' (idle sleeps too)' : ''}`;
  return data.metric.toUpperCase();
}

const CLICK_HINT: Record<EventKind, string> = {
  request: 'click: open the slowest request',
  call: 'click: list the calls of this cell',
  wait: 'click: list the waits of this cell',
};

export function toData(cells: HeatmapCell[]): HeatmapDatum[] {
  return cells.map((c) => [c.x, c.y, Math.log10(c.count), c.count, c.max_ns, c.max_ref.source_id, c.max_ref.line]);
}

/** [start, end) of time bin x, ns. */
export function timeRange(data: Heatmap, x: number): [number, number] {
  const t0 = data.t0_ns ?? 0;
  const bin = data.x_bin_ns ?? 1;
  return [t0 + x * bin, Math.min(t0 + (x + 1) * bin, (data.t1_ns ?? t0) + 1)];
}

/** The x axis labels: each time bin's start, in seconds in the time base, with the decimals its bin needs
 * (neighbours differ); the bins past the data's end (a span shorter than the bins: one request) unlabelled. */
export function xLabels(data: Heatmap, time: TimeBase = ABSOLUTE_TIME): string[] {
  const bin = data.x_bin_ns ?? 1;
  const dec = Math.min(9, Math.max(secondDecimals((data.t1_ns ?? 0) - (data.t0_ns ?? 0)), Math.ceil(-Math.log10(bin / 1e9) - 1e-9)));
  const n = data.x_bin_ns === null ? 0 : data.x_bins;
  const end = data.t1_ns ?? 0;
  return Array.from({ length: n }, (_, x) => {
    const t = timeRange(data, x)[0];
    return x > 0 && t > end ? '' : secondsLabel(t, dec, time);
  });
}

/** The heatmap as drawn: when its events all lie within one time bin (one request, or a burst at one instant), that
 * one column across the chart, not a cell in the corner of 120 empty ones (each labelled the same instant, "requests
 * per 1 ns"). */
export function fitInstant<T extends Pick<Heatmap, 'x_bin_ns' | 't0_ns' | 't1_ns' | 'x_bins'>>(data: T): T {
  if (data.x_bins <= 1 || data.x_bin_ns === null || data.t0_ns === null || data.t1_ns === null) return data;
  return data.t1_ns - data.t0_ns < data.x_bin_ns ? { ...data, x_bins: 1 } : data;
}

/** The time bin in words, for "requests per …": none when the data spans less than one bin (a single instant). */
export function binWords(data: Pick<Heatmap, 'x_bin_ns' | 't0_ns' | 't1_ns'>): string | null {
  if (!data.x_bin_ns || data.t0_ns === null || data.t1_ns === null || data.t1_ns - data.t0_ns < data.x_bin_ns) return null;
  return formatNs(data.x_bin_ns);
}

/** The y axis labels: each latency bin's lower edge, with its unit ("4.46 µs", "15.6 s"); with more
 * significant digits when a narrow latency range would give neighbouring bins the same label. */
export function yLabels(data: Heatmap): string[] {
  const edges = data.y_edges_ns.slice(0, -1);
  for (let digits = 3; digits < 10; digits++) {
    const labels = edges.map((e) => formatNsDigits(e, digits));
    if (labels.every((l, i) => i === 0 || l !== labels[i - 1])) return labels;
  }
  return edges.map((e) => `${formatCount(e)} ns`);
}

function formatNsDigits(ns: number, digits: number): string {
  if (digits === 3) return formatNsShort(ns);
  const u = pickTimeUnit(ns);
  return `${Number((ns / u.ns).toPrecision(digits))} ${u.unit}`;
}

export function maxCount(data: Heatmap): number {
  return data.cells.reduce((m, c) => Math.max(m, c.count), 0);
}

/** The box of the cells x in [xa, xb], y in [ya, yb]: exactly the events the server counted in them
 * (time bins end at t1, bin 0 is open below, the top bin above). */
export function cellBox(data: Heatmap, xa: number, xb: number, ya: number, yb: number): HeatmapBox | null {
  if (data.t0_ns === null || data.t1_ns === null || data.x_bin_ns === null || data.y_edges_ns.length < 2) return null;
  const [x0, x1] = [Math.min(xa, xb), Math.max(xa, xb)].map((v) => Math.max(0, Math.min(data.x_bins - 1, v)));
  const [y0, y1] = [Math.min(ya, yb), Math.max(ya, yb)].map((v) => Math.max(0, Math.min(data.y_bins - 1, v)));
  const t0 = data.t0_ns + x0 * data.x_bin_ns;
  if (t0 > data.t1_ns) return null;
  return {
    metric: data.metric,
    t0,
    t1: Math.min(data.t0_ns + (x1 + 1) * data.x_bin_ns - 1, data.t1_ns),
    latMin: y0 === 0 ? null : data.y_edges_ns[y0],
    latMax: y1 === data.y_bins - 1 ? null : data.y_edges_ns[y1 + 1],
  };
}

type BrushArea = { coordRange?: unknown; brushType?: string };

/** The box a rectangle brushed on the (category) axes selects: every cell it touches. */
export function brushBox(data: Heatmap, area: BrushArea | undefined): HeatmapBox | null {
  const r = area?.coordRange;
  if (!Array.isArray(r) || r.length !== 2 || !Array.isArray(r[0]) || !Array.isArray(r[1])) return null;
  const [[xa, xb], [ya, yb]] = r as [number[], number[]];
  if (![xa, xb, ya, yb].every((v) => typeof v === 'number' && Number.isFinite(v))) return null;
  return cellBox(data, Math.round(xa), Math.round(xb), Math.round(ya), Math.round(yb));
}

/** The cells a box overlaps (inclusive index ranges), or null when it overlaps none. */
export function boxCells(data: Heatmap, box: HeatmapBox): { x0: number; x1: number; y0: number; y1: number } | null {
  if (data.t0_ns === null || data.t1_ns === null || data.x_bin_ns === null || data.y_edges_ns.length < 2) return null;
  if (box.t1 < data.t0_ns || box.t0 > data.t1_ns) return null;
  const bin = data.x_bin_ns;
  const x0 = Math.max(0, Math.floor((box.t0 - data.t0_ns) / bin));
  const x1 = Math.min(data.x_bins - 1, Math.floor((Math.min(box.t1, data.t1_ns) - data.t0_ns) / bin));
  const inner = data.y_edges_ns.slice(1, -1);
  const binOf = (v: number) => inner.filter((e) => e <= v).length; // as the server bins
  const y0 = box.latMin === null ? 0 : binOf(box.latMin); // the bins holding its lowest and highest ns
  const y1 = box.latMax === null ? data.y_bins - 1 : binOf(box.latMax - 1);
  return { x0, x1, y0, y1 };
}

/** "10.862102 s → 16.293145 s · 361.2 ms ≤ latency < 15.63 s" (open ends say so). */
export function boxLabel(box: HeatmapBox, time: TimeBase = ABSOLUTE_TIME): string {
  const lat =
    box.latMin === null && box.latMax === null
      ? 'any latency'
      : box.latMin === null
        ? `latency < ${formatNs(box.latMax)}`
        : box.latMax === null
          ? `latency ≥ ${formatNs(box.latMin)}`
          : `${formatNs(box.latMin)} ≤ latency < ${formatNs(box.latMax)}`;
  return `${formatTime(box.t0, time)} → ${formatTime(box.t1, time)} · ${lat}`;
}

export type HeatmapOptionState = {
  selected?: RequestRef | null; // outline the cell whose max is this event
  box?: HeatmapBox | null; // fade the cells outside it
  time?: TimeBase; // how its tooltips write times (lib/timeBase.tsx)
};

export function buildHeatmapOption(data: Heatmap, state: HeatmapOptionState = {}): HeatmapOption {
  const { selected = null, box = null } = state;
  const points = toData(data.cells);
  const top = maxCount(data);
  const xl = xLabels(data, state.time);
  const title = metricTitle(data);
  const inBox = box && box.metric === data.metric ? boxCells(data, box) : null;
  const boxed = !!(box && box.metric === data.metric);
  return {
    backgroundColor: 'transparent',
    animation: false,
    textStyle: baseTextStyle,
    grid: { ...GRID, outerBoundsMode: 'none' }, // fixed: long labels must not move the cells (cellCenter, e2e)
    tooltip: {
      ...tooltipStyle,
      trigger: 'item',
      formatter: (p: unknown) => {
        const v = (p as { value: HeatmapDatum }).value;
        const [x, y, , count, max] = v;
        const [a, b] = timeRange(data, x);
        return tooltipLines(
          html`<b>${title}</b> · ${formatTime(a, state.time)} → ${formatTime(b, state.time)}`,
          html`latency ${formatNs(data.y_edges_ns[y])} – ${formatNs(data.y_edges_ns[y + 1])}`,
          html`${countOf(data.kind, count)} · max: ${formatNs(max)}`,
          html`<span style="color:${C.muted}">${CLICK_HINT[data.kind]} · drag: list a box of cells</span>`,
        );
      },
    },
    ...heatAxes({
      xLabels: xl,
      xName: 'time (s)',
      yLabels: yLabels(data),
      yName: `${title} (log scale)`,
      yLabelEvery: Math.ceil(data.y_bins / 12),
    }),
    visualMap: {
      ...heatScale(top, [countOf(data.kind, top), countOf(data.kind, 1)], 140, 12),
      formatter: (v: unknown) => formatCount(Math.round(10 ** Number(v))),
    },
    brush: {
      xAxisIndex: 0,
      yAxisIndex: 0,
      brushType: 'rect',
      brushMode: 'single',
      transformable: false,
      removeOnClick: true,
      throttleType: 'debounce',
      throttleDelay: 0,
      brushStyle: { borderWidth: 1, color: 'rgba(255,255,255,0.08)', borderColor: C.selected },
    },
    // the slider selects a time window: none to select in one column
    dataZoom: data.x_bins <= 1 ? [] : [
      {
        type: 'slider',
        xAxisIndex: 0,
        filterMode: 'none',
        height: 18,
        bottom: 6,
        borderColor: C.axis,
        textStyle: { color: C.muted, fontSize: 10 },
        labelFormatter: (_: number, v: string) => `${v} s`, // (the bin's label: its start in the time base)
      },
      {
        type: 'inside',
        xAxisIndex: 0,
        filterMode: 'none',
        zoomOnMouseWheel: 'shift',
        moveOnMouseWheel: false,
        moveOnMouseMove: false, // dragging draws the brush
      },
    ],
    series: [
      {
        name: NOUN[data.kind][1],
        type: 'heatmap',
        data: points.map((p) => {
          const isSelected = selected !== null && p[5] === selected.sourceId && p[6] === selected.line;
          const outside = boxed && !(inBox && p[0] >= inBox.x0 && p[0] <= inBox.x1 && p[1] >= inBox.y0 && p[1] <= inBox.y1);
          // a plain cell as its bare array: one object among the data makes ECharts build an item model per cell
          if (!isSelected && !outside) return p;
          return {
            value: p,
            itemStyle: {
              ...(isSelected ? { borderColor: C.selected, borderWidth: 2 } : {}),
              ...(outside ? { opacity: OUTSIDE_BOX_OPACITY } : {}),
            },
          };
        }),
        emphasis: { itemStyle: { borderColor: C.selected, borderWidth: 1 } },
        progressive: 0,
      },
    ],
  };
}

type Zoom = { start?: number; end?: number; startValue?: number; endValue?: number };

/** The time window [t0, t1] in ns that a dataZoom event on the (category) time axis selects. */
export function heatmapZoomWindow(data: Heatmap, ev: Zoom & { batch?: Zoom[] }): { t0: number; t1: number } | null {
  const z = ev.batch?.[0] ?? ev;
  if (data.t0_ns === null || data.t1_ns === null || data.x_bin_ns === null) return null;
  const n = data.x_bins;
  let a: number;
  let b: number;
  if (z.startValue !== undefined && z.endValue !== undefined) {
    a = z.startValue;
    b = z.endValue;
  } else if (z.start !== undefined && z.end !== undefined) {
    a = Math.floor((n * z.start) / 100);
    b = Math.ceil((n * z.end) / 100) - 1;
  } else return null;
  a = Math.max(0, Math.min(n - 1, Math.round(a)));
  b = Math.max(a, Math.min(n - 1, Math.round(b)));
  const t0 = timeRange(data, a)[0];
  const t1 = Math.min(timeRange(data, b)[1], data.t1_ns);
  if (t0 <= data.t0_ns && t1 >= data.t1_ns) return null; // the whole range: no window
  if (t1 <= t0) return null;
  return { t0, t1 };
}

/** Where the centre of cell (x, y) is drawn, in px inside a chart of this size (tests, e2e). */
export function cellCenter(data: Heatmap, x: number, y: number, width: number, height: number): [number, number] {
  const w = (width - GRID.left - GRID.right) / data.x_bins;
  const h = (height - GRID.top - GRID.bottom) / data.y_bins;
  return [GRID.left + (x + 0.5) * w, GRID.top + (data.y_bins - 1 - y + 0.5) * h];
}
