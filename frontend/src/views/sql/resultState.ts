// The SQL result's chart and sort as the URL keeps them (by column names: state/viewState.ts) and as the result
// draws them (by column indices): a link opens the same chart and sort of the same query's columns.
import { categoryColumns, defaultChart, numericColumns, type SqlChart, type SqlColumn } from '../../charts/sqlChart';
import type { SqlChartRef, SqlSort } from '../../state/viewState';

/** The chart the URL names, over these columns: null for none; the result's default where the URL names none or a
 * column the result does not have (or that is not a number, or for a bar's category, not text). */
export function chartOf(ref: SqlChartRef | null, columns: SqlColumn[]): SqlChart | null {
  if (ref === null) return defaultChart(columns);
  if (ref.kind === 'none') return null;
  const nums = numericColumns(columns);
  const at = (name: string) => nums.find((i) => columns[i].name === name);
  const y = at(ref.y);
  if (ref.kind === 'histogram') return y !== undefined ? { kind: 'histogram', y } : defaultChart(columns);
  if (ref.kind === 'bars') {
    const x = categoryColumns(columns).find((i) => columns[i].name === ref.x);
    return x !== undefined && y !== undefined ? { kind: 'bars', x, y } : defaultChart(columns);
  }
  const x = at(ref.x);
  return x !== undefined && y !== undefined && x !== y ? { kind: 'series', x, y } : defaultChart(columns);
}

/** A chart as the URL keeps it. */
export function chartRef(chart: SqlChart | null, columns: SqlColumn[]): SqlChartRef {
  if (chart === null) return { kind: 'none' };
  if (chart.kind === 'histogram') return { kind: 'histogram', y: columns[chart.y].name };
  return { kind: chart.kind, x: columns[chart.x].name, y: columns[chart.y].name };
}

/** The sorted column's index (the first of that name), or null when the result has none of that name. */
export function sortOf(sort: SqlSort | null, columns: SqlColumn[]): { col: number; desc: boolean } | null {
  if (sort === null) return null;
  const col = columns.findIndex((c) => c.name === sort.col);
  return col < 0 ? null : { col, desc: sort.desc };
}

/** A click on a column's head: sorted by it, numbers largest first; again: the other way. */
export function nextSort(current: SqlSort | null, columns: SqlColumn[], col: number): SqlSort {
  const name = columns[col].name;
  if (current !== null && current.col === name) return { col: name, desc: !current.desc };
  return { col: name, desc: numericColumns(columns).includes(col) };
}
