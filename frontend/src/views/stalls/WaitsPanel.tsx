import { Fragment, useCallback, useMemo, useState } from 'react';
import { Time } from '../../lib/timeBase';
import type { AnalysisDetail } from '../../api/types';
import type { Wait } from '../../api/stallTypes';
import { useChains } from '../../api/queries';
import { MORE_PAGE, PAGE_MAX, fetchWaitsPage, useWaitsPage } from '../../api/pagedQueries';
import { MoreRows, usePagedRows } from '../../components/LongTable';
import { useReveal } from '../../lib/reveal';
import { IdleToggle } from './IdleToggle';
import { Stack } from './Stack';
import { ErrorBox, Loading } from '../../components/Status';
import { formatWaitNs, taskLabel } from '../../lib/format';
import { useViewState } from '../../state/useViewState';

export function WaitsPanel({ analysis }: { analysis: AnalysisDetail }) {
  const [view, setView] = useViewState();
  const { lock, lockKey, t0, t1, idle } = view; // the analysis-wide time range
  const starting = view.wStart && t0 !== null && t1 !== null; // the waits starting in it, not all overlapping it
  const q = useWaitsPage(analysis.id, { lock, lockKey }, 100, { t0, t1, starting }, idle);
  const fetchPage = useCallback(
    (cursor: string, all: boolean, signal: AbortSignal) =>
      fetchWaitsPage(analysis.id, { lock, lockKey }, { t0, t1, starting }, idle, all ? PAGE_MAX : MORE_PAGE, cursor, signal),
    [analysis.id, lock, lockKey, t0, t1, starting, idle],
  );
  const paged = usePagedRows<Wait>(q.data, fetchPage);
  const waits = q.data ? paged.rows : undefined;
  const [draft, setDraft] = useState(view.lock ?? '');
  const filter = waitsFilterText(view.lock, view.lockKey);
  // the chain link each wait is (the chains the list beside shows: the same query, from the cache)
  const chains = useChains(analysis.id, { t0: view.t0, t1: view.t1 });
  const linkOf = useMemo(() => {
    const m = new Map<string, { chain: number; link: number }>();
    for (const c of chains.data ?? []) c.links.forEach((l, i) => l.wait_line !== null && m.set(`${l.source_id}:${l.wait_line}`, { chain: c.id, link: i + 1 }));
    return m;
  }, [chains.data]);
  const selKey = view.wait ? `${view.wait.sourceId}:${view.wait.line}` : null;
  const selected = waits?.find((w) => `${w.source_id}:${w.line}` === selKey) ?? null;
  const detail = useReveal<HTMLTableRowElement>(selected && !linkOf.has(selKey!) ? selKey : null);
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
        {starting && (
          <span className="chip" data-testid="waits-starting" title="Waits begun before the range and still waiting in it are left out (a comparison counts a range's waits so)">
            starting in the range
            <button aria-label="Show every wait overlapping the range" onClick={() => setView({ wStart: false })}>
              ×
            </button>
          </span>
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
        <IdleToggle />
      </div>
      {q.isPending && <Loading what="waits" />}
      {q.isError && <ErrorBox title="Could not load the waits." error={q.error} />}
      {waits && waits.length === 0 && (
        <p className="muted">
          No {view.idle ? 'waits' : 'stalls'}
          {filter !== null ? ` ${filter}` : ''} {starting ? 'starting ' : ''}in this {view.t0 !== null && view.t1 !== null ? 'time range' : 'trace'}
          {view.idle ? '.' : ' (idle sleeps left out).'}
        </p>
      )}
      {waits && waits.length > 0 && (
        <div className="table-scroll" style={{ maxHeight: 360 }}>
          <table className="grid compact" data-testid="waits-table">
            <thead>
              <tr>
                <th>Task</th>
                <th>Lock</th>
                <th title="Why it waited: the kind and the rule of /api/wait-kinds that says so">Why</th>
                <th className="num">Duration</th>
                <th className="num">From</th>
                <th>Woken by / held by</th>
                <th className="num">Line</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {waits.map((w) => {
                const key = `${w.source_id}:${w.line}`;
                const sel = key === selKey;
                const inChain = linkOf.get(key);
                return (
                  <Fragment key={key}>
                    <tr
                      className={`clickable${sel ? ' selected' : ''}`}
                      aria-selected={sel}
                      data-wait={key}
                      // a wait of a chain opens its link (the chain above, with the task's calls); another, its details here
                      onClick={() => setView(sel ? { wait: null } : { wait: { sourceId: w.source_id, line: w.line }, ...(inChain ?? {}) })}
                      title={inChain ? `link ${inChain.link} of chain #${inChain.chain}: open it` : 'show its stacks and evidence'}
                    >
                      <td className="mono">
                        {taskLabel(w.comm, w.pid)}
                      </td>
                      <td className="mono">{w.lock ?? '—'}</td>
                      <td data-testid="wait-why" title={w.wait_why ?? undefined}>
                        <WaitKind w={w} />
                      </td>
                      <td className="num strong">
                        {formatWaitNs(w.duration_ns, w.end_known)}
                      </td>
                      <td className="num mono">
                        <Time ns={w.start_ns} />
                      </td>
                      <td className="mono">
                        {w.waker_comm ? `woken by ${taskLabel(w.waker_comm, w.waker_pid)}` : w.holder_comm ? `held by ${taskLabel(w.holder_comm, w.holder_pid)}` : '—'}
                      </td>
                      <td className="num mono">{w.line}</td>
                      <td>
                        {inChain && <span className="badge">chain #{inChain.chain}</span>} {w.inferred && <span className="badge inferred">inferred</span>}
                      </td>
                    </tr>
                    {sel && !inChain && (
                      <tr ref={detail} className="wait-detail" data-testid="wait-detail">
                        <td colSpan={8}>
                          <WaitDetail w={w} />
                        </td>
                      </tr>
                    )}
                  </Fragment>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {waits && <MoreRows paged={paged} what="waits" />}
    </section>
  );
}

/** A wait outside every chain listed: its evidence and stacks, and where to see it. */
function WaitDetail({ w }: { w: Wait }) {
  const [, setView] = useViewState();
  const pad = Math.max(Math.round((w.end_ns - w.start_ns) / 4), 1000);
  return (
    <div className="wait-detail-body">
      {w.wait_kind && (
        <p className="evidence" data-testid="wait-detail-why">
          <span className="k">Why</span> <WaitKind w={w} />
          {w.wait_why ? ` — ${w.wait_why}` : ''}
        </p>
      )}
      <p className="evidence">
        <span className="k">Evidence</span> {w.evidence}
        {w.holder_evidence ? ` · holder: ${w.holder_evidence}` : ''}
      </p>
      <div className="actions">
        <button
          className="btn small"
          onClick={() => setView({ tab: 'timeline', v0: w.start_ns - pad, v1: w.end_ns + pad, tlSel: { sourceId: w.source_id, line: w.line } })}
        >
          Show on the timeline
        </button>
        {w.lock && (
          <button className="btn small" onClick={() => setView({ lock: w.lock })}>
            Waits on {w.lock}
          </button>
        )}
      </div>
      <div className="stacks">
        <Stack title="Its stack" frames={w.stack} testid="wait-stack" />
        {w.waker_stack && <Stack title={`Woken by ${taskLabel(w.waker_comm, w.waker_pid)}: its stack`} frames={w.waker_stack} testid="wait-waker-stack" />}
      </div>
    </div>
  );
}

/** A wait's kind and the rule that names it, e.g. "io · buffer under I/O" (idle: not a stall). */
function WaitKind({ w }: { w: Wait }) {
  if (!w.wait_kind) return <span className="muted">—</span>;
  return (
    <span className={`wait-kind wait-kind-${w.wait_kind}`}>
      <span className="badge">{w.wait_kind}</span> {w.wait_rule}
    </span>
  );
}

/** The waits' lock filter in words (what follows "waits"): typed text is searched in the lock label; a lock from a
 * flame graph's frame is the label's object or primitive exactly (`down` is not `down_read`). */
function waitsFilterText(lock: string | null, lockKey: string | null): string | null {
  if (lockKey !== null) return `on lock “${lockKey}”`;
  return lock !== null ? `whose lock contains “${lock}”` : null;
}
