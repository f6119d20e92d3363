import { describe, expect, it } from 'vitest';
import type { DispatchSummaryRow } from '../api/types';
import { UNNAMED_KEY, filterSummary, groupUnnamed, isRowSelected, isUnnamed, rowLabel, sortSummary } from './summary';

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
    // completions only (no Q, I or D line names a process): the server's key is "None (None)"
    expect(rowLabel({ ...rows[0], key: 'None (None)', pid: null, comm: null }, 'process')).toBe('(process not traced)');
    expect(isRowSelected(rows[1], 'process', 2, null)).toBe(true);
    expect(isRowSelected(rows[1], 'device', 2, null)).toBe(false);
  });
});

describe('unnamed processes', () => {
  const named = row('postgres', 10, 3, 500);
  const nul = (pid: number, i2d: number, count: number): DispatchSummaryRow => ({ ...row('(null)', pid, count, i2d), comm: '(null)', key: `(null) (${pid})` });
  it('are one row, sorted among the others, with its members', () => {
    const g = groupUnnamed([named, nul(1, 100, 2), nul(2, 900, 5), { ...nul(3, 50, 1), comm: null }], { column: 'i2d.max', desc: true });
    expect(g.rows.map((r) => r.key)).toEqual([UNNAMED_KEY, 'postgres']);
    expect(g.rows[0].count).toBe(8);
    expect(g.rows[0].i2d.max).toBe(900);
    expect(g.rows[0].comm).toBe('3 unnamed processes');
    expect(g.unnamed.map((r) => r.pid)).toEqual([2, 1, 3]);
  });
  it('one alone stays as it is', () => {
    const g = groupUnnamed([named, nul(1, 100, 2)], { column: 'count', desc: true });
    expect(g.rows.map((r) => r.key)).toEqual(['postgres', '(null) (1)']);
    expect(g.unnamed).toEqual([]);
    expect(isUnnamed(named)).toBe(false);
  });
  it('filters by pid or name', () => {
    expect(filterSummary([named, nul(1, 1, 1)], 'process', 'POST').map((r) => r.key)).toEqual(['postgres']);
    expect(filterSummary([named, nul(1, 1, 1)], 'process', '10 ').length).toBe(1);
    expect(filterSummary([named, nul(1, 1, 1)], 'process', '').length).toBe(2);
  });
});
