// Long tables show their first rows, sorted, with "show all" and a filter (a real blkparse names hundreds of
// processes: the table below them was 7,000 px down the page).
import { useState } from 'react';

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
