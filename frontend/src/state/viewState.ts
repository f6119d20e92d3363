// The view state IS the URL: every selection, filter and window lives in the search params,
// so copying the address bar shares exactly what is on screen.

export type Tab = 'dispatch' | 'stalls' | 'offcpu' | 'sources';
export const TABS: Tab[] = ['stalls', 'dispatch', 'offcpu', 'sources'];
export type FlameUnit = 'us' | 'stacks';
export type Grouping = 'process' | 'device';
export type RequestOrder = 'i2d' | 'd2c' | 'q2c' | 'time';
export type Phase = 'i2d' | 'd2c' | 'q2c';
export type Stat = 'n' | 'p50' | 'p95' | 'p99' | 'max';
export type SortColumn = 'key' | 'count' | `${Phase}.${Stat}`;
export type Sort = { column: SortColumn; desc: boolean };
export type RequestRef = { sourceId: number; line: number };

export type ViewState = {
  tab: Tab | null; // null: the analysis' default tab (see AnalysisPage)
  by: Grouping;
  pid: number | null;
  dev: string | null;
  req: RequestRef | null;
  t0: number | null; // ns, inclusive
  t1: number | null; // ns, exclusive
  sort: Sort;
  order: RequestOrder;
  hm: Phase; // latency heatmap metric
  // Stalls
  chain: number | null; // chain id
  link: number | null; // 1-based position of the link in the chain
  lock: string | null; // waits table filter: lock contains this
  // Off-CPU flame graph
  fgUnit: FlameUnit;
  fgPid: number | null;
  fgComm: string | null;
  fgQ: string | null; // search: keep stacks with a matching frame, highlight the frames
  fgInv: boolean;
  fgZoom: string[]; // frame names from below the root to the zoomed frame
  fgDiff: boolean;
  fgA: number | null; // diff: 'before' source (null: all of this analysis)
  fgB: number | null; // diff: 'after' source
  fgBAn: string | null; // diff: 'after' from another analysis
};

export const DEFAULT_SORT: Sort = { column: 'i2d.max', desc: true };

export const DEFAULT_VIEW: ViewState = {
  tab: null,
  by: 'process',
  pid: null,
  dev: null,
  req: null,
  t0: null,
  t1: null,
  sort: DEFAULT_SORT,
  order: 'i2d',
  hm: 'i2d',
  chain: null,
  link: null,
  lock: null,
  fgUnit: 'us',
  fgPid: null,
  fgComm: null,
  fgQ: null,
  fgInv: false,
  fgZoom: [],
  fgDiff: false,
  fgA: null,
  fgB: null,
  fgBAn: null,
};

const PHASES = ['i2d', 'd2c', 'q2c'];
const STATS = ['n', 'p50', 'p95', 'p99', 'max'];

function parseIntParam(v: string | null): number | null {
  if (v === null || !/^-?\d+$/.test(v)) return null;
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : null;
}

function parsePositive(v: string | null): number | null {
  const n = parseIntParam(v);
  return n !== null && n > 0 ? n : null;
}

/** "a;b;c" → ['a', 'b', 'c'] (the zoomed frame's path, as in folded stacks). */
export function parseZoom(v: string | null): string[] {
  return v ? v.split(';').filter((s) => s.length > 0) : [];
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
  const hm = params.get('hm');
  let t0 = parseIntParam(params.get('t0'));
  let t1 = parseIntParam(params.get('t1'));
  if (t0 !== null && t1 !== null && t1 <= t0) {
    t0 = null;
    t1 = null;
  }
  return {
    tab: (TABS as (string | null)[]).includes(tab) ? (tab as Tab) : null,
    by: by === 'device' ? 'device' : 'process',
    pid: parseIntParam(params.get('pid')),
    dev: params.get('dev') || null,
    req: parseRequestRef(params.get('req')),
    t0,
    t1,
    sort: parseSort(params.get('sort')),
    order: order === 'd2c' || order === 'q2c' || order === 'time' ? order : 'i2d',
    hm: hm === 'd2c' || hm === 'q2c' ? hm : 'i2d',
    chain: parseIntParam(params.get('chain')),
    link: parsePositive(params.get('link')),
    lock: params.get('lock') || null,
    fgUnit: params.get('fg_unit') === 'stacks' ? 'stacks' : 'us',
    fgPid: parseIntParam(params.get('fg_pid')),
    fgComm: params.get('fg_comm') || null,
    fgQ: params.get('fg_q') || null,
    fgInv: params.get('fg_inv') === '1',
    fgZoom: parseZoom(params.get('fg_zoom')),
    fgDiff: params.get('fg_diff') === '1',
    fgA: parseIntParam(params.get('fg_a')),
    fgB: parseIntParam(params.get('fg_b')),
    fgBAn: params.get('fg_ban') || null,
  };
}

/** View state → URL search params; defaults are omitted so links stay short. Stable key order. */
export function encodeView(v: ViewState): URLSearchParams {
  const p = new URLSearchParams();
  if (v.tab !== null) p.set('tab', v.tab);
  if (v.by !== DEFAULT_VIEW.by) p.set('by', v.by);
  if (v.pid !== null) p.set('pid', String(v.pid));
  if (v.dev !== null) p.set('dev', v.dev);
  if (v.t0 !== null && v.t1 !== null) {
    p.set('t0', String(v.t0));
    p.set('t1', String(v.t1));
  }
  if (v.sort.column !== DEFAULT_SORT.column || v.sort.desc !== DEFAULT_SORT.desc) p.set('sort', encodeSort(v.sort));
  if (v.order !== DEFAULT_VIEW.order) p.set('order', v.order);
  if (v.hm !== DEFAULT_VIEW.hm) p.set('hm', v.hm);
  if (v.req !== null) p.set('req', encodeRequestRef(v.req));
  if (v.chain !== null) p.set('chain', String(v.chain));
  if (v.link !== null) p.set('link', String(v.link));
  if (v.lock !== null) p.set('lock', v.lock);
  if (v.fgUnit !== DEFAULT_VIEW.fgUnit) p.set('fg_unit', v.fgUnit);
  if (v.fgPid !== null) p.set('fg_pid', String(v.fgPid));
  if (v.fgComm !== null) p.set('fg_comm', v.fgComm);
  if (v.fgQ !== null) p.set('fg_q', v.fgQ);
  if (v.fgInv) p.set('fg_inv', '1');
  if (v.fgZoom.length) p.set('fg_zoom', v.fgZoom.join(';'));
  if (v.fgDiff) p.set('fg_diff', '1');
  if (v.fgA !== null) p.set('fg_a', String(v.fgA));
  if (v.fgB !== null) p.set('fg_b', String(v.fgB));
  if (v.fgBAn !== null) p.set('fg_ban', v.fgBAn);
  return p;
}

/** Apply a partial update. Changing the grouping clears the row filter of the other grouping. */
export function updateView(v: ViewState, patch: Partial<ViewState>): ViewState {
  const next = { ...v, ...patch };
  if (patch.by && patch.by !== v.by) {
    next.pid = null;
    next.dev = null;
  }
  // Another chain: its links are not those of the previous one.
  if (patch.chain !== undefined && patch.chain !== v.chain && patch.link === undefined) next.link = null;
  // Inverting, or another task, changes the tree: the zoomed path no longer means the same frame.
  const reshaped =
    (patch.fgInv !== undefined && patch.fgInv !== v.fgInv) ||
    (patch.fgPid !== undefined && patch.fgPid !== v.fgPid) ||
    (patch.fgComm !== undefined && patch.fgComm !== v.fgComm);
  if (reshaped && patch.fgZoom === undefined) next.fgZoom = [];
  return next;
}
