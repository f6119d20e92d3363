// Long tables show their first rows, sorted, with "show all" and a filter (a real blkparse names hundreds of
// processes: the table below them was 7,000 px down the page). Lists the server pages (requests, waits, calls)
// bring their further rows by cursor: usePagedRows and MoreRows.
import { useEffect, useRef, useState } from 'react';
import type { Page } from '../api/pagedQueries';
import { formatCount } from '../lib/format';

export const FIRST_ROWS = 20;

/** How many rows to show: FIRST_ROWS until "show all"; back to FIRST_ROWS when `resetKey` changes. */
export function useRowLimit(resetKey: string): [number, (all: boolean) => void] {
  const [all, setAll] = useState<string | null>(null);
  return [all === resetKey ? Infinity : FIRST_ROWS, (a: boolean) => setAll(a ? resetKey : null)];
}

/** "Showing 20 of 225 · Show all" (or "Show the first 20"), nothing when every row fits. */
export function ShowAll({ shown, total, onAll, what = 'rows' }: { shown: number; total: number; onAll: (all: boolean) => void; what?: string }) {
  if (total <= FIRST_ROWS) return null;
  const all = shown >= total;
  return (
    <div className="show-all muted" data-testid="show-all">
      {all ? `all ${total} ${what}` : `the first ${shown} of ${total} ${what}`}{' '}
      <button className="btn small" onClick={() => onAll(!all)}>
        {all ? `Show the first ${FIRST_ROWS}` : `Show all ${total}`}
      </button>
    </div>
  );
}

/** A filter box for a table: filters as it is typed. */
export function TableFilter({ value, onChange, label }: { value: string; onChange: (v: string) => void; label: string }) {
  return (
    <input
      className="text-input table-filter"
      type="search"
      placeholder={`${label}…`}
      aria-label={label}
      value={value}
      onChange={(e) => onChange(e.target.value)}
    />
  );
}

type Loaded<T> = { of: Page<T> | undefined; rows: T[]; cursor: string | null };

/** The rows of a list paged by the server: its first page (a query of its own) and the pages after it, each asked
 * with the cursor of the one before. `more()` loads the next page, `all()` every page to the end (`stop()` ends
 * it); another first page (other sort or filters) starts over. `fetchPage(cursor, all, signal)`: the page after
 * `cursor` (`all`: while loading every page, so a bigger one). */
export function usePagedRows<T>(first: Page<T> | undefined, fetchPage: (cursor: string, all: boolean, signal: AbortSignal) => Promise<Page<T>>) {
  const [loaded, setLoaded] = useState<Loaded<T>>({ of: undefined, rows: [], cursor: null });
  const [loading, setLoading] = useState<'more' | 'all' | null>(null);
  const [error, setError] = useState<unknown>(null);
  const running = useRef<AbortController | null>(null);
  const current: Loaded<T> = loaded.of === first ? loaded : { of: first, rows: [], cursor: first?.next_cursor ?? null };
  useEffect(() => {
    setLoading(null);
    setError(null);
    return () => running.current?.abort(); // the rows of another list, or none: stop asking for this one's
  }, [first]);

  async function load(all: boolean) {
    if (first === undefined || current.cursor === null || running.current) return;
    const ctl = new AbortController();
    running.current = ctl;
    setLoading(all ? 'all' : 'more');
    setError(null);
    const rows = [...current.rows];
    let cursor: string | null = current.cursor;
    try {
      do {
        const page: Page<T> = await fetchPage(cursor!, all, ctl.signal);
        if (ctl.signal.aborted) break;
        rows.push(...page.items);
        cursor = page.next_cursor;
        setLoaded({ of: first, rows: [...rows], cursor });
      } while (all && cursor !== null && !ctl.signal.aborted);
    } catch (e) {
      if (!ctl.signal.aborted) setError(e);
    } finally {
      if (running.current === ctl) running.current = null;
      setLoading(null);
    }
  }

  return {
    rows: first ? (current.rows.length ? [...first.items, ...current.rows] : first.items) : [],
    hasMore: current.cursor !== null,
    loading,
    error,
    more: () => void load(false),
    all: () => void load(true),
    stop: () => running.current?.abort(),
  };
}

/** "the first 100 requests · Show more · Show all" under a paged list (nothing once every row is there). */
export function MoreRows({ paged, what }: { paged: ReturnType<typeof usePagedRows<unknown>>; what: string }) {
  const n = formatCount(paged.rows.length);
  if (!paged.hasMore && !paged.error) return null;
  return (
    <div className="show-all muted" data-testid="more-rows">
      {paged.loading === 'all' ? `loading every ${what}: ${n} so far…` : `the first ${n} ${what}`}{' '}
      {paged.loading === null ? (
        <>
          <button className="btn small" onClick={paged.more} data-testid="show-more">
            Show more
          </button>{' '}
          <button className="btn small" onClick={paged.all} data-testid="show-all-pages">
            Show all
          </button>
        </>
      ) : paged.loading === 'all' ? (
        <button className="btn small" onClick={paged.stop}>
          Stop
        </button>
      ) : (
        'loading…'
      )}
      {paged.error !== null && <span className="warn"> Could not load more: {String((paged.error as Error)?.message ?? paged.error)}</span>}
    </div>
  );
}
