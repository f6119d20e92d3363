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

/** The label of a summary row: "804 xfsaild/sda1" by process, "8,0" by device; the requests of no traced process
 * (a capture of completions only: no Q, I or D line names one) "(process not traced)". */
export function rowLabel(r: DispatchSummaryRow, by: Grouping): string {
  if (by === 'device') return r.dev ?? r.key;
  if (r.pid === null) return r.comm ?? NO_PROCESS;
  return r.comm ? `${r.pid} ${r.comm}` : String(r.pid);
}

export function isRowSelected(r: DispatchSummaryRow, by: Grouping, pid: number | null, dev: string | null): boolean {
  return by === 'device' ? dev !== null && r.dev === dev : pid !== null && r.pid === pid;
}

/** A process blktrace could not name: blkparse prints "(null)" (no comm recorded for that pid), or no name at all. */
export function isUnnamed(r: Pick<DispatchSummaryRow, 'comm'>): boolean {
  return r.comm === null || r.comm === '' || r.comm === '(null)';
}

export const UNNAMED_KEY = '(unnamed processes)';
export const NO_PROCESS = '(process not traced)';

function groupStats(members: DispatchSummaryRow[], phase: Phase) {
  const top = (s: Stat) => members.reduce<number | null>((m, r) => (r[phase][s] === null ? m : Math.max(m ?? -Infinity, r[phase][s]!)), null);
  return { n: members.reduce((n, r) => n + r[phase].n, 0), p50: top('p50'), p95: top('p95'), p99: top('p99'), max: top('max') };
}

/** The summary per process with the unnamed processes (hundreds in a real capture: a pid each) as one row, keyed
 * UNNAMED_KEY, sorted among the others: its count and max are the group's, its percentiles the highest of its
 * members' (the group's own percentile is at most that). Its members, sorted, come with it. Two or more only. */
export function groupUnnamed(rows: DispatchSummaryRow[], sort: Sort): { rows: DispatchSummaryRow[]; unnamed: DispatchSummaryRow[] } {
  const unnamed = rows.filter(isUnnamed);
  if (unnamed.length < 2) return { rows: sortSummary(rows, sort), unnamed: [] };
  const group: DispatchSummaryRow = {
    key: UNNAMED_KEY,
    pid: null,
    comm: `${unnamed.length} unnamed processes`,
    dev: null,
    count: unnamed.reduce((n, r) => n + r.count, 0),
    i2d: groupStats(unnamed, 'i2d'),
    d2c: groupStats(unnamed, 'd2c'),
    q2c: groupStats(unnamed, 'q2c'),
  };
  return { rows: sortSummary([...rows.filter((r) => !isUnnamed(r)), group], sort), unnamed: sortSummary(unnamed, sort) };
}

/** Rows whose label (pid and name, or device) contains `text`, case-insensitively; all when it is empty. */
export function filterSummary(rows: DispatchSummaryRow[], by: Grouping, text: string): DispatchSummaryRow[] {
  const t = text.trim().toLowerCase();
  return t ? rows.filter((r) => rowLabel(r, by).toLowerCase().includes(t)) : rows;
}
