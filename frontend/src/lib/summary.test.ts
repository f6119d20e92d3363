import { describe, expect, it } from 'vitest';
import type { DispatchSummaryRow } from '../api/types';
import { isRowSelected, rowLabel, sortSummary } from './summary';

const st = (max: number | null) => ({ n: max === null ? 0 : 1, p50: max, p95: max, p99: max, max });
const row = (key: string, pid: number, count: number, i2d: number | null): DispatchSummaryRow => ({
  key, pid, comm: key, dev: null, count, i2d: st(i2d), d2c: st(null), q2c: st(null),
});

describe('summary rows', () => {
  const rows = [row('a', 1, 5, 10), row('b', 2, 50, null), row('c', 3, 1, 1000)];
  it('sorts by a phase statistic, nulls last in both directions', () => {
    expect(sortSummary(rows, { column: 'i2d.max', desc: true }).map((r) => r.key)).toEqual(['c', 'a', 'b']);
    expect(sortSummary(rows, { column: 'i2d.max', desc: false }).map((r) => r.key)).toEqual(['a', 'c', 'b']);
  });
  it('sorts by count and key', () => {
    expect(sortSummary(rows, { column: 'count', desc: true }).map((r) => r.key)).toEqual(['b', 'a', 'c']);
    expect(sortSummary(rows, { column: 'key', desc: true }).map((r) => r.key)).toEqual(['c', 'b', 'a']);
  });
  it('labels and selection', () => {
    expect(rowLabel(rows[0], 'process')).toBe('1 a');
    expect(rowLabel({ ...rows[0], dev: '8,0', pid: null }, 'device')).toBe('8,0');
    expect(isRowSelected(rows[1], 'process', 2, null)).toBe(true);
    expect(isRowSelected(rows[1], 'device', 2, null)).toBe(false);
  });
});
