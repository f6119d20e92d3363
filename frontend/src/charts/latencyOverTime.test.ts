import { describe, expect, it } from 'vitest';
import type { LatencyOverTime } from '../api/types';
import { buildLatencyOverTimeOption, secondDecimals, toPoints, zoomWindow, LOG_FLOOR_MS } from './latencyOverTime';

// The seed excerpt as the backend returns it.
const data: LatencyOverTime = {
  t0_ns: 81092472813,
  t1_ns: 96718761435,
  bucket_ns: 1562628863,
  series: {
    i2d: [
      { t_ns: 81092472813, count: 1, p50_ns: 15626265317, max_ns: 15626265317, max_source_id: 1, max_line: 1 },
      { t_ns: 82655101676, count: 0, p50_ns: null as unknown as number, max_ns: null as unknown as number, max_source_id: null as unknown as number, max_line: null as unknown as number },
    ],
    d2c: [{ t_ns: 96000000000, count: 3, p50_ns: 2000, max_ns: 0, max_source_id: 1, max_line: 40 }],
  },
};

describe('buildLatencyOverTimeOption', () => {
  const opt = buildLatencyOverTimeOption(data) as any;

  it('has a log y axis (ticks with their unit) and a time axis in seconds spanning the data window', () => {
    expect(opt.yAxis.type).toBe('log');
    expect(opt.yAxis.name).toBe('latency (log scale)');
    expect(opt.xAxis.type).toBe('value');
    expect(opt.xAxis.name).toBe('time (s)');
    expect(opt.xAxis.min).toBeCloseTo(81.092472813, 9);
    expect(opt.xAxis.max).toBeCloseTo(96.718761435, 9);
    expect(opt.xAxis.axisLabel.formatter(81.0924)).toBe('81.1');
    expect(opt.yAxis.axisLabel.formatter(0.001)).toBe('1 µs');
    expect(opt.yAxis.axisLabel.formatter(100)).toBe('100 ms');
    expect(opt.yAxis.axisLabel.formatter(10000)).toBe('10 s');
  });

  it("writes its time axis in the page's time base: from the analysis' start by default, as the tables do", () => {
    const rel = buildLatencyOverTimeOption(data, null, { origin: 81092472813, absolute: false }) as any;
    expect(rel.xAxis.axisLabel.formatter(81.0924)).toBe('−0.0');
    expect(rel.xAxis.axisLabel.formatter(91.0924)).toBe('+10.0');
    expect(rel.dataZoom[0].labelFormatter(96.7)).toBe('+15.6 s');
    const abs = buildLatencyOverTimeOption(data, null, { origin: 81092472813, absolute: true }) as any;
    expect(abs.xAxis.axisLabel.formatter(91.0924)).toBe('91.1');
  });

  it('draws the bucket maxima as points carrying the request behind them', () => {
    const [i2d, d2c] = opt.series;
    expect(i2d.name).toBe('I2D max');
    expect(i2d.type).toBe('scatter');
    expect(i2d.data).toHaveLength(1); // the empty bucket is not drawn
    expect(i2d.data[0]).toEqual([81.092472813, 15626.265317, 1, 1, 1, 15626.265317]); // bare: no model per point
    expect(d2c.name).toBe('D2C max');
    expect(d2c.data[0][1]).toBe(LOG_FLOOR_MS); // 0 ns cannot sit on a log axis
  });

  it('marks the selected request', () => {
    const sel = buildLatencyOverTimeOption(data, { sourceId: 1, line: 1 }) as any;
    expect(sel.series[0].data[0].symbolSize).toBe(13);
    expect(sel.series[0].data[0].value).toEqual([81.092472813, 15626.265317, 1, 1, 1, 15626.265317]);
    expect(sel.series[0].data[0].itemStyle.borderWidth).toBe(2);
    expect(sel.series[1].data[0].symbolSize).toBeUndefined();
    expect(Array.isArray(sel.series[1].data[0])).toBe(true);
  });

  it('has a dataZoom on the time axis that does not filter the data', () => {
    expect(opt.dataZoom.map((z: any) => z.type)).toEqual(['slider', 'inside']);
    expect(opt.dataZoom.every((z: any) => z.xAxisIndex === 0 && z.filterMode === 'none')).toBe(true);
  });

  it('tooltip shows units', () => {
    const html = opt.tooltip.formatter({ seriesName: 'I2D max', value: opt.series[0].data[0] });
    expect(html).toContain('max 15.63 s');
    expect(html).toContain('81.092473 s');
  });

  it('copes with an empty selection', () => {
    const empty = buildLatencyOverTimeOption({ t0_ns: null, t1_ns: null, bucket_ns: null, series: { i2d: [], d2c: [] } }) as any;
    expect(empty.series[0].data).toEqual([]);
    expect(empty.xAxis.max).toBeGreaterThan(empty.xAxis.min);
  });
});

describe('helpers', () => {
  it('toPoints skips empty buckets', () => {
    expect(toPoints(data.series.i2d)).toHaveLength(1);
  });
  it('secondDecimals', () => {
    expect(secondDecimals(15.6e9)).toBe(1);
    expect(secondDecimals(2e9)).toBe(2);
    expect(secondDecimals(5e6)).toBe(4);
  });
  it('zoomWindow maps a slider range to ns, ignores the full range', () => {
    expect(zoomWindow(data, { start: 0, end: 100 })).toBeNull();
    const w = zoomWindow(data, { start: 50, end: 100 })!;
    expect(w.t0).toBe(Math.round(81092472813 + (96718761435 - 81092472813) / 2));
    expect(w.t1).toBe(96718761435);
    expect(zoomWindow(data, { batch: [{ startValue: 85, endValue: 90 }] })).toEqual({ t0: 85e9, t1: 90e9 });
  });
});
