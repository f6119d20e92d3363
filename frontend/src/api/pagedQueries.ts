// The long lists a page at a time (GET …/requests/page, …/waits/page, …/calls?cursor=): a table's first page is a
// query of its own (prefetched from the URL by tabQueries.ts, cached), its further pages are asked by the cursor
// of the page before (components/LongTable.tsx: usePagedRows), each row once whatever the sort and filters.
import { keepPreviousData, queryOptions, useQuery } from '@tanstack/react-query';
import { api, unwrap } from './client';
import type { LockFilter, RequestFilter, Window } from './queries';
import type { RequestOrder } from '../state/viewState';

export type Page<T> = { items: T[]; next_cursor: string | null };

/** Rows of each page after a table's first ("show more"; "show all" asks PAGE_MAX at a time). */
export const MORE_PAGE = 500;
export const PAGE_MAX = 5000;

const win = (w: Window) => (w.t0 !== null && w.t1 !== null ? { t0_ns: w.t0, t1_ns: w.t1 } : {});

function requestsParams(order: RequestOrder, f: RequestFilter) {
  return { order, ...(f.pid !== null ? { pid: f.pid } : {}), ...(f.dev !== null ? { dev: f.dev } : {}), ...win(f) };
}

export function fetchRequestsPage(id: string, order: RequestOrder, f: RequestFilter, limit: number, cursor: string | null, signal?: AbortSignal) {
  return unwrap(
    api.GET('/api/analyses/{analysis_id}/requests/page', {
      params: { path: { analysis_id: id }, query: { ...requestsParams(order, f), limit, ...(cursor !== null ? { cursor } : {}) } },
      signal,
    }),
  );
}

/** The first `limit` requests in this order. */
export const requestsPageQuery = (id: string, order: RequestOrder, limit: number, f: RequestFilter) =>
  queryOptions({
    queryKey: ['requests-page', id, order, limit, f.pid, f.dev, f.t0, f.t1],
    queryFn: ({ signal }) => fetchRequestsPage(id, order, f, limit, null, signal),
  });

export function useRequestsPage(id: string, order: RequestOrder, limit: number, f: RequestFilter) {
  return useQuery({ ...requestsPageQuery(id, order, limit, f), placeholderData: keepPreviousData });
}

/** The waits' window: those overlapping it, or (starting) those starting in it, as Compare counts a range's. */
export type WaitsWindow = Window & { starting?: boolean };

function waitsParams(f: LockFilter, w: WaitsWindow, idle: boolean) {
  return {
    order: 'duration' as const,
    ...(f.lock !== null ? { lock: f.lock } : {}),
    ...(f.lockKey !== null ? { lock_key: f.lockKey } : {}),
    ...(idle ? { idle: true } : {}),
    ...win(w),
    ...(startsIn(w) ? { starting: true } : {}),
  };
}

/** Whether only the waits starting in the window are asked: `starting` with both ends set (else no window). */
const startsIn = (w: WaitsWindow) => !!w.starting && w.t0 !== null && w.t1 !== null;

export function fetchWaitsPage(id: string, f: LockFilter, w: WaitsWindow, idle: boolean, limit: number, cursor: string | null, signal?: AbortSignal) {
  return unwrap(
    api.GET('/api/analyses/{analysis_id}/waits/page', {
      params: { path: { analysis_id: id }, query: { ...waitsParams(f, w, idle), limit, ...(cursor !== null ? { cursor } : {}) } },
      signal,
    }),
  );
}

/** The first `limit` waits that are stalls, longest first (with `idle`, idle sleeps too). */
export const waitsPageQuery = (id: string, f: LockFilter, limit: number, w: WaitsWindow, idle: boolean) =>
  queryOptions({
    queryKey: ['waits-page', id, f.lock, f.lockKey, limit, w.t0, w.t1, startsIn(w), idle],
    queryFn: ({ signal }) => fetchWaitsPage(id, f, w, idle, limit, null, signal),
  });

export function useWaitsPage(id: string, f: LockFilter, limit: number, w: WaitsWindow, idle: boolean) {
  return useQuery({ ...waitsPageQuery(id, f, limit, w, idle), placeholderData: keepPreviousData });
}

export type CallsWindow = { pid: number; sourceId: number; t0: number; t1: number };

/** One task's calls in a window, by entry time: `limit` of them after `cursor` (null: the first). */
export function fetchCalls(id: string, w: CallsWindow, limit: number, cursor: string | null, signal?: AbortSignal) {
  return unwrap(
    api.GET('/api/analyses/{analysis_id}/calls', {
      params: {
        path: { analysis_id: id },
        query: { pid: w.pid, source_id: w.sourceId, t0_ns: w.t0, t1_ns: w.t1, limit, ...(cursor !== null ? { cursor } : {}) },
      },
      signal,
    }),
  );
}

/** The first `limit` calls of the task in the window (none asked while `w` is null). */
export function useCallsPage(id: string, w: CallsWindow | null, limit: number) {
  return useQuery({
    queryKey: ['calls', id, w?.pid, w?.sourceId, w?.t0, w?.t1, limit],
    enabled: w !== null,
    queryFn: ({ signal }) => fetchCalls(id, w!, limit, null, signal),
  });
}
