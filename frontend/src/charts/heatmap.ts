// Latency heatmap: requests counted per time bin (x, seconds) × latency bin (y, equal steps in log10,
// labelled with units), binned on the server. Colour = count, on a log scale (legend in requests).
// Clicking a cell opens the request behind its max.
import type { paths } from '../api/schema';
import { formatAbsTime, formatCount, formatNs, formatNsShort } from '../lib/format';
import type { RequestRef } from '../state/viewState';
import { secondDecimals } from './latencyOverTime';
import { C, axisCommon, baseTextStyle, tooltipStyle } from './theme';
import type { ComposeOption } from 'echarts/core';
import type { HeatmapSeriesOption } from 'echarts/charts';
import type {
  DataZoomComponentOption,
  GridComponentOption,
  TooltipComponentOption,
  VisualMapComponentOption,
} from 'echarts/components';

/** The heatmap's option type: its series and visualMap are registered in LatencyHeatmap.tsx. */
export type HeatmapOption = ComposeOption<
  HeatmapSeriesOption | GridComponentOption | TooltipComponentOption | DataZoomComponentOption | VisualMapComponentOption
>;

export type Heatmap =
  paths['/api/analyses/{analysis_id}/heatmap']['get']['responses'][200]['content']['application/json'];
export type HeatmapCell = Heatmap['cells'][number];

/** One heatmap datum: [x bin, y bin, log10(count) (colour), count, max (ns), source_id, line]. */
export type HeatmapDatum = [number, number, number, number, number, number, number];

/** Colours from few to many requests (the lowest still stands out on the panel). */
export const HEAT_COLORS = ['#2b4c7e', '#3f7cac', '#7a9e3e', '#f2cc60', '#ff8a5b', '#ff4d4d'];

export const GRID = { left: 78, right: 92, top: 14, bottom: 62 } as const;

export function toData(cells: HeatmapCell[]): HeatmapDatum[] {
  return cells.map((c) => [c.x, c.y, Math.log10(c.count), c.count, c.max_ns, c.max_source_id, c.max_line]);
}

/** [start, end) of time bin x, ns. */
export function timeRange(data: Heatmap, x: number): [number, number] {
  const t0 = data.t0_ns ?? 0;
  const bin = data.x_bin_ns ?? 1;
  return [t0 + x * bin, Math.min(t0 + (x + 1) * bin, (data.t1_ns ?? t0) + 1)];
}

/** The x axis labels: each time bin's start, in seconds. */
export function xLabels(data: Heatmap): string[] {
  const dec = secondDecimals((data.t1_ns ?? 0) - (data.t0_ns ?? 0));
  const n = data.x_bin_ns === null ? 0 : data.x_bins;
  return Array.from({ length: n }, (_, x) => (timeRange(data, x)[0] / 1e9).toFixed(dec));
}

/** The y axis labels: each latency bin's lower edge, with its unit ("4.46 µs", "15.6 s"). */
export function yLabels(data: Heatmap): string[] {
  return data.y_edges_ns.slice(0, -1).map((e) => formatNsShort(e));
}

export function maxCount(data: Heatmap): number {
  return data.cells.reduce((m, c) => Math.max(m, c.count), 0);
}

export function buildHeatmapOption(data: Heatmap, selected: RequestRef | null = null): HeatmapOption {
  const points = toData(data.cells);
  const top = maxCount(data);
  const dec = secondDecimals((data.t1_ns ?? 0) - (data.t0_ns ?? 0));
  const xl = xLabels(data);
  return {
    backgroundColor: 'transparent',
    animation: false,
    textStyle: baseTextStyle,
    grid: { ...GRID },
    tooltip: {
      ...tooltipStyle,
      trigger: 'item',
      formatter: (p: unknown) => {
        const v = (p as { value: HeatmapDatum }).value;
        const [x, y, , count, max] = v;
        const [a, b] = timeRange(data, x);
        return [
          `<b>${data.metric.toUpperCase()}</b> · ${formatAbsTime(a)} → ${formatAbsTime(b)}`,
          `latency ${formatNs(data.y_edges_ns[y])} – ${formatNs(data.y_edges_ns[y + 1])}`,
          `${formatCount(count)} ${count === 1 ? 'request' : 'requests'} · max: ${formatNs(max)}`,
          `<span style="color:${C.muted}">click: open the slowest request</span>`,
        ].join('<br/>');
      },
    },
    xAxis: {
      ...axisCommon,
      type: 'category',
      data: xl,
      name: 'time (s)',
      nameLocation: 'middle',
      nameGap: 24,
      splitArea: { show: false },
      axisLabel: { ...axisCommon.axisLabel, hideOverlap: true },
    },
    yAxis: {
      ...axisCommon,
      type: 'category',
      data: yLabels(data),
      name: 'latency (log scale)',
      nameLocation: 'middle',
      nameGap: 60,
      splitArea: { show: false },
      axisLabel: { ...axisCommon.axisLabel, interval: Math.max(0, Math.ceil(data.y_bins / 12) - 1) },
    },
    visualMap: {
      type: 'continuous' as const,
      dimension: 2,
      min: 0,
      max: Math.max(Math.log10(Math.max(top, 1)), 0.001),
      calculable: false,
      orient: 'vertical',
      right: 4,
      top: 'middle',
      itemHeight: 140,
      itemWidth: 12,
      text: [`${formatCount(top)} requests`, '1 request'],
      textStyle: { color: C.muted, fontSize: 10 },
      formatter: (v: unknown) => formatCount(Math.round(10 ** Number(v))),
      inRange: { color: [...HEAT_COLORS] },
    },
    dataZoom: [
      {
        type: 'slider',
        xAxisIndex: 0,
        filterMode: 'none',
        height: 18,
        bottom: 6,
        borderColor: C.axis,
        textStyle: { color: C.muted, fontSize: 10 },
        labelFormatter: (_: number, v: string) => `${Number(v).toFixed(dec)} s`,
      },
      { type: 'inside', xAxisIndex: 0, filterMode: 'none', zoomOnMouseWheel: 'shift', moveOnMouseWheel: false },
    ],
    series: [
      {
        name: 'requests',
        type: 'heatmap',
        data: points.map((p) =>
          selected && p[5] === selected.sourceId && p[6] === selected.line
            ? { value: p, itemStyle: { borderColor: C.selected, borderWidth: 2 } }
            : { value: p },
        ),
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
