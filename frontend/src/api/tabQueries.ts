// What a tab asks the server for first, from the view state alone (the URL): the tab's views ask exactly this
// (the same builders, parameters and constants), and main.tsx starts it before the analysis, the tab's code and
// its charts have arrived, so that the requests run while the page's scripts are parsed.
import type { FetchQueryOptions, QueryClient } from '@tanstack/react-query';
import { decodeView, type ViewState } from '../state/viewState';
import {
  analysisQuery,
  chainsQuery,
  dispatchSummaryQuery,
  flamegraphQuery,
  heatmapMetricsQuery,
  heatmapQuery,
  latencyOverTimeQuery,
  marksQuery,
  offcpuTasksQuery,
  timelineQuery,
  type HeatmapQuery,
  type RequestFilter,
  type TimelineQuery,
} from './queries';
import { requestsPageQuery, waitsPageQuery } from './pagedQueries';

/** Dispatch: buckets of the latency-over-time chart, rows of the requests table's first page. */
export const LATENCY_BUCKETS = 240;
export const REQUESTS_LIMIT = 100;
/** Every latency heatmap (Dispatch and Stalls): time bins × latency bins. */
export const HEATMAP_X_BINS = 120;
export const HEATMAP_Y_BINS = 40;
/** Pixels the timeline asks its window for. */
export const TIMELINE_WIDTH_PX = 1200;

/** Dispatch's filters of the block requests: process, device, the analysis-wide time range. */
export const blockFilter = (v: ViewState): RequestFilter => ({ pid: v.pid, dev: v.dev, t0: v.t0, t1: v.t1 });

/** Dispatch's latency heatmap. */
export const latencyHeatmap = (v: ViewState): HeatmapQuery => ({ metric: v.hm, filter: null, ...blockFilter(v) });

/** The timeline's window as the URL says (null: the whole analysis). */
export const timelineWindow = (v: ViewState, widthPx = TIMELINE_WIDTH_PX): TimelineQuery => ({
  v0: v.v0,
  v1: v.v1,
  widthPx,
  maxLanes: v.tlN,
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyQuery = FetchQueryOptions<any, any, any, any>;

/** Stalls' waits heatmap, as StallsHeatmap asks it first (its metric chosen automatically asks for waits until
 * the metrics say the capture has none); null: a function's durations, which wait for the metrics. */
export const stallsHeatmap = (v: ViewState): HeatmapQuery | null =>
  v.shm === 'func' ? null : { metric: 'wait', filter: v.shf, pid: null, dev: null, t0: v.t0, t1: v.t1, idle: v.idle };

/** The queries the tab of this view state draws first (none when the tab is the analysis' default: it depends on
 * the analysis' sources, and main.tsx asks again once the analysis is there). */
export function firstQueries(id: string, v: ViewState): AnyQuery[] {
  const range = { t0: v.t0, t1: v.t1 };
  switch (v.tab) {
    case 'stalls': {
      const hm = stallsHeatmap(v);
      return [
        chainsQuery(id, range),
        waitsPageQuery(id, { lock: v.lock, lockKey: v.lockKey }, 100, { ...range, starting: v.wStart }, v.idle),
        marksQuery(id),
        heatmapMetricsQuery(id, 100, v.idle),
        ...(hm ? [heatmapQuery(id, hm, HEATMAP_X_BINS, HEATMAP_Y_BINS)] : []),
      ];
    }
    case 'offcpu':
      return [
        offcpuTasksQuery(id),
        ...(v.fgDiff ? [] : [flamegraphQuery(id, { unit: v.fgUnit, pid: v.fgPid, comm: v.fgComm, filter: v.fgQ, invert: v.fgInv })]),
      ];
    case 'timeline':
      return [timelineQuery(id, timelineWindow(v))];
    case 'dispatch':
      return [
        latencyOverTimeQuery(id, LATENCY_BUCKETS, blockFilter(v)),
        heatmapQuery(id, latencyHeatmap(v), HEATMAP_X_BINS, HEATMAP_Y_BINS),
        dispatchSummaryQuery(id, v.by, { t0: v.t0, t1: v.t1 }),
        requestsPageQuery(id, v.order, REQUESTS_LIMIT, blockFilter(v)),
      ];
    default:
      return [];
  }
}

/** The analysis page an address is, if it is one: its id and view state. */
export function analysisPageOf(pathname: string, search: string): { id: string; view: ViewState } | null {
  const m = /^\/a\/([^/]+)\/?$/.exec(pathname);
  if (!m) return null;
  return { id: decodeURIComponent(m[1]), view: decodeView(new URLSearchParams(search)) };
}

/** Start the analysis and its tab's first queries (into the cache the views read). */
export function prefetchAnalysisPage(qc: QueryClient, id: string, view: ViewState): void {
  void qc.prefetchQuery(analysisQuery(id));
  for (const q of firstQueries(id, view)) void qc.prefetchQuery(q);
}
