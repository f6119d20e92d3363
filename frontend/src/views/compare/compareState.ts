// The Compare page's view state IS its URL (/compare?a=ID&b=ID&a_from=…&a_to=…&b_from=…&b_to=…&stat=p99&x_time=own),
// so a copied link opens the same comparison. Times are ns on each analysis' timeline.
import { encodeView, updateView, DEFAULT_VIEW, type ViewState } from '../../state/viewState';

export type Stat = 'p50' | 'p95' | 'p99' | 'max' | 'avg';
export const STATS: Stat[] = ['p50', 'p95', 'p99', 'max', 'avg'];
/** The heatmaps' time axis: one bin width for both sides, or each side's span over the whole width. */
export type XTime = 'shared' | 'own';

export type CompareState = {
  a: string | null;
  b: string | null; // null: not chosen yet (the page offers the choice)
  aFrom: number | null;
  aTo: number | null;
  bFrom: number | null;
  bTo: number | null;
  stat: Stat; // the statistic the dispatch tables show
  xTime: XTime; // the heatmaps' time axis (latency edges and colours are shared either way)
};

function int(v: string | null): number | null {
  if (v === null || !/^-?\d+$/.test(v.trim())) return null;
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : null;
}

export function decodeCompare(p: URLSearchParams): CompareState {
  const stat = p.get('stat');
  return {
    a: p.get('a') || null,
    b: p.get('b') || null,
    aFrom: int(p.get('a_from')),
    aTo: int(p.get('a_to')),
    bFrom: int(p.get('b_from')),
    bTo: int(p.get('b_to')),
    stat: (STATS as (string | null)[]).includes(stat) ? (stat as Stat) : 'p99',
    xTime: p.get('x_time') === 'own' ? 'own' : 'shared',
  };
}

/** State → search params in a stable order; defaults left out. */
export function encodeCompare(s: CompareState): URLSearchParams {
  const p = new URLSearchParams();
  if (s.a) p.set('a', s.a);
  if (s.b) p.set('b', s.b);
  const times: [string, number | null][] = [
    ['a_from', s.aFrom],
    ['a_to', s.aTo],
    ['b_from', s.bFrom],
    ['b_to', s.bTo],
  ];
  for (const [k, v] of times) if (v !== null) p.set(k, String(v));
  if (s.stat !== 'p99') p.set('stat', s.stat);
  if (s.xTime !== 'shared') p.set('x_time', s.xTime);
  return p;
}

/** The link to a comparison. */
export function compareLink(s: Partial<CompareState> & { a: string }): string {
  const full: CompareState = { b: null, aFrom: null, aTo: null, bFrom: null, bTo: null, stat: 'p99', xTime: 'shared', ...s };
  return `/compare?${encodeCompare(full).toString()}`;
}

/** The API's parameters of a comparison (b defaults to a on the server; sent explicitly). */
export function compareParams(s: CompareState) {
  return {
    a: s.a ?? '',
    b: s.b ?? undefined,
    a_from: s.aFrom ?? undefined,
    a_to: s.aTo ?? undefined,
    b_from: s.bFrom ?? undefined,
    b_to: s.bTo ?? undefined,
    x_time: s.xTime,
  };
}

/** Two halves of one analysis spanning [t0, t1]: before = [t0, mid], after = [mid + 1, t1]. */
export function halves(id: string, t0: number, t1: number): CompareState {
  const mid = Math.floor((t0 + t1) / 2);
  return { a: id, b: id, aFrom: t0, aTo: mid, bFrom: mid + 1, bTo: t1, stat: 'p99', xTime: 'shared' };
}

/** The side's range as an analysis page's window (t0/t1), for links to the events behind a row. */
function windowOf(from: number | null, to: number | null): Partial<ViewState> {
  return { t0: from, t1: to };
}

/** A link into one side's analysis: a tab of it with the side's range and the patch (a lock, a device, …). The
 * analysis page keeps a window only when both ends are set: an open end is filled with the analysis' own. */
export function sideLink(
  id: string,
  range: { from: number | null; to: number | null; span: number[] | null | undefined },
  patch: Partial<ViewState>,
): string {
  const from = range.from ?? (range.to !== null ? (range.span?.[0] ?? null) : null);
  const to = range.to ?? (range.from !== null ? (range.span?.[1] ?? null) : null);
  const v = updateView(DEFAULT_VIEW, { ...windowOf(from, to), ...patch });
  return `/a/${encodeURIComponent(id)}?${encodeView(v).toString()}`;
}

/** The link to a side's waits on a lock, the waits its row counts: the Stalls tab with the side's range and, when it
 * has one, only the waits starting in it (w_start), as the comparison counts them (a wait begun before the range
 * and still waiting in it is not counted, so not listed). */
export function lockWaitsLink(
  side: { analysis_id: string; from_ns: number | null; to_ns: number | null; span_ns?: number[] | null },
  lockKey: string,
): string {
  const ranged = side.from_ns !== null || side.to_ns !== null;
  return sideLink(side.analysis_id, { from: side.from_ns, to: side.to_ns, span: side.span_ns }, { tab: 'stalls', lockKey, wStart: ranged });
}

/** Seconds as typed ("358613.95", "0.0154") → ns, exactly for up to 9 decimals; null when not a number. */
export function parseSeconds(text: string): number | null {
  const m = /^\s*(-)?(\d*)(?:\.(\d{0,9})\d*)?\s*$/.exec(text);
  if (!m || (m[2] === '' && (m[3] ?? '') === '')) return null;
  const ns = Number(m[2] || '0') * 1e9 + Number((m[3] ?? '').padEnd(9, '0'));
  if (!Number.isSafeInteger(ns)) return null;
  return m[1] ? -ns : ns;
}

/** ns → seconds as text with 9 decimals (what parseSeconds reads back exactly). */
export function formatSeconds(ns: number | null): string {
  if (ns === null) return '';
  const neg = ns < 0;
  const a = Math.abs(ns);
  const s = `${Math.floor(a / 1e9)}.${String(a % 1e9).padStart(9, '0')}`;
  return neg ? `-${s}` : s;
}
