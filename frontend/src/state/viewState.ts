// The view state IS the URL: every selection, filter and window lives in the search params,
// so copying the address bar shares exactly what is on screen.

export type Tab = 'dispatch' | 'stalls' | 'timeline' | 'offcpu' | 'sources' | 'sql';
export const TABS: Tab[] = ['stalls', 'timeline', 'dispatch', 'offcpu', 'sources', 'sql'];
export type FlameUnit = 'us' | 'stacks';
export type Grouping = 'process' | 'device';
export type RequestOrder = 'i2d' | 'd2c' | 'q2c' | 'time';
export type Phase = 'i2d' | 'd2c' | 'q2c';
export type Stat = 'n' | 'p50' | 'p95' | 'p99' | 'max';
export type SortColumn = 'key' | 'count' | `${Phase}.${Stat}`;
export type Sort = { column: SortColumn; desc: boolean };
export type RequestRef = { sourceId: number; line: number };
export type HeatmapMetric = Phase | 'func' | 'wait';
export type StallsHeatmapMetric = 'wait' | 'func';
/** The SQL console's chart, by column names (a shared link names the same columns of the same query): none, a
 * histogram of y, or y over x. */
export type SqlChartRef =
  | { kind: 'none' }
  | { kind: 'histogram'; y: string }
  | { kind: 'series'; x: string; y: string }
  | { kind: 'bars'; x: string; y: string };
/** The SQL console's result table sorted by a column (its name). */
export type SqlSort = { col: string; desc: boolean };
/** A brushed box of a heatmap: placed in [t0, t1] (ns, inclusive), latMin <= latency < latMax (null: open). */
export type HeatmapBox = { metric: HeatmapMetric; t0: number; t1: number; latMin: number | null; latMax: number | null };

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
  btt: boolean; // the dispatch summary shows btt's figures (per queued bio, as `btt -A` prints them)
  timeAbs: boolean; // times on the trace's own clock (absolute); else from the analysis' start (lib/timeBase.tsx)
  // Stalls
  chain: number | null; // chain id
  link: number | null; // 1-based position of the link in the chain
  lock: string | null; // waits table filter: lock contains this (typed)
  lockKey: string | null; // waits table filter: on this lock exactly, its object or primitive (from a lock frame)
  idle: boolean; // waits table: idle sleeps too (asleep interruptibly on no known lock), not only stalls
  wStart: boolean; // waits table in a time range: the waits starting in it (as Compare counts), not all overlapping it
  // Off-CPU flame graph
  fgUnit: FlameUnit;
  fgPid: number | null;
  fgComm: string | null;
  fgQ: string | null; // search: keep stacks with a matching frame, highlight the frames
  fgInv: boolean;
  fgZoom: string[]; // frame names from below the root to the zoomed frame
  fgDiff: boolean;
  fgWarm: boolean; // the warm (CPU) palette instead of off-CPU's cool one
  fgA: number | null; // diff: 'before' source (null: all of this analysis)
  fgB: number | null; // diff: 'after' source
  fgBAn: string | null; // diff: 'after' from another analysis
  // Stalls: wake-up pairs (offwaketime)
  wp: RequestRef | null; // the selected pair, by its first record (source and line)
  wpComm: string | null; // pairs of this blocked task only
  wpLock: string | null; // pairs whose blocked stack is on this lock, exactly (its object or primitive, as lockKey)
  // Timeline
  v0: number | null; // the window drawn (ns, analysis timeline); null: the whole analysis
  v1: number | null;
  tlN: number; // lanes shown
  tlSel: RequestRef | null; // the selected item: its source and line
  tlArrows: boolean; // every chain's arrows (default: the selected chain's only)
  tlMark: [number, number | null] | null; // a measurement: two instants (ns), or the first of them
  tlPin: string[]; // lanes pinned to the top of the timeline (their ids)
  tlFold: string[]; // groups of lanes folded (their keys: "src:<id>", "cpus:<id>", "pinned")
  tlQ: string | null; // the lanes whose name, pid or device contains this
  // Heatmaps
  shm: StallsHeatmapMetric | null; // the Stalls heatmap: waits (by lock) or a function's duration; null: waits when the capture has any, else function durations
  shf: string | null; // its filter: the lock (null: all waits) or the function (null: the top one)
  hbox: HeatmapBox | null; // the brushed box, on the heatmap of its metric
  wait: RequestRef | null; // the selected wait: its source and line
  sql: string | null; // the SQL console's query (views/sql/)
  sqlChart: SqlChartRef | null; // its result's chart; null: the result's default (charts/sqlChart.defaultChart)
  sqlSort: SqlSort | null; // its result table's sort; null: the rows as the query returned them
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
  btt: false,
  timeAbs: false,
  chain: null,
  link: null,
  lock: null,
  lockKey: null,
  idle: false,
  wStart: false,
  fgUnit: 'us',
  fgPid: null,
  fgComm: null,
  fgQ: null,
  fgInv: false,
  fgZoom: [],
  fgDiff: false,
  fgWarm: false,
  fgA: null,
  fgB: null,
  fgBAn: null,
  wp: null,
  wpComm: null,
  wpLock: null,
  v0: null,
  v1: null,
  tlN: 40,
  tlSel: null,
  tlArrows: false,
  tlMark: null,
  tlPin: [],
  tlFold: [],
  tlQ: null,
  shm: null,
  shf: null,
  hbox: null,
  wait: null,
  sql: null,
  sqlChart: null,
  sqlSort: null,
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

const HEATMAP_METRICS: HeatmapMetric[] = ['i2d', 'd2c', 'q2c', 'func', 'wait'];

/** "i2d_100_200_1000_" → a box (empty latency ends are open); anything malformed → null. */
export function parseHeatmapBox(v: string | null): HeatmapBox | null {
  const m = v ? /^([a-z0-9]+)_(-?\d+)_(-?\d+)_(\d*)_(\d*)$/.exec(v) : null;
  if (!m || !(HEATMAP_METRICS as string[]).includes(m[1])) return null;
  const [t0, t1] = [parseIntParam(m[2]), parseIntParam(m[3])];
  const [latMin, latMax] = [parseIntParam(m[4] || null), parseIntParam(m[5] || null)];
  if (t0 === null || t1 === null || t1 < t0 || (latMin !== null && latMax !== null && latMax <= latMin)) return null;
  return { metric: m[1] as HeatmapMetric, t0, t1, latMin, latMax };
}

export function encodeHeatmapBox(b: HeatmapBox): string {
  return [b.metric, b.t0, b.t1, b.latMin ?? '', b.latMax ?? ''].join('_');
}

/** "a|b" → ['a', 'b'] (lane ids hold ':' and ','). */
function parseList(v: string | null): string[] {
  return v ? v.split('|').filter((x) => x.length > 0) : [];
}

/** "a_b" or "a_" → a measurement (its first instant, and its second once placed). */
export function parseMark(v: string | null): [number, number | null] | null {
  const m = v ? /^(-?\d+)_(-?\d*)$/.exec(v) : null;
  if (!m) return null;
  const a = parseIntParam(m[1]);
  const b = m[2] ? parseIntParam(m[2]) : null;
  return a === null ? null : [a, b];
}

/** sql_chart=none | histogram (sql_y) | series (sql_x, sql_y) | bars (sql_x: the category, sql_y): the SQL console's
 * chart; malformed → null. */
export function parseSqlChart(params: URLSearchParams): SqlChartRef | null {
  const kind = params.get('sql_chart');
  const x = params.get('sql_x');
  const y = params.get('sql_y');
  if (kind === 'none') return { kind };
  if (kind === 'histogram' && y) return { kind, y };
  if ((kind === 'series' || kind === 'bars') && x && y) return { kind, x, y };
  return null;
}

function encodeSqlChart(p: URLSearchParams, c: SqlChartRef): void {
  p.set('sql_chart', c.kind);
  if (c.kind === 'series' || c.kind === 'bars') p.set('sql_x', c.x);
  if (c.kind !== 'none') p.set('sql_y', c.y);
}

/** The timeline's window: both ends, in order, or neither. */
function decodeWindow(v0: number | null, v1: number | null): { v0: number | null; v1: number | null } {
  return v0 !== null && v1 !== null && v1 > v0 ? { v0, v1 } : { v0: null, v1: null };
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
    btt: params.get('btt') === '1',
    timeAbs: params.get('time') === 'abs',
    chain: parseIntParam(params.get('chain')),
    link: parsePositive(params.get('link')),
    lock: params.get('lock') || null,
    lockKey: params.get('lock_key') || null,
    idle: params.get('idle') === '1',
    wStart: params.get('w_start') === '1',
    fgUnit: params.get('fg_unit') === 'stacks' ? 'stacks' : 'us',
    fgPid: parseIntParam(params.get('fg_pid')),
    fgComm: params.get('fg_comm') || null,
    fgQ: params.get('fg_q') || null,
    fgInv: params.get('fg_inv') === '1',
    fgZoom: parseZoom(params.get('fg_zoom')),
    fgDiff: params.get('fg_diff') === '1',
    fgWarm: params.get('fg_warm') === '1',
    fgA: parseIntParam(params.get('fg_a')),
    fgB: parseIntParam(params.get('fg_b')),
    fgBAn: params.get('fg_ban') || null,
    wp: parseRequestRef(params.get('wp')),
    wpComm: params.get('wp_comm') || null,
    wpLock: params.get('wp_lock') || null,
    ...decodeWindow(parseIntParam(params.get('v0')), parseIntParam(params.get('v1'))),
    tlN: Math.min(200, parsePositive(params.get('tl_n')) ?? DEFAULT_VIEW.tlN),
    tlSel: parseRequestRef(params.get('tl_sel')),
    tlArrows: params.get('tl_arrows') === '1',
    tlMark: parseMark(params.get('tl_mark')),
    tlPin: parseList(params.get('tl_pin')),
    tlFold: parseList(params.get('tl_fold')),
    tlQ: params.get('tl_q') || null,
    shm: params.get('shm') === 'func' ? 'func' : params.get('shm') === 'wait' ? 'wait' : null,
    shf: params.get('shf') || null,
    hbox: parseHeatmapBox(params.get('hbox')),
    wait: parseRequestRef(params.get('wait')),
    sql: params.get('sql') || null,
    sqlChart: parseSqlChart(params),
    sqlSort: params.get('sql_sort') ? { col: params.get('sql_sort')!, desc: params.get('sql_desc') === '1' } : null,
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
  if (v.btt) p.set('btt', '1');
  if (v.timeAbs) p.set('time', 'abs');
  if (v.req !== null) p.set('req', encodeRequestRef(v.req));
  if (v.chain !== null) p.set('chain', String(v.chain));
  if (v.link !== null) p.set('link', String(v.link));
  if (v.lock !== null) p.set('lock', v.lock);
  if (v.lockKey !== null) p.set('lock_key', v.lockKey);
  if (v.idle) p.set('idle', '1');
  if (v.wStart) p.set('w_start', '1');
  if (v.fgUnit !== DEFAULT_VIEW.fgUnit) p.set('fg_unit', v.fgUnit);
  if (v.fgPid !== null) p.set('fg_pid', String(v.fgPid));
  if (v.fgComm !== null) p.set('fg_comm', v.fgComm);
  if (v.fgQ !== null) p.set('fg_q', v.fgQ);
  if (v.fgInv) p.set('fg_inv', '1');
  if (v.fgZoom.length) p.set('fg_zoom', v.fgZoom.join(';'));
  if (v.fgDiff) p.set('fg_diff', '1');
  if (v.fgWarm) p.set('fg_warm', '1');
  if (v.fgA !== null) p.set('fg_a', String(v.fgA));
  if (v.fgB !== null) p.set('fg_b', String(v.fgB));
  if (v.fgBAn !== null) p.set('fg_ban', v.fgBAn);
  if (v.v0 !== null && v.v1 !== null) {
    p.set('v0', String(v.v0));
    p.set('v1', String(v.v1));
  }
  if (v.tlN !== DEFAULT_VIEW.tlN) p.set('tl_n', String(v.tlN));
  if (v.tlSel !== null) p.set('tl_sel', encodeRequestRef(v.tlSel));
  if (v.tlArrows) p.set('tl_arrows', '1');
  if (v.tlMark !== null) p.set('tl_mark', `${v.tlMark[0]}_${v.tlMark[1] ?? ''}`);
  if (v.tlPin.length) p.set('tl_pin', v.tlPin.join('|'));
  if (v.tlFold.length) p.set('tl_fold', v.tlFold.join('|'));
  if (v.tlQ !== null) p.set('tl_q', v.tlQ);
  if (v.wp !== null) p.set('wp', encodeRequestRef(v.wp));
  if (v.wpComm !== null) p.set('wp_comm', v.wpComm);
  if (v.wpLock !== null) p.set('wp_lock', v.wpLock);
  if (v.shm !== null) p.set('shm', v.shm);
  if (v.shf !== null) p.set('shf', v.shf);
  if (v.hbox !== null) p.set('hbox', encodeHeatmapBox(v.hbox));
  if (v.wait !== null) p.set('wait', encodeRequestRef(v.wait));
  if (v.sql !== null) p.set('sql', v.sql);
  if (v.sqlChart !== null) encodeSqlChart(p, v.sqlChart);
  if (v.sqlSort !== null) {
    p.set('sql_sort', v.sqlSort.col);
    if (v.sqlSort.desc) p.set('sql_desc', '1');
  }
  return p;
}

/** The link (`?…`) to the Stalls tab listing the waits on a lock (as flame graphs mark frames, /waits?lock_key=),
 * from the view `v`: like every cross-tab link, it keeps the analysis-wide time range and the URL's other selections. */
export function waitsOnLockLink(v: ViewState, lockKey: string): string {
  // no chain open: its detail, revealed, would pull the page away from the waits listed on top
  return `?${encodeView(updateView(v, { tab: 'stalls', lockKey, chain: null, link: null })).toString()}`;
}

/** Apply a partial update. Changing the grouping clears the row filter of the other grouping. */
export function updateView(v: ViewState, patch: Partial<ViewState>): ViewState {
  const next = { ...v, ...patch };
  if (patch.by && patch.by !== v.by) {
    next.pid = null;
    next.dev = null;
  }
  // One lock filter of the waits at a time: the typed text or the lock from a frame.
  if (patch.lock !== undefined && patch.lockKey === undefined) next.lockKey = null;
  if (patch.lockKey !== undefined && patch.lock === undefined) next.lock = null;
  // Another chain: its links are not those of the previous one.
  if (patch.chain !== undefined && patch.chain !== v.chain && patch.link === undefined) next.link = null;
  // Inverting, or another task, changes the tree: the zoomed path no longer means the same frame.
  const reshaped =
    (patch.fgInv !== undefined && patch.fgInv !== v.fgInv) ||
    (patch.fgPid !== undefined && patch.fgPid !== v.fgPid) ||
    (patch.fgComm !== undefined && patch.fgComm !== v.fgComm);
  if (reshaped && patch.fgZoom === undefined) next.fgZoom = [];
  // Other pair filters: the selected pair may not be among the pairs listed any more.
  const refiltered = (patch.wpComm !== undefined && patch.wpComm !== v.wpComm) || (patch.wpLock !== undefined && patch.wpLock !== v.wpLock);
  if (refiltered && patch.wp === undefined) next.wp = null;
  // Another Stalls heatmap metric: the filter named a lock or a function of the other one.
  if (patch.shm !== undefined && patch.shm !== v.shm && patch.shf === undefined) next.shf = null;
  // Another heatmap (metric or filter): a box drawn on the previous one does not hold the same events.
  const dispatchRedrawn = patch.hm !== undefined && patch.hm !== v.hm && v.hbox?.metric === v.hm;
  const stallsRedrawn =
    ((patch.shm !== undefined && patch.shm !== v.shm) || (patch.shf !== undefined && patch.shf !== v.shf)) &&
    (v.hbox?.metric === 'wait' || v.hbox?.metric === 'func'); // a box on the Stalls heatmap (shm may be automatic)
  if ((dispatchRedrawn || stallsRedrawn) && patch.hbox === undefined) next.hbox = null;
  // Another SQL query: its result has other columns, so its own default chart and the rows as it returns them.
  if (patch.sql !== undefined && patch.sql !== v.sql) {
    if (patch.sqlChart === undefined) next.sqlChart = null;
    if (patch.sqlSort === undefined) next.sqlSort = null;
  }
  return next;
}
