import { describe, expect, it } from 'vitest';
import {
  HEAT_COLORS,
  buildHeatmapOption,
  cellCenter,
  heatmapZoomWindow,
  maxCount,
  timeRange,
  toData,
  xLabels,
  yLabels,
  type Heatmap,
} from './heatmap';

// GET /api/analyses/{id}/heatmap?metric=i2d&x_bins=6&y_bins=4 on samples/demo-cfq-starvation.blkparse.txt.
const DEMO: Heatmap = {"metric": "i2d", "t0_ns": 16918, "t1_ns": 32586272689, "x_bins": 6, "x_bin_ns": 5431042629, "y_bins": 4, "y_edges_ns": [4463, 193056, 8351049, 361241899, 15626265317], "cells": [{"x": 0, "y": 0, "count": 482, "max_ns": 191516, "max_source_id": 1, "max_line": 2506}, {"x": 0, "y": 1, "count": 326, "max_ns": 8056399, "max_source_id": 1, "max_line": 1513}, {"x": 0, "y": 2, "count": 4, "max_ns": 15290582, "max_source_id": 1, "max_line": 2757}, {"x": 1, "y": 0, "count": 511, "max_ns": 190011, "max_source_id": 1, "max_line": 8098}, {"x": 1, "y": 1, "count": 386, "max_ns": 8094038, "max_source_id": 1, "max_line": 4686}, {"x": 1, "y": 2, "count": 13, "max_ns": 25695002, "max_source_id": 1, "max_line": 5690}, {"x": 2, "y": 0, "count": 496, "max_ns": 190785, "max_source_id": 1, "max_line": 12547}, {"x": 2, "y": 1, "count": 329, "max_ns": 7902294, "max_source_id": 1, "max_line": 9062}, {"x": 2, "y": 2, "count": 9, "max_ns": 28305337, "max_source_id": 1, "max_line": 10526}, {"x": 2, "y": 3, "count": 1, "max_ns": 15626265317, "max_source_id": 1, "max_line": 9915}, {"x": 3, "y": 0, "count": 463, "max_ns": 190877, "max_source_id": 1, "max_line": 14985}, {"x": 3, "y": 1, "count": 315, "max_ns": 8049920, "max_source_id": 1, "max_line": 13717}, {"x": 3, "y": 2, "count": 5, "max_ns": 14292515, "max_source_id": 1, "max_line": 16863}, {"x": 4, "y": 0, "count": 509, "max_ns": 191963, "max_source_id": 1, "max_line": 19523}, {"x": 4, "y": 1, "count": 302, "max_ns": 7946251, "max_source_id": 1, "max_line": 18430}, {"x": 4, "y": 2, "count": 3, "max_ns": 8733577, "max_source_id": 1, "max_line": 19652}, {"x": 5, "y": 0, "count": 520, "max_ns": 190968, "max_source_id": 1, "max_line": 22339}, {"x": 5, "y": 1, "count": 316, "max_ns": 8172839, "max_source_id": 1, "max_line": 24006}, {"x": 5, "y": 2, "count": 10, "max_ns": 24142460, "max_source_id": 1, "max_line": 22704}], "percentiles": {"count": 5000, "p50_ns": 122480, "p90_ns": 2807347, "p99_ns": 8027564, "p999_ns": 21365864, "p9999_ns": 15626265317, "max_ns": 15626265317}};

type Opt = {
  xAxis: { data: string[]; name: string };
  yAxis: { data: string[]; name: string };
  visualMap: { min: number; max: number; text: string[]; dimension: number; inRange: { color: string[] }; formatter: (v: number) => string };
  series: { type: string; data: { value: number[]; itemStyle?: { borderColor: string } }[] }[];
  tooltip: { formatter: (p: unknown) => string };
};

describe('buildHeatmapOption', () => {
  const opt = buildHeatmapOption(DEMO) as unknown as Opt;

  it('draws one datum per non-empty cell: x, y, log10 count, count, max, request', () => {
    const data = opt.series[0].data.map((d) => d.value);
    expect(opt.series[0].type).toBe('heatmap');
    expect(data).toHaveLength(19);
    expect(data[0]).toEqual([0, 0, Math.log10(482), 482, 191516, 1, 2506]);
    // the xfsaild write: alone in the top latency bin
    expect(data.filter((d) => d[1] === 3)).toEqual([[2, 3, 0, 1, 15626265317, 1, 9915]]);
    expect(toData(DEMO.cells).reduce((n, d) => n + d[3], 0)).toBe(5000);
  });

  it('labels time bins in seconds and latency bins with units', () => {
    expect(opt.xAxis.name).toBe('time (s)');
    expect(xLabels(DEMO)).toEqual(['0.0', '5.4', '10.9', '16.3', '21.7', '27.2']);
    expect(opt.xAxis.data).toEqual(xLabels(DEMO));
    expect(opt.yAxis.name).toBe('latency (log scale)');
    expect(yLabels(DEMO)).toEqual(['4.46 µs', '193 µs', '8.35 ms', '361 ms']);
    expect(opt.yAxis.data).toEqual(yLabels(DEMO));
  });

  it('colours by count on a log scale, legend in requests', () => {
    expect(maxCount(DEMO)).toBe(520);
    expect(opt.visualMap.dimension).toBe(2);
    expect(opt.visualMap.min).toBe(0);
    expect(opt.visualMap.max).toBeCloseTo(Math.log10(520));
    expect(opt.visualMap.text).toEqual(['520 requests', '1 request']);
    expect(opt.visualMap.formatter(Math.log10(520))).toBe('520');
    expect(opt.visualMap.inRange.color).toEqual(HEAT_COLORS);
  });

  it('tooltips the time range, latency range, count and max with units', () => {
    const text = opt.tooltip.formatter({ value: [2, 3, 0, 1, 15626265317, 1, 9915] });
    expect(text).toContain('10.862102 s → 16.293145 s');
    expect(text).toContain('latency 361.2 ms – 15.63 s');
    expect(text).toContain('1 request · max: 15.63 s');
  });

  it('outlines the selected request', () => {
    const sel = buildHeatmapOption(DEMO, { sourceId: 1, line: 9915 }) as unknown as Opt;
    const marked = sel.series[0].data.filter((d) => d.itemStyle);
    expect(marked.map((d) => d.value[6])).toEqual([9915]);
  });
});

describe('time window and geometry', () => {
  it('bins time from t0 in x_bin_ns steps', () => {
    expect(timeRange(DEMO, 0)).toEqual([16918, 16918 + 5431042629]);
    expect(timeRange(DEMO, 5)[1]).toBe(32586272690); // the last bin ends at t1 (inclusive)
  });

  it('turns a zoom on the category axis into a window of whole bins', () => {
    expect(heatmapZoomWindow(DEMO, { batch: [{ startValue: 2, endValue: 3 }] })).toEqual({
      t0: 16918 + 2 * 5431042629,
      t1: 16918 + 4 * 5431042629,
    });
    expect(heatmapZoomWindow(DEMO, { start: 50, end: 100 })).toEqual({ t0: 16918 + 3 * 5431042629, t1: 32586272689 });
    expect(heatmapZoomWindow(DEMO, { start: 0, end: 100 })).toBeNull();
  });

  it('places a cell centre inside the grid', () => {
    const [x, y] = cellCenter(DEMO, 2, 3, 1000, 320);
    expect(x).toBeCloseTo(78 + 2.5 * ((1000 - 78 - 92) / 6));
    expect(y).toBeCloseTo(14 + 0.5 * ((320 - 14 - 62) / 4));
  });
});
