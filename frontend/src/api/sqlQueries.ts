// The SQL console's server state (POST /api/analyses/{id}/query, GET /api/sql/views) and the download links of
// an analysis (every view as Parquet or CSV, the Perfetto trace, a chain's report text).
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { api, unwrap } from './client';

export const SQL_MAX_ROWS = 10_000;

export function useSqlViews() {
  return useQuery({
    queryKey: ['sql-views'],
    queryFn: ({ signal }) => unwrap(api.GET('/api/sql/views', { signal })),
    staleTime: Infinity,
  });
}

/** The result of one SELECT (null: nothing asked yet). A failed query is not retried: its message says why. */
export function useSqlQuery(id: string, sql: string | null) {
  return useQuery({
    queryKey: ['sql', id, sql],
    queryFn: ({ signal }) =>
      unwrap(
        api.POST('/api/analyses/{analysis_id}/query', {
          params: { path: { analysis_id: id } },
          body: { sql: sql ?? '', max_rows: SQL_MAX_ROWS },
          signal,
        }),
      ),
    enabled: sql !== null && sql.trim() !== '',
    retry: false,
    staleTime: Infinity,
    placeholderData: keepPreviousData,
  });
}

const base = (id: string) => `/api/analyses/${encodeURIComponent(id)}`;
export const exportUrl = (id: string, view: string, format: 'parquet' | 'csv') => `${base(id)}/export/${view}.${format}`;
export const perfettoUrl = (id: string) => `${base(id)}/export/perfetto.json`;
export const chainReportUrl = (id: string, rank: number) => `${base(id)}/chains/${rank}/report.txt`;
