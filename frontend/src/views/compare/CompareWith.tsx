// "Compare with…": pick the other side of a comparison from the analysis list, or compare two halves of this
// analysis' time span. On the home page's rows and on the Compare page when only one analysis is named.
import { useState } from 'react';
import { useNavigate } from 'react-router';
import { useAnalyses } from '../../api/queries';
import { api, unwrap } from '../../api/client';
import { compareLink, encodeCompare, halves } from './compareState';
import './compare.css';

export const HALVES = '__halves__';

/** The link of the choice `other` for analysis `id` (HALVES: its two halves, which needs its span). */
async function linkOf(id: string, other: string): Promise<string> {
  if (other !== HALVES) return compareLink({ a: id, b: other });
  const a = await unwrap(api.GET('/api/analyses/{analysis_id}', { params: { path: { analysis_id: id } } }));
  if (a.t_min_ns === null || a.t_max_ns === null || a.t_max_ns <= a.t_min_ns) return compareLink({ a: id, b: id });
  return `/compare?${encodeCompare(halves(id, a.t_min_ns, a.t_max_ns)).toString()}`;
}

/** A "Compare with…" button that opens a choice of the other analysis. */
export function CompareWith({ id, name, open: startOpen = false }: { id: string; name: string; open?: boolean }) {
  const [open, setOpen] = useState(startOpen);
  const [error, setError] = useState<string | null>(null);
  const list = useAnalyses();
  const navigate = useNavigate();
  if (!open) {
    return (
      <button type="button" className="btn small" aria-label={`Compare ${name} with…`} onClick={() => setOpen(true)}>
        Compare with…
      </button>
    );
  }
  const others = (list.data?.items ?? []).filter((x) => x.id !== id);
  return (
    <span className="compare-with" role="group" aria-label={`Compare ${name} with`}>
      <select
        aria-label={`Compare ${name} with`}
        data-testid="compare-with"
        defaultValue=""
        autoFocus
        onChange={(e) => {
          const other = e.currentTarget.value;
          if (!other) return;
          linkOf(id, other).then(
            (to) => navigate(to),
            (err: unknown) => setError(err instanceof Error ? err.message : String(err)),
          );
        }}
      >
        <option value="" disabled>
          {list.isPending ? 'loading the analyses…' : `compare ${name} (before) with…`}
        </option>
        <option value={HALVES}>itself: first half → second half of its time span</option>
        {others.map((x) => (
          <option key={x.id} value={x.id}>
            {x.name || x.id} (after)
          </option>
        ))}
      </select>{' '}
      {!startOpen && (
        <button type="button" className="btn small" onClick={() => setOpen(false)}>
          Cancel
        </button>
      )}
      {error && (
        <span className="error" role="alert">
          {' '}
          {error}
        </span>
      )}
    </span>
  );
}
