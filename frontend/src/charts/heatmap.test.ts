import { describe, expect, it } from 'vitest';
import {
  BRUSH_CURSOR,
  GRID,
  HEAT_COLORS,
  OUTSIDE_BOX_OPACITY,
  boxCells,
  boxLabel,
  brushBox,
  buildHeatmapOption,
  cellBox,
  cellCenter,
  countOf,
  heatmapZoomWindow,
  maxCount,
  metricTitle,
  timeRange,
  toData,
  xLabels,
  binWords,
  fitInstant,
  yLabels,
  type Heatmap,
} from './heatmap';

// GET /api/analyses/{id}/heatmap?metric=i2d&x_bins=6&y_bins=4 on samples/demo-cfq-starvation.blkparse.txt.
const DEMO: Heatmap = {"metric": "i2d", "idle": false, "filter": null, "kind": "request", "t0_ns": 16918, "t1_ns": 32586272689, "x_bins": 6, "x_bin_ns": 5431042629, "y_bins": 4, "y_edges_ns": [4463, 193056, 8351049, 361241899, 15626265317], "cells": [{"x": 0, "y": 0, "count": 482, "max_ns": 191516, "max_ref": {"kind": "request", "source_id": 1, "line": 2506, "pid": 4711}}, {"x": 0, "y": 1, "count": 326, "max_ns": 8056399, "max_ref": {"kind": "request", "source_id": 1, "line": 1513, "pid": 311}}, {"x": 0, "y": 2, "count": 4, "max_ns": 15290582, "max_ref": {"kind": "request", "source_id": 1, "line": 2757, "pid": 311}}, {"x": 1, "y": 0, "count": 511, "max_ns": 190011, "max_ref": {"kind": "request", "source_id": 1, "line": 8098, "pid": 2210}}, {"x": 1, "y": 1, "count": 386, "max_ns": 8094038, "max_ref": {"kind": "request", "source_id": 1, "line": 4686, "pid": 311}}, {"x": 1, "y": 2, "count": 13, "max_ns": 25695002, "max_ref": {"kind": "request", "source_id": 1, "line": 5690, "pid": 311}}, {"x": 2, "y": 0, "count": 496, "max_ns": 190785, "max_ref": {"kind": "request", "source_id": 1, "line": 12547, "pid": 2210}}, {"x": 2, "y": 1, "count": 329, "max_ns": 7902294, "max_ref": {"kind": "request", "source_id": 1, "line": 9062, "pid": 311}}, {"x": 2, "y": 2, "count": 9, "max_ns": 28305337, "max_ref": {"kind": "request", "source_id": 1, "line": 10526, "pid": 311}}, {"x": 2, "y": 3, "count": 1, "max_ns": 15626265317, "max_ref": {"kind": "request", "source_id": 1, "line": 9915, "pid": 804}}, {"x": 3, "y": 0, "count": 463, "max_ns": 190877, "max_ref": {"kind": "request", "source_id": 1, "line": 14985, "pid": 804}}, {"x": 3, "y": 1, "count": 315, "max_ns": 8049920, "max_ref": {"kind": "request", "source_id": 1, "line": 13717, "pid": 311}}, {"x": 3, "y": 2, "count": 5, "max_ns": 14292515, "max_ref": {"kind": "request", "source_id": 1, "line": 16863, "pid": 311}}, {"x": 4, "y": 0, "count": 509, "max_ns": 191963, "max_ref": {"kind": "request", "source_id": 1, "line": 19523, "pid": 2210}}, {"x": 4, "y": 1, "count": 302, "max_ns": 7946251, "max_ref": {"kind": "request", "source_id": 1, "line": 18430, "pid": 311}}, {"x": 4, "y": 2, "count": 3, "max_ns": 8733577, "max_ref": {"kind": "request", "source_id": 1, "line": 19652, "pid": 311}}, {"x": 5, "y": 0, "count": 520, "max_ns": 190968, "max_ref": {"kind": "request", "source_id": 1, "line": 22339, "pid": 2210}}, {"x": 5, "y": 1, "count": 316, "max_ns": 8172839, "max_ref": {"kind": "request", "source_id": 1, "line": 24006, "pid": 804}}, {"x": 5, "y": 2, "count": 10, "max_ns": 24142460, "max_ref": {"kind": "request", "source_id": 1, "line": 22704, "pid": 311}}], "percentiles": {"count": 5000, "p50_ns": 122480, "p90_ns": 2807347, "p99_ns": 8027564, "p999_ns": 21365864, "p9999_ns": 15626265317, "max_ns": 15626265317}};
// GET /api/analyses/{id}/heatmap?metric=wait&x_bins=4&y_bins=3 on samples/xfs-unwritten-stall.trace-cmd-report.txt.
const WAITS: Heatmap = {"metric": "wait", "idle": false, "filter": null, "kind": "wait", "t0_ns": 358613942886000, "t1_ns": 358614285351000, "x_bins": 4, "x_bin_ns": 85616251, "y_bins": 3, "y_edges_ns": [246000, 2746891, 30672407, 342495000], "cells": [{"x": 0, "y": 2, "count": 3, "max_ns": 342495000, "max_ref": {"kind": "wait", "source_id": 1, "line": 61, "pid": 251}}, {"x": 3, "y": 0, "count": 1, "max_ns": 246000, "max_ref": {"kind": "wait", "source_id": 1, "line": 95, "pid": 31161}}], "percentiles": {"count": 4, "p50_ns": 316673836, "p90_ns": 342495000, "p99_ns": 342495000, "p999_ns": 342495000, "p9999_ns": 342495000, "max_ns": 342495000}};

type Styled = { value: number[]; itemStyle?: { borderColor?: string; opacity?: number } };
type Datum = number[] | Styled;
const val = (d: Datum) => (Array.isArray(d) ? d : d.value);
const style = (d: Datum) => (Array.isArray(d) ? undefined : d.itemStyle);

type Opt = {
  xAxis: { data: string[]; name: string };
  yAxis: { data: string[]; name: string };
  visualMap: { min: number; max: number; text: string[]; dimension: number; inRange: { color: string[] }; formatter: (v: number) => string };
  series: { name: string; type: string; data: Datum[] }[];
  tooltip: { formatter: (p: unknown) => string };
  brush: { xAxisIndex: number; yAxisIndex: number; brushType: string; brushMode: string };
  dataZoom: { type: string; moveOnMouseMove?: boolean }[];
};

describe('buildHeatmapOption', () => {
  const opt = buildHeatmapOption(DEMO) as unknown as Opt;

  it('draws one datum per non-empty cell: x, y, log10 count, count, max, the event behind it', () => {
    const data = opt.series[0].data.map(val);
    // a cell without a style of its own is its bare array (an object among the data costs a model per cell)
    expect(opt.series[0].data.every((d) => Array.isArray(d))).toBe(true);
    expect(opt.series[0].type).toBe('heatmap');
    expect(opt.series[0].name).toBe('requests');
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
    // in the page's time base: from the analysis' start (the default there), as its tables write times
    const from = { origin: (DEMO.t0_ns ?? 0) - 2e9, absolute: false };
    expect(xLabels(DEMO, from)).toEqual(['+2.0', '+7.4', '+12.9', '+18.3', '+23.7', '+29.2']);
    const rel = buildHeatmapOption(DEMO, { time: from }) as unknown as Opt;
    expect(rel.xAxis.data).toEqual(xLabels(DEMO, from));
    // one request (the seed excerpt): a zero span cut in 1 ns bins was labelled "81.092496" fourteen times
    const one = { ...DEMO, t0_ns: 81092496118, t1_ns: 81092496118, x_bins: 120, x_bin_ns: 1 };
    const labels = xLabels(one);
    expect(labels[0]).toBe('81.092496118');
    expect(labels.filter((l) => l !== '')).toHaveLength(1);
    expect(binWords(one)).toBeNull();
    expect(binWords(DEMO)).not.toBeNull();
    // drawn as one column across the chart, labelled with the instant, without a slider over one column
    const fitted = fitInstant({ ...one, cells: [{ ...DEMO.cells[0], x: 0 }] });
    expect(fitted.x_bins).toBe(1);
    expect(xLabels(fitted)).toEqual(['81.092496118']);
    const fo = buildHeatmapOption(fitted) as unknown as Opt;
    expect(fo.xAxis.data).toEqual(['81.092496118']);
    expect(fo.dataZoom).toEqual([]);
    expect(cellCenter(fitted, 0, 0, 1000, 320)[0]).toBeCloseTo(GRID.left + (1000 - GRID.left - GRID.right) / 2);
    // data over more than one bin is drawn as the server cut it
    expect(fitInstant(DEMO)).toBe(DEMO);
    expect(opt.dataZoom.length).toBe(2);
    expect(opt.yAxis.name).toBe('I2D (log scale)');
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
    expect(text).toContain('<b>I2D</b> · 10.862102 s → 16.293145 s');
    expect(text).toContain('latency 361.2 ms – 15.63 s');
    expect(text).toContain('1 request · max: 15.63 s');
    expect(text).toContain('click: open the slowest request');
  });

  it('outlines the selected event', () => {
    const sel = buildHeatmapOption(DEMO, { selected: { sourceId: 1, line: 9915 } }) as unknown as Opt;
    const marked = sel.series[0].data.filter((d) => style(d));
    expect(marked.map((d) => val(d)[6])).toEqual([9915]);
    expect(style(marked[0])).toEqual({ borderColor: '#ffffff', borderWidth: 2 });
  });

  it('keeps the grid where cellCenter puts the cells, whatever the labels', () => {
    expect((opt as unknown as { grid: object }).grid).toEqual({ left: 78, right: 92, top: 14, bottom: 62, outerBoundsMode: 'none' });
  });

  it('brushes rectangles on the category axes; dragging no longer pans', () => {
    expect(opt.brush).toMatchObject({ xAxisIndex: 0, yAxisIndex: 0, brushType: 'rect', brushMode: 'single' });
    expect(opt.dataZoom.find((z) => z.type === 'inside')?.moveOnMouseMove).toBe(false);
    expect(BRUSH_CURSOR).toEqual({ type: 'takeGlobalCursor', key: 'brush', brushOption: { brushType: 'rect', brushMode: 'single' } });
  });

  it('fades the cells outside a box of its metric, not those of another heatmap', () => {
    const box = cellBox(DEMO, 2, 3, 2, 3)!;
    const o = buildHeatmapOption(DEMO, { box }) as unknown as Opt;
    const faded = o.series[0].data.filter((d) => style(d)?.opacity === OUTSIDE_BOX_OPACITY).map((d) => [val(d)[0], val(d)[1]]);
    const kept = o.series[0].data.filter((d) => !style(d)).map((d) => [val(d)[0], val(d)[1]]);
    expect(kept).toEqual([[2, 2], [2, 3], [3, 2]]);
    expect(faded).toHaveLength(16);
    const other = buildHeatmapOption(DEMO, { box: { ...box, metric: 'd2c' } }) as unknown as Opt;
    expect(other.series[0].data.every((d) => !style(d))).toBe(true);
  });
});

describe('waits and calls', () => {
  const opt = buildHeatmapOption(WAITS) as unknown as Opt;

  it('names the metric and counts waits', () => {
    expect(metricTitle(WAITS)).toBe('wait');
    expect(metricTitle({ metric: 'wait', filter: 'xfs_ilock' })).toBe('wait on xfs_ilock');
    expect(metricTitle({ metric: 'wait', filter: null, idle: true })).toBe('wait (idle sleeps too)');
    expect(metricTitle({ metric: 'func', filter: 'xfs_ilock' })).toBe('xfs_ilock duration');
    expect(metricTitle({ metric: 'q2c', filter: null })).toBe('Q2C');
    expect(opt.yAxis.name).toBe('wait (log scale)');
    expect(opt.series[0].name).toBe('waits');
    expect(opt.visualMap.text).toEqual(['3 waits', '1 wait']);
    expect(countOf('call', 1)).toBe('1 call');
    expect(countOf('call', 12345)).toBe('12,345 calls');
    expect(yLabels(WAITS)).toEqual(['246 µs', '2.75 ms', '30.7 ms']);
    // a narrow range (waits on xfs_ilock: 316.7 ms … 320.9 ms): as many digits as tell the bins apart
    const edges = [316673836, 317199295, 317725625, 318252829, 318780908, 319309863, 319839696, 320370408, 320902000];
    expect(yLabels({ ...WAITS, y_bins: 8, y_edges_ns: edges })).toEqual(
      ['316.7 ms', '317.2 ms', '317.7 ms', '318.3 ms', '318.8 ms', '319.3 ms', '319.8 ms', '320.4 ms'],
    );
    expect(yLabels({ ...WAITS, y_bins: 2, y_edges_ns: [316673836, 318780908, 320902000] })).toEqual(['317 ms', '319 ms']);
    expect(yLabels({ ...WAITS, y_bins: 3, y_edges_ns: [1000, 1001, 1002, 1003] })).toEqual(['1 µs', '1.001 µs', '1.002 µs']);
  });

  it('tooltips a cell of waits: clicking lists them', () => {
    const text = opt.tooltip.formatter({ value: [0, 2, Math.log10(3), 3, 342495000, 1, 61] });
    expect(text).toContain('<b>wait</b> · 358613.942886 s → 358614.028502 s');
    expect(text).toContain('latency 30.67 ms – 342.5 ms');
    expect(text).toContain('3 waits · max: 342.5 ms');
    expect(text).toContain('click: list the waits of this cell');
  });

  it('keeps the wait behind a cell as its datum', () => {
    expect(toData(WAITS.cells)).toEqual([
      [0, 2, Math.log10(3), 3, 342495000, 1, 61],
      [3, 0, 0, 1, 246000, 1, 95],
    ]);
  });
});

describe('boxes of cells', () => {
  it('turns a range of cells into the exact box the server counts in them', () => {
    // the xfsaild cell: its time bin, and the top latency bin (open above)
    expect(cellBox(DEMO, 2, 2, 3, 3)).toEqual({ metric: 'i2d', t0: 16918 + 2 * 5431042629, t1: 16918 + 3 * 5431042629 - 1, latMin: 361241899, latMax: null });
    // bin 0 is open below; the last time bin ends at t1; corners in any order; clamped to the grid
    expect(cellBox(DEMO, 5, 4, 1, 0)).toEqual({ metric: 'i2d', t0: 16918 + 4 * 5431042629, t1: 32586272689, latMin: null, latMax: 8351049 });
    expect(cellBox(DEMO, -3, 99, -1, 99)).toEqual({ metric: 'i2d', t0: 16918, t1: 32586272689, latMin: null, latMax: null });
    expect(cellBox({ ...DEMO, t0_ns: null, t1_ns: null, x_bin_ns: null, y_edges_ns: [], cells: [] }, 0, 0, 0, 0)).toBeNull();
  });

  it('reads the brushed rectangle: category indices, rounded to the cells it touches', () => {
    expect(brushBox(DEMO, { coordRange: [[1.6, 3.2], [2.4, 3]] })).toEqual(cellBox(DEMO, 2, 3, 2, 3));
    expect(brushBox(DEMO, { coordRange: [[0, 0], [0, 0]] })).toEqual(cellBox(DEMO, 0, 0, 0, 0));
    expect(brushBox(DEMO, {})).toBeNull();
    expect(brushBox(DEMO, undefined)).toBeNull();
    expect(brushBox(DEMO, { coordRange: [[NaN, 1], [0, 1]] })).toBeNull();
  });

  it('finds the cells a box overlaps, also after the heatmap is binned anew', () => {
    expect(boxCells(DEMO, cellBox(DEMO, 2, 3, 1, 2)!)).toEqual({ x0: 2, x1: 3, y0: 1, y1: 2 });
    expect(boxCells(DEMO, cellBox(DEMO, 0, 5, 0, 3)!)).toEqual({ x0: 0, x1: 5, y0: 0, y1: 3 });
    // a box from other bins: every cell it touches
    expect(boxCells(DEMO, { metric: 'i2d', t0: 6e9, t1: 12e9, latMin: 200000, latMax: 361241900 })).toEqual({ x0: 1, x1: 2, y0: 1, y1: 3 });
    expect(boxCells(DEMO, { metric: 'i2d', t0: 4e10, t1: 5e10, latMin: null, latMax: null })).toBeNull();
  });

  it('labels a box with units and its open ends', () => {
    expect(boxLabel(cellBox(DEMO, 2, 2, 3, 3)!)).toBe('10.862102 s → 16.293145 s · latency ≥ 361.2 ms');
    expect(boxLabel(cellBox(DEMO, 0, 0, 0, 1)!)).toBe('0.000017 s → 5.431060 s · latency < 8.35 ms');
    expect(boxLabel(cellBox(DEMO, 0, 0, 1, 2)!)).toBe('0.000017 s → 5.431060 s · 193.1 µs ≤ latency < 361.2 ms');
    expect(boxLabel({ metric: 'wait', t0: 0, t1: 1e9, latMin: null, latMax: null })).toBe('0.000000 s → 1.000000 s · any latency');
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
