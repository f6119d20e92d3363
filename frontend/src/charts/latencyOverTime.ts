// I2D and D2C over time: per time bucket the maximum (a point; clicking it opens the request
// behind it), server-side aggregated. x = absolute time in seconds, y = latency in ms, log scale.
import type { LatencyBucket, LatencyOverTime } from '../api/types';
import { ABSOLUTE_TIME, formatCount, formatMsTick, formatNs, formatTime, secondsLabel, type TimeBase } from '../lib/format';
import type { RequestRef } from '../state/viewState';
import { html, tooltipLines } from './html';
import { C, axisCommon, baseTextStyle, tooltipStyle } from './theme';
import type { EChartsOption } from './types';

/** One scatter point: [t (s), max (ms), source_id, line, count, p50 (ms)]. */
export type LatencyPoint = [number, number, number | null, number | null, number, number | null];

/** The smallest latency drawn on the log axis (1 ns); a 0 ns maximum is drawn there. */
export const LOG_FLOOR_MS = 1e-6;

export function toPoints(buckets: LatencyBucket[]): LatencyPoint[] {
  const out: LatencyPoint[] = [];
  for (const b of buckets) {
    if (b.max_ns === null || b.count === 0) continue;
    out.push([
      b.t_ns / 1e9,
      Math.max(b.max_ns / 1e6, LOG_FLOOR_MS),
      b.max_source_id,
      b.max_line,
      b.count,
      b.p50_ns === null ? null : Math.max(b.p50_ns / 1e6, LOG_FLOOR_MS),
    ]);
  }
  return out;
}

/** Decimals for second labels so that neighbouring ticks differ. */
export function secondDecimals(spanNs: number): number {
  if (spanNs >= 100e9) return 0;
  if (spanNs >= 10e9) return 1;
  if (spanNs >= 1e9) return 2;
  if (spanNs >= 100e6) return 3;
  if (spanNs >= 1e6) return 4;
  return 6;
}

function series(name: string, color: string, points: LatencyPoint[], selected: RequestRef | null) {
  return {
    name,
    type: 'scatter' as const,
    symbolSize: 7,
    itemStyle: { color, opacity: 0.9 },
    emphasis: { scale: 1.6 },
    large: false,
    // a point without a style of its own is its bare array: one object among the data makes ECharts build an
    // item model per point
    data: points.map((p) =>
      selected && p[2] === selected.sourceId && p[3] === selected.line
        ? { value: p, symbolSize: 13, itemStyle: { color, borderColor: C.selected, borderWidth: 2, opacity: 1 } }
        : p,
    ),
  };
}

export function buildLatencyOverTimeOption(data: LatencyOverTime, selected: RequestRef | null = null, time: TimeBase = ABSOLUTE_TIME): EChartsOption {
  const i2d = toPoints(data.series.i2d);
  const d2c = toPoints(data.series.d2c);
  const t0 = data.t0_ns ?? 0;
  const t1 = data.t1_ns ?? t0 + 1e9;
  const dec = secondDecimals(t1 - t0);
  return {
    backgroundColor: 'transparent',
    animation: false,
    textStyle: baseTextStyle,
    color: [C.i2d, C.d2c],
    legend: {
      top: 0,
      right: 8,
      textStyle: { color: C.text, fontSize: 11 },
      data: ['I2D max', 'D2C max'],
    },
    grid: { left: 70, right: 24, top: 30, bottom: 66 },
    tooltip: {
      ...tooltipStyle,
      trigger: 'item',
      formatter: (p: unknown) => {
        const { seriesName, value } = p as { seriesName: string; value: LatencyPoint };
        const [t, maxMs, , , count, p50Ms] = value;
        return tooltipLines(
          html`<b>${seriesName}</b> · bucket at ${formatTime(Math.round(t * 1e9), time)}`,
          html`max ${formatNs(maxMs * 1e6)} · p50 ${p50Ms === null ? '—' : formatNs(p50Ms * 1e6)}`,
          html`${formatCount(count)} requests in ${formatNs(data.bucket_ns)} bucket`,
          html`<span style="color:${C.muted}">click: open the slowest request</span>`,
        );
      },
    },
    xAxis: {
      ...axisCommon,
      type: 'value',
      name: 'time (s)',
      nameLocation: 'middle',
      nameGap: 24,
      min: t0 / 1e9,
      max: t1 / 1e9,
      splitLine: { show: false },
      axisLabel: { ...axisCommon.axisLabel, formatter: (v: number) => secondsLabel(v * 1e9, dec, time), hideOverlap: true },
    },
    yAxis: {
      ...axisCommon,
      type: 'log',
      logBase: 10,
      name: 'latency (log scale)', // the ticks carry their unit (1 µs … 10 s)
      nameLocation: 'middle',
      nameGap: 52,
      axisLabel: { ...axisCommon.axisLabel, formatter: (v: number) => formatMsTick(v) },
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
        labelFormatter: (v: number) => `${secondsLabel(Number(v) * 1e9, dec, time)} s`,
      },
      { type: 'inside', xAxisIndex: 0, filterMode: 'none', zoomOnMouseWheel: 'shift', moveOnMouseWheel: false },
    ],
    series: [series('I2D max', C.i2d, i2d, selected), series('D2C max', C.d2c, d2c, selected)],
  };
}

/** The time window [t0, t1) in ns that a dataZoom event selects on this chart's x axis (seconds). */
export function zoomWindow(
  data: LatencyOverTime,
  ev: { start?: number; end?: number; startValue?: number; endValue?: number; batch?: { start?: number; end?: number; startValue?: number; endValue?: number }[] },
): { t0: number; t1: number } | null {
  const z = ev.batch?.[0] ?? ev;
  if (data.t0_ns === null || data.t1_ns === null) return null;
  const span = data.t1_ns - data.t0_ns;
  let t0: number;
  let t1: number;
  if (z.startValue !== undefined && z.endValue !== undefined) {
    t0 = Math.round(z.startValue * 1e9);
    t1 = Math.round(z.endValue * 1e9);
  } else if (z.start !== undefined && z.end !== undefined) {
    t0 = Math.round(data.t0_ns + (span * z.start) / 100);
    t1 = Math.round(data.t0_ns + (span * z.end) / 100);
  } else return null;
  if (t1 <= t0) return null;
  if (t0 <= data.t0_ns && t1 >= data.t1_ns) return null; // the whole range: no window
  return { t0: Math.max(t0, data.t0_ns), t1: Math.min(t1, data.t1_ns) };
}
