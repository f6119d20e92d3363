// TanStack Query hooks: the only place views get server state from.
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { api, unwrap } from './client';
import type { Grouping, RequestOrder, RequestRef } from '../state/viewState';

export type Window = { t0: number | null; t1: number | null };
const win = (w: Window) => (w.t0 !== null && w.t1 !== null ? { t0_ns: w.t0, t1_ns: w.t1 } : {});

export function useAnalyses() {
  return useQuery({
    queryKey: ['analyses'],
    queryFn: ({ signal }) => unwrap(api.GET('/api/analyses', { signal })),
  });
}

export function useAnalysis(id: string) {
  return useQuery({
    queryKey: ['analysis', id],
    queryFn: ({ signal }) => unwrap(api.GET('/api/analyses/{analysis_id}', { params: { path: { analysis_id: id } }, signal })),
    retry: (n, e) => (e as { status?: number }).status !== 404 && n < 2,
  });
}

export function useDispatchSummary(id: string, by: Grouping, w: Window) {
  return useQuery({
    queryKey: ['dispatch-summary', id, by, w.t0, w.t1],
    queryFn: ({ signal }) =>
      unwrap(api.GET('/api/analyses/{analysis_id}/dispatch-summary', { params: { path: { analysis_id: id }, query: { by, ...win(w) } }, signal })),
    placeholderData: keepPreviousData,
  });
}

export type RequestFilter = Window & { pid: number | null; dev: string | null };

export function useRequests(id: string, order: RequestOrder, limit: number, f: RequestFilter) {
  return useQuery({
    queryKey: ['requests', id, order, limit, f.pid, f.dev, f.t0, f.t1],
    queryFn: ({ signal }) =>
      unwrap(
        api.GET('/api/analyses/{analysis_id}/requests', {
          params: {
            path: { analysis_id: id },
            query: { order, limit, ...(f.pid !== null ? { pid: f.pid } : {}), ...(f.dev !== null ? { dev: f.dev } : {}), ...win(f) },
          },
          signal,
        }),
      ),
    placeholderData: keepPreviousData,
  });
}

export function useLatencyOverTime(id: string, buckets: number, f: RequestFilter) {
  return useQuery({
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
    placeholderData: keepPreviousData,
  });
}

export function useRequestDetail(id: string, ref: RequestRef | null) {
  return useQuery({
    queryKey: ['request', id, ref?.sourceId, ref?.line],
    enabled: ref !== null,
    queryFn: ({ signal }) =>
      unwrap(
        api.GET('/api/analyses/{analysis_id}/requests/{source_id}/{line}', {
          params: { path: { analysis_id: id, source_id: ref!.sourceId, line: ref!.line } },
          signal,
        }),
      ),
    retry: (n, e) => (e as { status?: number }).status !== 404 && n < 2,
  });
}

// ---- Stalls (ftrace) ----

export function useChains(id: string, enabled = true) {
  return useQuery({
    queryKey: ['chains', id],
    enabled,
    queryFn: ({ signal }) =>
      unwrap(api.GET('/api/analyses/{analysis_id}/chains', { params: { path: { analysis_id: id }, query: { limit: 100 } }, signal })),
  });
}

export function useWaits(id: string, lock: string | null, limit = 100) {
  return useQuery({
    queryKey: ['waits', id, lock, limit],
    queryFn: ({ signal }) =>
      unwrap(
        api.GET('/api/analyses/{analysis_id}/waits', {
          params: { path: { analysis_id: id }, query: { order: 'duration', limit, ...(lock !== null ? { lock } : {}) } },
          signal,
        }),
      ),
    placeholderData: keepPreviousData,
  });
}

export type CallsWindow = { pid: number; sourceId: number; t0: number; t1: number };

export function useCalls(id: string, w: CallsWindow | null) {
  return useQuery({
    queryKey: ['calls', id, w?.pid, w?.sourceId, w?.t0, w?.t1],
    enabled: w !== null,
    queryFn: ({ signal }) =>
      unwrap(
        api.GET('/api/analyses/{analysis_id}/calls', {
          params: { path: { analysis_id: id }, query: { pid: w!.pid, source_id: w!.sourceId, t0_ns: w!.t0, t1_ns: w!.t1, limit: 5000 } },
          signal,
        }),
      ),
  });
}

export function useMarks(id: string, enabled = true) {
  return useQuery({
    queryKey: ['marks', id],
    enabled,
    queryFn: ({ signal }) => unwrap(api.GET('/api/analyses/{analysis_id}/marks', { params: { path: { analysis_id: id } }, signal })),
  });
}

// ---- Off-CPU flame graph ----

export type FlameQuery = {
  unit: 'us' | 'stacks';
  pid: number | null;
  comm: string | null;
  filter: string | null;
  invert: boolean;
};

export function useFlamegraph(id: string, f: FlameQuery, enabled = true) {
  return useQuery({
    queryKey: ['flamegraph', id, f.unit, f.pid, f.comm, f.filter, f.invert],
    enabled,
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
    placeholderData: keepPreviousData,
  });
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

export function useOffcpuTasks(id: string) {
  return useQuery({
    queryKey: ['offcpu-tasks', id],
    queryFn: ({ signal }) =>
      unwrap(api.GET('/api/analyses/{analysis_id}/offcpu-tasks', { params: { path: { analysis_id: id }, query: { limit: 200 } }, signal })),
  });
}

export function useHeatmap(id: string, metric: 'i2d' | 'd2c' | 'q2c', xBins: number, yBins: number, f: RequestFilter) {
  return useQuery({
    queryKey: ['heatmap', id, metric, xBins, yBins, f.pid, f.dev, f.t0, f.t1],
    queryFn: ({ signal }) =>
      unwrap(
        api.GET('/api/analyses/{analysis_id}/heatmap', {
          params: {
            path: { analysis_id: id },
            query: {
              metric,
              x_bins: xBins,
              y_bins: yBins,
              ...(f.pid !== null ? { pid: f.pid } : {}),
              ...(f.dev !== null ? { dev: f.dev } : {}),
              ...win(f),
            },
          },
          signal,
        }),
      ),
    placeholderData: keepPreviousData,
  });
}
