// The view state IS the URL: every selection, filter and window lives in the search params,
// so copying the address bar shares exactly what is on screen.

export type Tab = 'dispatch' | 'sources';
export type Grouping = 'process' | 'device';
export type RequestOrder = 'i2d' | 'd2c' | 'q2c' | 'time';
export type Phase = 'i2d' | 'd2c' | 'q2c';
export type Stat = 'n' | 'p50' | 'p95' | 'p99' | 'max';
export type SortColumn = 'key' | 'count' | `${Phase}.${Stat}`;
export type Sort = { column: SortColumn; desc: boolean };
export type RequestRef = { sourceId: number; line: number };

export type ViewState = {
  tab: Tab;
  by: Grouping;
  pid: number | null;
  dev: string | null;
  req: RequestRef | null;
  t0: number | null; // ns, inclusive
  t1: number | null; // ns, exclusive
  sort: Sort;
  order: RequestOrder;
};

export const DEFAULT_SORT: Sort = { column: 'i2d.max', desc: true };

export const DEFAULT_VIEW: ViewState = {
  tab: 'dispatch',
  by: 'process',
  pid: null,
  dev: null,
  req: null,
  t0: null,
  t1: null,
  sort: DEFAULT_SORT,
  order: 'i2d',
};

const PHASES = ['i2d', 'd2c', 'q2c'];
const STATS = ['n', 'p50', 'p95', 'p99', 'max'];

function parseIntParam(v: string | null): number | null {
  if (v === null || !/^-?\d+$/.test(v)) return null;
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : null;
}

export function parseSort(v: string | null): Sort {
  if (!v) return DEFAULT_SORT;
  const desc = v.startsWith('-');
  const col = desc ? v.slice(1) : v;
  if (col === 'key' || col === 'count') return { column: col, desc };
  const [phase, stat] = col.split('.');
  if (PHASES.includes(phase) && STATS.includes(stat)) return { column: col as SortColumn, desc };
  return DEFAULT_SORT;
}

export function encodeSort(s: Sort): string {
  return (s.desc ? '-' : '') + s.column;
}

export function parseRequestRef(v: string | null): RequestRef | null {
  const m = v ? /^(\d+):(\d+)$/.exec(v) : null;
  return m ? { sourceId: Number(m[1]), line: Number(m[2]) } : null;
}

export function encodeRequestRef(r: RequestRef): string {
  return `${r.sourceId}:${r.line}`;
}

/** URL search params → view state. Unknown or malformed values fall back to defaults. */
export function decodeView(params: URLSearchParams): ViewState {
  const tab = params.get('tab');
  const by = params.get('by');
  const order = params.get('order');
  let t0 = parseIntParam(params.get('t0'));
  let t1 = parseIntParam(params.get('t1'));
  if (t0 !== null && t1 !== null && t1 <= t0) {
    t0 = null;
    t1 = null;
  }
  return {
    tab: tab === 'sources' ? 'sources' : 'dispatch',
    by: by === 'device' ? 'device' : 'process',
    pid: parseIntParam(params.get('pid')),
    dev: params.get('dev') || null,
    req: parseRequestRef(params.get('req')),
    t0,
    t1,
    sort: parseSort(params.get('sort')),
    order: order === 'd2c' || order === 'q2c' || order === 'time' ? order : 'i2d',
  };
}

/** View state → URL search params; defaults are omitted so links stay short. Stable key order. */
export function encodeView(v: ViewState): URLSearchParams {
  const p = new URLSearchParams();
  if (v.tab !== DEFAULT_VIEW.tab) p.set('tab', v.tab);
  if (v.by !== DEFAULT_VIEW.by) p.set('by', v.by);
  if (v.pid !== null) p.set('pid', String(v.pid));
  if (v.dev !== null) p.set('dev', v.dev);
  if (v.t0 !== null && v.t1 !== null) {
    p.set('t0', String(v.t0));
    p.set('t1', String(v.t1));
  }
  if (v.sort.column !== DEFAULT_SORT.column || v.sort.desc !== DEFAULT_SORT.desc) p.set('sort', encodeSort(v.sort));
  if (v.order !== DEFAULT_VIEW.order) p.set('order', v.order);
  if (v.req !== null) p.set('req', encodeRequestRef(v.req));
  return p;
}

/** Apply a partial update. Changing the grouping clears the row filter of the other grouping. */
export function updateView(v: ViewState, patch: Partial<ViewState>): ViewState {
  const next = { ...v, ...patch };
  if (patch.by && patch.by !== v.by) {
    next.pid = null;
    next.dev = null;
  }
  return next;
}
