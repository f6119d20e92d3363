// TanStack Query hooks: the only place views get server state from.
import { keepPreviousData, queryOptions, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { ApiError, api, unwrap } from './client';
import { editHeaders, forgetAnalysis, getToken, ownIds, setToken } from './access';
import type { AnalysisSummary, ApiErrorBody } from './types';
import { decodeTimeline, type Timeline } from '../charts/timeline';
import type { Grouping, HeatmapBox, HeatmapMetric, RequestRef } from '../state/viewState';

export type Window = { t0: number | null; t1: number | null };
const win = (w: Window) => (w.t0 !== null && w.t1 !== null ? { t0_ns: w.t0, t1_ns: w.t1 } : {});

/** The home page's list. `all`: every analysis (a local server, or signed in with the token); `own`: a shared
 * server without the token: only the analyses this browser created (their ids kept with their edit keys). A kept
 * token that the server refuses is forgotten (`tokenRefused`). */
export type AnalysesList = { mode: 'all' | 'own'; items: AnalysisSummary[]; signedIn: boolean; tokenRefused: boolean };

export function useAnalyses() {
  return useQuery({
    queryKey: ['analyses'],
    queryFn: async ({ signal }): Promise<AnalysesList> => {
      const signedIn = getToken() !== null;
      const all = await api.GET('/api/analyses', { signal });
      if (all.response.ok && all.data) return { mode: 'all', items: all.data, signedIn, tokenRefused: false };
      if (all.response.status !== 401) {
        throw new ApiError(all.response.status, (all.error as ApiErrorBody) ?? null, `${all.response.status} could not list the analyses`);
      }
      if (signedIn) setToken(null);
      const ids = ownIds();
      const items = ids.length ? await unwrap(api.GET('/api/analyses', { params: { query: { id: ids } }, signal })) : [];
      return { mode: 'own', items, signedIn: false, tokenRefused: signedIn };
    },
  });
}

/** DELETE an analysis (its edit key, or the token, on a shared server); this browser forgets its key. */
export function useDeleteAnalysis() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (id: string) => {
      const { error, response } = await api.DELETE('/api/analyses/{analysis_id}', {
        params: { path: { analysis_id: id } },
        headers: editHeaders(id),
      });
      if (!response.ok) throw new ApiError(response.status, (error as ApiErrorBody) ?? null, `${response.status} could not delete`);
    },
    onSuccess: (_, id) => {
      forgetAnalysis(id);
      qc.removeQueries({ predicate: (query) => query.queryKey[1] === id });
      return qc.invalidateQueries({ queryKey: ['analyses'] });
    },
  });
}

// The queries a page can ask before its views are drawn (api/tabQueries.ts: main.tsx starts them from the URL)
// are built here once, for the hooks and for that early start alike: same key, same request.

export const analysisQuery = (id: string) =>
  queryOptions({
    queryKey: ['analysis', id],
    queryFn: ({ signal }) => unwrap(api.GET('/api/analyses/{analysis_id}', { params: { path: { analysis_id: id } }, signal })),
    retry: (n, e) => (e as { status?: number }).status !== 404 && n < 2,
  });

export function useAnalysis(id: string) {
  return useQuery(analysisQuery(id));
}

export const dispatchSummaryQuery = (id: string, by: Grouping, w: Window) =>
  queryOptions({
    queryKey: ['dispatch-summary', id, by, w.t0, w.t1],
    queryFn: ({ signal }) =>
      unwrap(api.GET('/api/analyses/{analysis_id}/dispatch-summary', { params: { path: { analysis_id: id }, query: { by, ...win(w) } }, signal })),
  });

export function useDispatchSummary(id: string, by: Grouping, w: Window) {
  return useQuery({ ...dispatchSummaryQuery(id, by, w), placeholderData: keepPreviousData });
}

export type RequestFilter = Window & { pid: number | null; dev: string | null };

export const latencyOverTimeQuery = (id: string, buckets: number, f: RequestFilter) =>
  queryOptions({
    queryKey: ['latency-over-time', id, buckets, f.pid, f.dev, f.t0, f.t1],
    queryFn: ({ signal }) =>
      unwrap(
        api.GET('/api/analyses/{analysis_id}/latency-over-time', {
          params: {
            path: { analysis_id: id },
            query: { buckets, ...(f.pid !== null ? { pid: f.pid } : {}), ...(f.dev !== null ? { dev: f.dev } : {}), ...win(f) },
          },
          signal,
        }),
      ),
  });

export function useLatencyOverTime(id: string, buckets: number, f: RequestFilter) {
  return useQuery({ ...latencyOverTimeQuery(id, buckets, f), placeholderData: keepPreviousData });
}

/** Scheduler messages a request detail brings by default (the server spreads them over the whole wait), and at most. */
export const MESSAGES = 500;
export const MAX_MESSAGES = 20000;

export function useRequestDetail(id: string, ref: RequestRef | null, maxMessages = MESSAGES) {
  return useQuery({
    queryKey: ['request', id, ref?.sourceId, ref?.line, maxMessages],
    enabled: ref !== null,
    queryFn: ({ signal }) =>
      unwrap(
        api.GET('/api/analyses/{analysis_id}/requests/{source_id}/{line}', {
          params: { path: { analysis_id: id, source_id: ref!.sourceId, line: ref!.line }, query: { max_messages: maxMessages } },
          signal,
        }),
      ),
    // while more messages of the same request load, the fewer ones stay (another request: nothing to show yet)
    placeholderData: (prev, prevQuery) => (prevQuery?.queryKey[2] === ref?.sourceId && prevQuery?.queryKey[3] === ref?.line ? prev : undefined),
    retry: (n, e) => (e as { status?: number }).status !== 404 && n < 2,
  });
}

// ---- Stalls (ftrace) ----

/** The chains whose first wait overlaps the window (each keeps its rank as id). */
export const chainsQuery = (id: string, w: Window) =>
  queryOptions({
    queryKey: ['chains', id, w.t0, w.t1],
    queryFn: ({ signal }) =>
      unwrap(api.GET('/api/analyses/{analysis_id}/chains', { params: { path: { analysis_id: id }, query: { limit: 100, ...win(w) } }, signal })),
  });

export function useChains(id: string, w: Window, enabled = true) {
  return useQuery({ ...chainsQuery(id, w), enabled, placeholderData: keepPreviousData });
}

/** The waits' lock filter: `lock` contains the text (typed), `lockKey` is the lock's object or primitive exactly. */
export type LockFilter = { lock: string | null; lockKey: string | null };

export const marksQuery = (id: string) =>
  queryOptions({
    queryKey: ['marks', id],
    queryFn: ({ signal }) => unwrap(api.GET('/api/analyses/{analysis_id}/marks', { params: { path: { analysis_id: id } }, signal })),
  });

export function useMarks(id: string, enabled = true) {
  return useQuery({ ...marksQuery(id), enabled });
}

// ---- Off-CPU flame graph ----

export type FlameQuery = {
  unit: 'us' | 'stacks';
  pid: number | null;
  comm: string | null;
  filter: string | null;
  invert: boolean;
};

export const flamegraphQuery = (id: string, f: FlameQuery) =>
  queryOptions({
    queryKey: ['flamegraph', id, f.unit, f.pid, f.comm, f.filter, f.invert],
    queryFn: ({ signal }) =>
      unwrap(
        api.GET('/api/analyses/{analysis_id}/flamegraph', {
          params: {
            path: { analysis_id: id },
            query: {
              unit: f.unit,
              invert: f.invert,
              ...(f.pid !== null ? { pid: f.pid } : {}),
              ...(f.comm !== null ? { comm: f.comm } : {}),
              ...(f.filter !== null ? { filter: f.filter } : {}),
            },
          },
          signal,
        }),
      ),
  });

export function useFlamegraph(id: string, f: FlameQuery, enabled = true) {
  return useQuery({ ...flamegraphQuery(id, f), enabled, placeholderData: keepPreviousData });
}

export type DiffQuery = { unit: 'us' | 'stacks'; filter: string | null; invert: boolean; a: number | null; b: number | null; bAnalysis: string | null };

export function useFlameDiff(id: string, d: DiffQuery, enabled = true) {
  return useQuery({
    queryKey: ['flamegraph-diff', id, d.unit, d.filter, d.invert, d.a, d.b, d.bAnalysis],
    enabled,
    queryFn: ({ signal }) =>
      unwrap(
        api.GET('/api/analyses/{analysis_id}/flamegraph/diff', {
          params: {
            path: { analysis_id: id },
            query: {
              unit: d.unit,
              invert: d.invert,
              ...(d.filter !== null ? { filter: d.filter } : {}),
              ...(d.a !== null ? { a: d.a } : {}),
              ...(d.b !== null ? { b: d.b } : {}),
              ...(d.bAnalysis !== null ? { b_analysis: d.bAnalysis } : {}),
            },
          },
          signal,
        }),
      ),
    placeholderData: keepPreviousData,
  });
}

export const offcpuTasksQuery = (id: string) =>
  queryOptions({
    queryKey: ['offcpu-tasks', id],
    queryFn: ({ signal }) =>
      unwrap(api.GET('/api/analyses/{analysis_id}/offcpu-tasks', { params: { path: { analysis_id: id }, query: { limit: 200 } }, signal })),
  });

export function useOffcpuTasks(id: string) {
  return useQuery(offcpuTasksQuery(id));
}

/** idle: metric=wait counts idle sleeps too (the Stalls tab's "idle sleeps too"); absent: stalls only. */
export type HeatmapQuery = RequestFilter & { metric: HeatmapMetric; filter: string | null; idle?: boolean };

/** The heatmap's own filters: pid for all metrics, dev for the block ones, filter for func and wait, idle for wait. */
function heatmapFilters(q: HeatmapQuery) {
  const block = q.metric !== 'func' && q.metric !== 'wait';
  return {
    metric: q.metric,
    ...(q.metric === 'wait' && q.idle ? { idle: true } : {}),
    ...(q.pid !== null ? { pid: q.pid } : {}),
    ...(block && q.dev !== null ? { dev: q.dev } : {}),
    ...(!block && q.filter !== null ? { filter: q.filter } : {}),
  };
}

export const heatmapQuery = (id: string, q: HeatmapQuery, xBins: number, yBins: number) =>
  queryOptions({
    queryKey: ['heatmap', id, q.metric, q.filter, xBins, yBins, q.pid, q.dev, q.t0, q.t1, q.metric === 'wait' && !!q.idle],
    queryFn: ({ signal }) =>
      unwrap(
        api.GET('/api/analyses/{analysis_id}/heatmap', {
          params: { path: { analysis_id: id }, query: { ...heatmapFilters(q), x_bins: xBins, y_bins: yBins, ...win(q) } },
          signal,
        }),
      ),
  });

export function useHeatmap(id: string, q: HeatmapQuery, xBins: number, yBins: number, enabled = true) {
  return useQuery({ ...heatmapQuery(id, q, xBins, yBins), enabled, placeholderData: keepPreviousData });
}

/** The events inside a brushed box of a heatmap (the box's time range replaces the window). */
export function useHeatmapEvents(id: string, q: HeatmapQuery, box: HeatmapBox | null, limit = 200) {
  return useQuery({
    queryKey: ['heatmap-events', id, q.metric, q.filter, q.pid, q.dev, box?.t0, box?.t1, box?.latMin, box?.latMax, limit, q.metric === 'wait' && !!q.idle],
    enabled: box !== null,
    queryFn: ({ signal }) =>
      unwrap(
        api.GET('/api/analyses/{analysis_id}/heatmap/events', {
          params: {
            path: { analysis_id: id },
            query: {
              ...heatmapFilters(q),
              limit,
              t0_ns: box!.t0,
              t1_ns: box!.t1,
              ...(box!.latMin !== null ? { lat_min_ns: box!.latMin } : {}),
              ...(box!.latMax !== null ? { lat_max_ns: box!.latMax } : {}),
            },
          },
          signal,
        }),
      ),
    placeholderData: keepPreviousData,
  });
}

/** What a heatmap can show; idle: the waits and their locks counted with idle sleeps too. */
export const heatmapMetricsQuery = (id: string, limit = 100, idle = false) =>
  queryOptions({
    queryKey: ['heatmap-metrics', id, limit, idle],
    queryFn: ({ signal }) =>
      unwrap(
        api.GET('/api/analyses/{analysis_id}/heatmap/metrics', {
          params: { path: { analysis_id: id }, query: { limit, ...(idle ? { idle: true } : {}) } },
          signal,
        }),
      ),
    placeholderData: keepPreviousData,
  });

export function useHeatmapMetrics(id: string, limit = 100, idle = false) {
  return useQuery(heatmapMetricsQuery(id, limit, idle));
}

/** The timeline's window (null: the whole analysis, the server's default) drawn on widthPx pixels. */
export type TimelineQuery = { v0: number | null; v1: number | null; widthPx: number; maxLanes: number };

export const timelineQuery = (id: string, q: TimelineQuery) => {
  const w = q.v0 !== null && q.v1 !== null ? { t0_ns: q.v0, t1_ns: q.v1 } : {};
  return queryOptions({
    queryKey: ['timeline', id, q.v0, q.v1, q.widthPx, q.maxLanes],
    queryFn: async ({ signal }): Promise<Timeline> =>
      decodeTimeline(
        await unwrap(
          api.GET('/api/analyses/{analysis_id}/timeline', {
            params: { path: { analysis_id: id }, query: { width_px: q.widthPx, max_lanes: q.maxLanes, ...w } },
            signal,
          }),
        ),
      ),
  });
};

export function useTimeline(id: string, q: TimelineQuery, enabled = true) {
  return useQuery({ ...timelineQuery(id, q), placeholderData: keepPreviousData, enabled });
}

export type Placement = { clock_offset_ns: number } | { same_span_as: number };

/** PATCH a source's place on the timeline; everything of the analysis is read again (times moved). */
export function usePlaceSource(id: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: ({ sourceId, placement }: { sourceId: number; placement: Placement }) =>
      unwrap(
        api.PATCH('/api/analyses/{analysis_id}/sources/{source_id}', {
          params: { path: { analysis_id: id, source_id: sourceId } },
          headers: editHeaders(id),
          body: placement,
        }),
      ),
    onSuccess: () => qc.invalidateQueries({ predicate: (query) => query.queryKey[1] === id }),
  });
}

// ---- Wake-up pairs (offwaketime) ----

/** `lockKey`: the pairs on that lock exactly (/wakers?lock_key=, as /waits?lock_key=: `down` is not `down_read`). */
export type WakersQuery = { pid: number | null; comm: string | null; lockKey: string | null; limit: number };

/** The query parameters of /wakers for `q`. */
export function wakersParams(q: WakersQuery) {
  return {
    limit: q.limit,
    ...(q.pid !== null ? { pid: q.pid } : {}),
    ...(q.comm !== null ? { comm: q.comm } : {}),
    ...(q.lockKey !== null ? { lock_key: q.lockKey } : {}),
  };
}

/** Per lock, how many waits /waits?lock_key= lists in the window and their total (what a "Waits on this lock" link,
 * which keeps the time range, leads to). */
export function useLockWaits(id: string, lockKeys: string[], w: Window, enabled = true) {
  return useQuery({
    queryKey: ['waits-by-lock', id, lockKeys, w.t0, w.t1],
    enabled: enabled && lockKeys.length > 0,
    queryFn: ({ signal }) =>
      unwrap(
        api.GET('/api/analyses/{analysis_id}/waits/by-lock', {
          params: { path: { analysis_id: id }, query: { lock_key: lockKeys, ...win(w) } },
          signal,
        }),
      ),
    placeholderData: keepPreviousData,
  });
}

export function useWakers(id: string, q: WakersQuery, enabled = true) {
  return useQuery({
    queryKey: ['wakers', id, q.pid, q.comm, q.lockKey, q.limit],
    enabled,
    queryFn: ({ signal }) =>
      unwrap(api.GET('/api/analyses/{analysis_id}/wakers', { params: { path: { analysis_id: id }, query: wakersParams(q) }, signal })),
    placeholderData: keepPreviousData,
  });
}
