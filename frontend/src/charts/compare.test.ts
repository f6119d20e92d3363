import { describe, expect, it } from 'vitest';
import {
  buildCompareHeatmapOption,
  deltaClass,
  deltaText,
  formatFigure,
  formatRel,
  relTimeLabels,
  relTimeUnit,
  sideTimeBins,
  type Delta,
  type HeatmapPair,
} from './compare';

// the I2D pair of tests/golden/compare/loop-vs-lvm.json (x_bins 8, y_bins 5), cut to a few cells
const PAIR: HeatmapPair = {
  metric: 'i2d',
  kind: 'request',
  x_time: 'shared',
  x_bin_ns: 13777235,
  x_bins: 8,
  y_bins: 5,
  y_edges_ns: [1000, 4370, 19096, 83446, 364654, 2131716],
  max_count: 1023,
  a: {
    t0_ns: 1079,
    t1_ns: 30924657,
    x_bin_ns: 13777235,
    x_bins: 3,
    cells: [
      { x: 0, y: 0, count: 1023, max_ns: 1523, max_ref: { source_id: 1, line: 5, pid: 1016 } },
      { x: 1, y: 1, count: 1, max_ns: 4400, max_ref: { source_id: 1, line: 90, pid: 1016 } },
    ],
    percentiles: { count: 1024, p50_ns: 281, p90_ns: 307, p99_ns: 540, p999_ns: 1200, p9999_ns: 1523, max_ns: 1523 },
  },
  b: null,
  deltas: [],
};

const d = (over: Partial<Delta>): Delta => ({ metric: 'p99_ns', unit: 'ns', a: 1, b: 1, abs: 0, rel: 0, verdict: 'same', ...over });

describe('compare heatmap option', () => {
  it('puts both sides on the pair scale: its bins, edges and colour maximum', () => {
    const o = buildCompareHeatmapOption(PAIR, 'a', 'Before: loop') as {
      xAxis: { data: string[]; name: string };
      yAxis: { data: string[] };
      visualMap: { max: number; text: string[] };
      series: { data: number[][] }[];
    };
    expect(o.xAxis.data).toHaveLength(8); // the longer side's bins, though side a fills 3
    expect(o.xAxis.name).toBe("time since the side's start (ms)");
    expect(o.xAxis.data.slice(0, 3)).toEqual(['0', '14', '28']);
    expect(o.yAxis.data).toEqual(['1 µs', '4.37 µs', '19.1 µs', '83.4 µs', '365 µs']);
    expect(o.visualMap.max).toBeCloseTo(Math.log10(1023));
    expect(o.visualMap.text).toEqual(['1,023', '1']);
    expect(o.series[0].data[0]).toEqual([0, 0, Math.log10(1023), 1023, 1523, 1, 5]);
    const b = buildCompareHeatmapOption(PAIR, 'b', 'After') as { series: { data: unknown[] }[]; yAxis: { data: string[] } };
    expect(b.series[0].data).toEqual([]); // side b has none: an empty chart on the same axes
    expect(b.yAxis.data).toEqual(o.yAxis.data);
  });

  it('escapes the side label and names the cell in its tooltip', () => {
    const o = buildCompareHeatmapOption(PAIR, 'a', 'Before: <img src=x onerror=alert(1)>') as {
      tooltip: { formatter: (p: unknown) => string };
    };
    const tip = o.tooltip.formatter({ value: [1, 1, 0, 1, 4400, 1, 90] });
    expect(tip).not.toContain('<img');
    expect(tip).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(tip).toContain('+13.78 ms → +27.55 ms');
    expect(tip).toContain('latency 4.37 µs – 19.10 µs');
    expect(tip).toContain('1 request · max: 4.40 µs');
  });

  it("draws each side on its own time axis (x_time own), the latency edges and colours still the pair's", () => {
    // the 31 ms loop capture in 8 bins of its own (3.87 ms) beside a 110 s capture: not 1 bin of 13.8 s
    const a = { ...PAIR.a!, x_bin_ns: 3865448, x_bins: 8 };
    const own: HeatmapPair = { ...PAIR, x_time: 'own', x_bin_ns: 13777235381, a, b: { ...a, t1_ns: 110e9, x_bin_ns: 13777235381 } };
    type Opt = {
      xAxis: { data: string[]; name: string };
      yAxis: { data: string[] };
      visualMap: { max: number };
      tooltip: { formatter: (p: unknown) => string };
    };
    const oa = buildCompareHeatmapOption(own, 'a', 'Before') as Opt;
    const ob = buildCompareHeatmapOption(own, 'b', 'After') as Opt;
    expect(sideTimeBins(own, 'a')).toEqual({ x_bin_ns: 3865448, x_bins: 8 });
    expect(oa.xAxis.data).toHaveLength(8);
    expect(oa.xAxis.data.slice(0, 3)).toEqual(['0.0', '3.9', '7.7']);
    expect(oa.xAxis.name).toBe("time since the side's start (ms)");
    expect(ob.xAxis.name).toBe("time since the side's start (s)");
    expect(ob.xAxis.data.slice(0, 2)).toEqual(['0', '14']);
    expect(oa.tooltip.formatter({ value: [1, 1, 0, 1, 4400, 1, 90] })).toContain('+3.87 ms → +7.73 ms');
    const shared = buildCompareHeatmapOption(PAIR, 'a', 'Before') as Opt;
    expect([oa.yAxis.data, oa.visualMap.max]).toEqual([shared.yAxis.data, shared.visualMap.max]);
    expect(ob.yAxis.data).toEqual(shared.yAxis.data);
    // a side with no events keeps the pair's axis
    expect(sideTimeBins({ ...own, a: null }, 'a')).toEqual({ x_bin_ns: 13777235381, x_bins: 8 });
  });

  it('labels short spans in their own unit', () => {
    expect(relTimeUnit({ x_bin_ns: 1000, x_bins: 10 })).toBe('µs');
    expect(relTimeLabels({ x_bin_ns: 1000, x_bins: 3 })).toEqual(['0', '1', '2']);
    expect(relTimeLabels({ x_bin_ns: 1_500_000_000, x_bins: 3 })).toEqual(['0.0', '1.5', '3.0']);
  });
});

describe('deltas', () => {
  it('says b − a with its unit and the relative change', () => {
    expect(deltaText(d({ a: 1_200_000, b: 3_410_000, abs: 2_210_000, rel: 1.8417, verdict: 'worse' }))).toBe('+2.21 ms (+184 %)');
    expect(deltaText(d({ unit: 'requests', a: 1024, b: 980, abs: -44, rel: -0.04297, verdict: null }))).toBe(
      '−44 requests (−4.3 %)',
    );
    expect(deltaText(d({ a: 281, b: 12000, abs: 11719, rel: 41.7046 }))).toBe('+11.72 µs (42.7×)');
    expect(deltaText(d({ unit: 'waits', a: 10, b: 12, abs: 2, rel: 0.2 }), false)).toBe('+2 (+20 %)');
    expect(deltaText(d({ abs: 0, rel: 0 }))).toBe('±0');
    expect(deltaText(d({ a: null, abs: null, rel: null, verdict: null }))).toBe('');
    expect(deltaText(d({ a: 0, b: 5, abs: 5, rel: null, verdict: 'worse' }))).toBe('+5 ns');
  });

  it('colours by the verdict for after', () => {
    expect(deltaClass(d({ verdict: 'better' }))).toBe('delta better');
    expect(deltaClass(d({ verdict: 'worse' }))).toBe('delta worse');
    expect(deltaClass(d({ verdict: null }))).toBe('delta');
  });

  it('formats figures in their unit', () => {
    expect(formatFigure(1523, 'ns')).toBe('1.52 µs');
    expect(formatFigure(1024, 'requests')).toBe('1,024');
    expect(formatFigure(291.8, 'ns')).toBe('292 ns');
    expect(formatFigure(null, 'ns')).toBe('—');
    expect(formatRel(-0.5)).toBe('−50 %');
    expect(formatRel(0.004)).toBe('+0.4 %');
    expect(formatRel(9.99)).toBe('+999 %');
    expect(formatRel(24139000 / 15626265317 - 1)).toBe('÷647');
    expect(formatRel(-1)).toBe('−100 %');
  });
});
