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
