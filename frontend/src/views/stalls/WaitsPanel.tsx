import { useState } from 'react';
import type { AnalysisDetail } from '../../api/types';
import { useWaits } from '../../api/queries';
import { ErrorBox, Loading } from '../../components/Status';
import { formatAbsTime, formatNs } from '../../lib/format';
import { useViewState } from '../../state/useViewState';

export function WaitsPanel({ analysis }: { analysis: AnalysisDetail }) {
  const [view, setView] = useViewState();
  const q = useWaits(analysis.id, { lock: view.lock, lockKey: view.lockKey }, 100, { t0: view.t0, t1: view.t1 }, view.idle); // the analysis-wide time range
  const [draft, setDraft] = useState(view.lock ?? '');
  const filter = waitsFilterText(view.lock, view.lockKey);
  return (
    <section className="panel" data-testid="waits-panel">
      <div className="panel-head">
        <h2>Waits</h2>
        {filter !== null ? (
          <span className="chip" title={view.lockKey !== null ? `the lock's object or primitive is ${view.lockKey}, exactly` : undefined}>
            {filter}
            <button aria-label="Clear lock filter" onClick={() => setView({ lock: null, lockKey: null })}>
              ×
            </button>
          </span>
        ) : (
          <span className="muted">{view.idle ? 'longest first, idle sleeps too' : 'stalls, longest first'}</span>
        )}
        <form
          className="inline-form"
          onSubmit={(e) => {
            e.preventDefault();
            setView({ lock: draft.trim() || null });
          }}
        >
          <input className="text-input" placeholder="filter by lock…" aria-label="Filter waits by lock" value={draft} onChange={(e) => setDraft(e.target.value)} />
        </form>
        <label className="control check" title="A task asleep interruptibly (S, I) on no known lock: a worker waiting for work, a nanosleep, a poll. Left out: they are not stalls.">
          <input type="checkbox" checked={view.idle} onChange={(e) => setView({ idle: e.target.checked })} /> idle sleeps too
        </label>
      </div>
      {q.isPending && <Loading what="waits" />}
      {q.isError && <ErrorBox title="Could not load the waits." error={q.error} />}
      {q.data && q.data.length === 0 && (
        <p className="muted">
          No {view.idle ? 'waits' : 'stalls'}
          {filter !== null ? ` ${filter}` : ''} in this {view.t0 !== null && view.t1 !== null ? 'time range' : 'trace'}
          {view.idle ? '.' : ' (idle sleeps left out).'}
        </p>
      )}
      {q.data && q.data.length > 0 && (
        <div className="table-scroll" style={{ maxHeight: 360 }}>
          <table className="grid compact" data-testid="waits-table">
            <thead>
              <tr>
                <th>Task</th>
                <th>Lock</th>
                <th className="num">Duration</th>
                <th className="num">From</th>
                <th>Woken by / held by</th>
                <th className="num">Line</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {q.data.map((w) => (
                <tr
                  key={`${w.source_id}:${w.line}`}
                  className={view.wait?.sourceId === w.source_id && view.wait.line === w.line ? 'selected' : undefined}
                >
                  <td className="mono">
                    {w.comm ?? '?'} {w.pid}
                  </td>
                  <td className="mono">{w.lock ?? '—'}</td>
                  <td className="num strong">
                    {formatNs(w.duration_ns)}
                    {w.end_known ? '' : '+'}
                  </td>
                  <td className="num mono">{formatAbsTime(w.start_ns)}</td>
                  <td className="mono">
                    {w.waker_comm ? `woken by ${w.waker_comm} ${w.waker_pid}` : w.holder_comm ? `held by ${w.holder_comm} ${w.holder_pid}` : '—'}
                  </td>
                  <td className="num mono">{w.line}</td>
                  <td>{w.inferred && <span className="badge inferred">inferred</span>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

/** The waits' lock filter in words (what follows "waits"): typed text is searched in the lock label; a lock from a
 * flame graph's frame is the label's object or primitive exactly (`down` is not `down_read`). */
function waitsFilterText(lock: string | null, lockKey: string | null): string | null {
  if (lockKey !== null) return `on lock “${lockKey}”`;
  return lock !== null ? `whose lock contains “${lock}”` : null;
}
