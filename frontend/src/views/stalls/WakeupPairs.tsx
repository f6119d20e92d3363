import { useEffect, useState } from 'react';
import type { AnalysisDetail } from '../../api/types';
import type { WakerPair } from '../../api/stallTypes';
import { useWakers } from '../../api/queries';
import { ErrorBox, Loading } from '../../components/Status';
import { formatCount } from '../../lib/format';
import { formatUs, pairRef, rowsText, selectPair, share, taskName } from '../../lib/wakers';
import { useViewState } from '../../state/useViewState';
import { Stack } from './Stack';

const LIMIT = 100;

/** offwaketime's wake-up pairs: who woke whom, ranked by the µs the blocked task waited until the wake-up;
 * the selected pair (in the URL as its first record) as a card with both stacks. */
export function WakeupPairs({ analysis }: { analysis: AnalysisDetail }) {
  const [view, setView] = useViewState();
  const q = useWakers(analysis.id, { pid: null, comm: view.wpComm, lockKey: view.wpLock, limit: LIMIT });
  const [draft, setDraft] = useState(view.wpLock ?? '');
  useEffect(() => setDraft(view.wpLock ?? ''), [view.wpLock]);
  const filename = (id: number) => analysis.sources.find((s) => s.id === id)?.filename ?? `source ${id}`;
  const data = q.data;
  const selected = data ? selectPair(data.items, view.wp) : null;
  const filters = [view.wpComm !== null && `of ${view.wpComm}`, view.wpLock !== null && `on “${view.wpLock}”`].filter(Boolean).join(' ');

  return (
    <section className="panel wakeup-pairs" data-testid="wakeup-pairs">
      <div className="panel-head">
        <h2>Wake-up pairs (offwaketime)</h2>
        <span className="muted">who woke whom, ranked by the time blocked until the wake-up (µs)</span>
        {view.wpComm !== null && (
          <span className="chip">
            blocked task {view.wpComm}
            <button aria-label="Clear task filter" onClick={() => setView({ wpComm: null })}>
              ×
            </button>
          </span>
        )}
        {view.wpLock !== null && (
          <span className="chip" title={`the lock's object or primitive is ${view.wpLock}, exactly`}>
            lock “{view.wpLock}”
            <button aria-label="Clear pair lock filter" onClick={() => setView({ wpLock: null })}>
              ×
            </button>
          </span>
        )}
        <form
          className="inline-form"
          onSubmit={(e) => {
            e.preventDefault();
            setView({ wpLock: draft.trim() || null });
          }}
        >
          <input
            className="text-input"
            placeholder="lock (xfs_buf_lock, page lock…)"
            aria-label="Filter wake-up pairs by lock"
            value={draft}
            onChange={(e) => setDraft(e.target.value)}
          />
        </form>
      </div>
      {q.isPending && <Loading what="wake-up pairs" />}
      {q.isError && <ErrorBox title="Could not load the wake-up pairs." error={q.error} />}
      {data && data.pairs === 0 && <p className="muted">No offwaketime record with a waker stack{filters ? ` ${filters}` : ''}.</p>}
      {data && data.pairs > 0 && (
        <>
          <p className="muted" data-testid="pairs-summary">
            {formatCount(data.pairs)} pair{data.pairs === 1 ? '' : 's'}
            {filters ? ` ${filters}` : ''} · {formatCount(data.records)} record{data.records === 1 ? '' : 's'} · {formatUs(data.total_us)} blocked
            until woken
            {data.pairs > data.items.length ? ` · the top ${data.items.length} listed` : ''}
          </p>
          <div className="stalls-layout">
            <div className="table-scroll tall">
              <table className="grid compact" data-testid="pair-list">
                <thead>
                  <tr>
                    <th className="num">#</th>
                    <th>Blocked task</th>
                    <th>Lock</th>
                    <th>Woken by</th>
                    <th className="num">
                      Blocked <span className="unit">µs</span>
                    </th>
                    <th className="num">Share</th>
                  </tr>
                </thead>
                <tbody>
                  {data.items.map((p, i) => {
                    const isSel = selected?.pair === p;
                    return (
                      <tr key={i} className={`clickable${isSel ? ' selected' : ''}`} aria-selected={isSel} onClick={() => setView({ wp: pairRef(p) })}>
                        <td className="num">{i + 1}</td>
                        <td className="mono">{taskName(p.comm, p.pid)}</td>
                        <td className="mono clip" title={p.lock ?? ''}>
                          {p.lock ?? '—'}
                        </td>
                        <td className="mono">{taskName(p.waker_comm, p.waker_pid)}</td>
                        <td className="num strong">{formatCount(p.value_us)}</td>
                        <td className="num">{share(p.value_us, data.total_us)}</td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
            {selected ? (
              <PairCard
                pair={selected.pair}
                rank={selected.rank}
                total={data.total_us}
                where={rowsText(selected.pair, filename)}
                onlyTask={view.wpComm === null && selected.pair.comm !== null ? () => setView({ wpComm: selected.pair.comm, wp: pairRef(selected.pair) }) : null}
              />
            ) : (
              <section className="panel">
                <p className="muted">
                  No pair starts at {view.wp ? `${filename(view.wp.sourceId)} line ${view.wp.line}` : 'that record'} among those listed.{' '}
                  <button className="btn" onClick={() => setView({ wp: null })}>
                    Show the first
                  </button>
                </p>
              </section>
            )}
          </div>
        </>
      )}
    </section>
  );
}

function PairCard({ pair: p, rank, total, where, onlyTask }: { pair: WakerPair; rank: number; total: number; where: string; onlyTask: (() => void) | null }) {
  const target = taskName(p.comm, p.pid);
  const waker = taskName(p.waker_comm, p.waker_pid);
  return (
    <section className="panel pair-card" data-testid="pair-card" aria-label={`Wake-up pair ${rank}: ${target} woken by ${waker}`}>
      <div className="panel-head">
        <h3>
          #{rank} <span className="mono">{target}</span> woken by <span className="mono">{waker}</span>
        </h3>
        <span className="mono strong">{p.lock ?? 'no known lock on its stack'}</span>
        <span className="strong" data-testid="pair-value">
          {formatUs(p.value_us)}
        </span>
        <span className="muted">
          {share(p.value_us, total)} of the pairs' time · {formatCount(p.records)} record{p.records === 1 ? '' : 's'}
        </span>
        {onlyTask && (
          <button className="btn" onClick={onlyTask}>
            Only {p.comm}’s pairs
          </button>
        )}
      </div>
      <p className="evidence">
        <span className="k">Records</span> <span className="mono">{where}</span>
      </p>
      <div className="stacks">
        <Stack
          title={`Blocked: ${target}'s stack (target)`}
          frames={p.frames}
          testid="pair-target-stack"
          empty="Not recorded: wakeuptime records only the waker's stack."
        />
        <Stack title={`Waker: ${waker}'s stack at the wake-up`} frames={p.waker_frames} testid="pair-waker-stack" />
      </div>
    </section>
  );
}
