import { describe, expect, it } from 'vitest';
import { DEFAULT_VIEW, decodeView, encodeView } from '../../state/viewState';
import { chartOf, chartRef, nextSort, sortOf } from './resultState';

const COLUMNS = [
  { name: 'pid', type: 'BIGINT' },
  { name: 'comm', type: 'VARCHAR' },
  { name: 'start_ns', type: 'BIGINT' },
  { name: 'duration_ns', type: 'BIGINT' },
];

/** Through the address bar and back, as a shared link is opened. */
const viaUrl = (patch: Partial<typeof DEFAULT_VIEW>) => decodeView(new URLSearchParams(encodeView({ ...DEFAULT_VIEW, ...patch }).toString()));

describe('the SQL result state in the URL', () => {
  it('opens the same chart from a link, by column names', () => {
    for (const chart of [null, { kind: 'histogram' as const, y: 3 }, { kind: 'series' as const, x: 2, y: 0 }, { kind: 'bars' as const, x: 1, y: 3 }]) {
      const v = viaUrl({ sql: 'SELECT 1', sqlChart: chartRef(chart, COLUMNS) });
      expect(chartOf(v.sqlChart, COLUMNS)).toEqual(chart);
    }
  });

  it('falls back to the default chart for a link naming columns the result does not have', () => {
    const byDefault = { kind: 'series', x: 2, y: 0 };
    expect(chartOf(null, COLUMNS)).toEqual(byDefault);
    expect(chartOf({ kind: 'histogram', y: 'gone' }, COLUMNS)).toEqual(byDefault);
    expect(chartOf({ kind: 'histogram', y: 'comm' }, COLUMNS)).toEqual(byDefault); // not a number
    expect(chartOf({ kind: 'series', x: 'pid', y: 'pid' }, COLUMNS)).toEqual(byDefault);
    expect(chartOf({ kind: 'bars', x: 'pid', y: 'duration_ns' }, COLUMNS)).toEqual(byDefault); // a number names no bar
    expect(chartOf({ kind: 'none' }, COLUMNS)).toBeNull();
  });

  it('opens the same sort from a link; a click sorts numbers largest first, then the other way', () => {
    let sort = nextSort(null, COLUMNS, 3);
    expect(sort).toEqual({ col: 'duration_ns', desc: true });
    expect(sortOf(viaUrl({ sql: 'SELECT 1', sqlSort: sort }).sqlSort, COLUMNS)).toEqual({ col: 3, desc: true });
    sort = nextSort(sort, COLUMNS, 3);
    expect(sortOf(viaUrl({ sql: 'SELECT 1', sqlSort: sort }).sqlSort, COLUMNS)).toEqual({ col: 3, desc: false });
    expect(nextSort(sort, COLUMNS, 1)).toEqual({ col: 'comm', desc: false });
    expect(sortOf({ col: 'gone', desc: true }, COLUMNS)).toBeNull();
  });
});
