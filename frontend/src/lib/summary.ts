import type { DispatchSummaryRow } from '../api/types';
import type { Grouping, Phase, Sort, SortColumn, Stat } from '../state/viewState';

export function sortValue(r: DispatchSummaryRow, c: SortColumn): number | string | null {
  if (c === 'key') return r.key;
  if (c === 'count') return r.count;
  const [phase, stat] = c.split('.') as [Phase, Stat];
  return r[phase][stat];
}

/** Rows sorted by a column; nulls (phase not traced) always last. Ties by key. */
export function sortSummary(rows: DispatchSummaryRow[], sort: Sort): DispatchSummaryRow[] {
  const dir = sort.desc ? -1 : 1;
  return [...rows].sort((a, b) => {
    const va = sortValue(a, sort.column);
    const vb = sortValue(b, sort.column);
    if (va === null && vb === null) return a.key.localeCompare(b.key);
    if (va === null) return 1;
    if (vb === null) return -1;
    const c = typeof va === 'string' ? va.localeCompare(String(vb)) : va - (vb as number);
    return c !== 0 ? c * dir : a.key.localeCompare(b.key);
  });
}

/** The label of a summary row: "804 xfsaild/sda1" by process, "8,0" by device. */
export function rowLabel(r: DispatchSummaryRow, by: Grouping): string {
  if (by === 'device') return r.dev ?? r.key;
  if (r.pid === null) return r.comm ?? r.key;
  return r.comm ? `${r.pid} ${r.comm}` : String(r.pid);
}

export function isRowSelected(r: DispatchSummaryRow, by: Grouping, pid: number | null, dev: string | null): boolean {
  return by === 'device' ? dev !== null && r.dev === dev : pid !== null && r.pid === pid;
}
