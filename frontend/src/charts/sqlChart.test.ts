import { describe, expect, it } from 'vitest';
import { MAX_BARS, bins, buildSqlChartOption, categoryColumns, categoryTotals, defaultChart, numericColumns, type SqlColumn } from './sqlChart';

const cols: SqlColumn[] = [
  { name: 'comm', type: 'VARCHAR' },
  { name: 'start_ns', type: 'BIGINT' },
  { name: 'duration_ns', type: 'BIGINT' },
  { name: 'stack', type: 'VARCHAR[]' },
];

describe('sqlChart', () => {
  it('finds the numeric columns and picks a time series when a time column is there', () => {
    expect(numericColumns(cols)).toEqual([1, 2]);
    expect(defaultChart(cols)).toEqual({ kind: 'series', x: 1, y: 2 });
    expect(defaultChart([cols[2]])).toEqual({ kind: 'histogram', y: 0 });
    expect(defaultChart([cols[0]])).toBeNull();
  });

  it("offers a bar per category for a text column: a GROUP BY's rows are bars, not a histogram of their counts", () => {
    const grouped: SqlColumn[] = [
      { name: 'comm', type: 'VARCHAR' },
      { name: 'waits', type: 'BIGINT' },
    ];
    expect(categoryColumns([...grouped, cols[3]])).toEqual([0]); // a list names no bar
    expect(defaultChart(grouped)).toEqual({ kind: 'bars', x: 0, y: 1 });
    expect(defaultChart([{ name: 'pid', type: 'INTEGER' }, ...grouped])).toEqual({ kind: 'bars', x: 1, y: 2 });
    const rows = [
      ['kworker/0:1', 3],
      ['<b>jbd2</b>', 40],
      [null, 2],
      ['kworker/0:1', 4],
    ];
    expect(categoryTotals(rows, 0, 1)).toEqual({ bars: [['<b>jbd2</b>', 40], ['kworker/0:1', 7], ['NULL', 2]], summed: true });
    const o = buildSqlChartOption(grouped, rows, { kind: 'bars', x: 0, y: 1 }) as any;
    expect(o.yAxis.data).toEqual(['<b>jbd2</b>', 'kworker/0:1', 'NULL']);
    expect(o.series[0].data).toEqual([40, 7, 2]);
    expect(o.xAxis.name).toBe('sum of waits');
    expect(o.tooltip.formatter({ dataIndex: 0 })).not.toContain('<b>jbd2');
    const many = Array.from({ length: 50 }, (_, i) => [`t${i}`, i]);
    expect((buildSqlChartOption(grouped, many, { kind: 'bars', x: 0, y: 1 }) as any).series[0].data).toHaveLength(MAX_BARS);
  });

  it('bins values into equal widths, every value counted once', () => {
    const b = bins([0, 1, 2, 3, 4, 5, 6, 7, 8, 10], 5);
    expect(b.map(([, , n]) => n)).toEqual([2, 2, 2, 2, 2]);
    expect(b[0][0]).toBe(0);
    expect(b[4][1]).toBe(10);
    expect(bins([3, 3, 3])).toEqual([[3, 3, 3]]);
    expect(bins([])).toEqual([]);
  });

  it('builds a histogram and a series; names from the trace are escaped in tooltips', () => {
    const rows = [
      ['<b>x</b>', 2e9, 5e6, []],
      ['y', 1e9, 7e6, []],
      ['z', null, 1e6, []],
    ];
    const h = buildSqlChartOption(cols, rows, { kind: 'histogram', y: 2 }) as any;
    expect(h.series[0].data.reduce((a: number, b: number) => a + b, 0)).toBe(3);
    const s = buildSqlChartOption(cols, rows, { kind: 'series', x: 1, y: 2 }) as any;
    expect(s.series[0].data).toEqual([
      [1, 7e6],
      [2, 5e6],
    ]);
    const evil: SqlColumn[] = [{ name: '<img src=x onerror=alert(1)>_ns', type: 'BIGINT' }];
    const e = buildSqlChartOption(evil, [[1], [2]], { kind: 'histogram', y: 0 }) as any;
    expect(e.tooltip.formatter({ dataIndex: 0 })).not.toContain('<img');
  });
});
