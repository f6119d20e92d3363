// Pure helpers of the offwaketime views (wake-up pairs, and the waker side of a chain's link).
import type { SourceDetail } from '../api/types';
import type { ChainLink, WakerPair } from '../api/stallTypes';
import type { RequestRef } from '../state/viewState';
import { formatCount, formatNs, taskLabel } from './format';

/** Whether any source has offwaketime (or wakeuptime) records with a waker stack. */
export function hasWakerStacks(sources: Pick<SourceDetail, 'waker_stacks'>[]): boolean {
  return sources.some((s) => s.waker_stacks > 0);
}

export type WakerQuery = { pid: number | null; comm: string | null; lockKey: string | null };

/** What to ask /wakers for a chain link: its task (the server takes the pid when offwaketime has it, else the
 * comm) and its lock, exactly (the link's lock_key: `xfs_ilock` for `xfs_ilock via down_write`). Null for a link
 * that is not a wait or has no task (an interrupt ending the chain). */
export function linkWakerQuery(link: Pick<ChainLink, 'pid' | 'comm' | 'lock' | 'lock_key' | 'duration_ns'>): WakerQuery | null {
  const isWait = !!link.lock || (link.duration_ns ?? 0) > 0;
  if (!isWait || (link.pid === null && !link.comm)) return null;
  return { pid: link.pid, comm: link.comm || null, lockKey: link.lock_key };
}

/** µs as a duration with its unit, and the exact count: 8054934 → "8.05 s (8,054,934 µs)". */
export function formatUs(us: number): string {
  return `${formatNs(us * 1000)} (${formatCount(us)} µs)`;
}

/** part / whole as a percentage with its sign: 8054934 of 8400011 → "95.9 %"; "—" without a whole. */
export function share(part: number, whole: number): string {
  if (!whole) return '—';
  const p = (100 * part) / whole;
  return `${p.toFixed(p < 10 ? 2 : 1)} %`;
}

/** "postgres 4242", "cksum" (bcc's old output has no pid), "?" without either. */
export function taskName(comm: string | null, pid: number | null): string {
  return taskLabel(comm, pid);
}

/** A pair is named by its first record: the source and line the URL keeps. */
export function pairRef(p: Pick<WakerPair, 'rows'>): RequestRef {
  const r = p.rows[0];
  return { sourceId: r.source_id, line: r.line };
}

/** The selected pair: the one whose first record is `ref`, else the first; with its 1-based rank. Null when
 * the list is empty or `ref` names a pair that is not in it. */
export function selectPair<P extends Pick<WakerPair, 'rows'>>(items: P[], ref: RequestRef | null): { pair: P; rank: number } | null {
  if (items.length === 0) return null;
  if (ref === null) return { pair: items[0], rank: 1 };
  const i = items.findIndex((p) => p.rows[0]?.source_id === ref.sourceId && p.rows[0]?.line === ref.line);
  return i < 0 ? null : { pair: items[i], rank: i + 1 };
}

/** Where a pair's records are: "lines 85, 291" of one source, "source 2 line 4" across sources, "+N more"
 * when more records were merged than references returned. */
export function rowsText(p: Pick<WakerPair, 'rows' | 'records'>, filename: (sourceId: number) => string): string {
  const bySource = new Map<number, number[]>();
  for (const r of p.rows) bySource.set(r.source_id, [...(bySource.get(r.source_id) ?? []), r.line]);
  const parts = [...bySource].map(([s, lines]) => `${filename(s)} line${lines.length > 1 ? 's' : ''} ${lines.join(', ')}`);
  const more = p.records - p.rows.length;
  return parts.join('; ') + (more > 0 ? ` (+${formatCount(more)} more)` : '');
}
