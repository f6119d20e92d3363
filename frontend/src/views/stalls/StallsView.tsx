import { useMemo, useState } from 'react';
import type { AnalysisDetail } from '../../api/types';
import { useChains, useMarks } from '../../api/queries';
import { ErrorBox, Loading } from '../../components/Status';
import { TableFilter } from '../../components/LongTable';
import { chainMatches } from '../../lib/chainFilter';
import { formatNs } from '../../lib/format';
import { useViewState } from '../../state/useViewState';
import { linkLabel } from '../../charts/chainWaterfall';
import { hasWakerStacks } from '../../lib/wakers';
import { ChainDetail } from './ChainDetail';
import { StallsHeatmap } from './StallsHeatmap';
import { WaitsPanel } from './WaitsPanel';
import { WakeupPairs } from './WakeupPairs';

/** The chains of waits from ftrace; below them, offwaketime's wake-up pairs where that is loaded (alone
 * when there is no ftrace). */
export function StallsView({ analysis }: { analysis: AnalysisDetail }) {
  const ftrace = analysis.sources.some((s) => s.format === 'ftrace');
  return (
    <>
      {ftrace && <ChainsView analysis={analysis} />}
      {ftrace && <StallsHeatmap analysis={analysis} />}
      {hasWakerStacks(analysis.sources) && <WakeupPairs analysis={analysis} />}
    </>
  );
}

const CHAIN_META = { maxWidth: 220, overflow: 'hidden', textOverflow: 'ellipsis', fontSize: 11.5 } as const;

function ChainsView({ analysis }: { analysis: AnalysisDetail }) {
  const [view, setView] = useViewState();
  const chains = useChains(analysis.id, { t0: view.t0, t1: view.t1 }); // the analysis-wide time range
  const marks = useMarks(analysis.id);
  const [text, setText] = useState('');
  const all = useMemo(() => chains.data ?? [], [chains.data]);
  const list = useMemo(() => all.filter((c) => chainMatches(c, text)), [all, text]);
  const selected = view.chain !== null ? all.find((c) => c.id === view.chain) : list[0];
  const windowed = view.t0 !== null && view.t1 !== null;
  const filtered = view.lock !== null || view.lockKey !== null; // the waits on a lock come first

  return (
    <div className="stalls">
      {filtered && <WaitsPanel analysis={analysis} />}
      <div className="stalls-layout">
        <section className="panel chain-list-panel">
          <div className="panel-head">
            <h2>Wait chains</h2>
            <span className="muted">ranked by the first task's stall{windowed ? ' · first wait in the time range' : ''}</span>
          </div>
          {all.length > 1 && (
            <div className="chain-filter">
              <TableFilter value={text} onChange={setText} label="Filter chains: task, pid, lock" />
              {text.trim() && (
                <span className="muted" data-testid="chains-shown">
                  {list.length} of {all.length}
                </span>
              )}
            </div>
          )}
          {chains.isPending && <Loading what="chains" />}
          {chains.isError && <ErrorBox title="Could not load the chains." error={chains.error} />}
          {chains.data && all.length === 0 && <p className="muted">No task waited {windowed ? 'in this time range' : 'in this trace'}.</p>}
          {all.length > 0 && list.length === 0 && <p className="muted">No chain has a task or lock matching “{text.trim()}”.</p>}
          {list.length > 0 && (
            <div className="table-scroll tall">
              <table className="grid compact" data-testid="chain-list">
                <thead>
                  <tr>
                    <th className="num">#</th>
                    <th>First task · lock</th>
                    <th className="num">Stall</th>
                  </tr>
                </thead>
                <tbody>
                  {list.map((c) => {
                    const first = c.links[0];
                    const inferred = c.links.some((l) => l.inferred);
                    return (
                      <tr
                        key={c.id}
                        className={`clickable${selected?.id === c.id ? ' selected' : ''}`}
                        onClick={() => setView({ chain: c.id })}
                        aria-selected={selected?.id === c.id}
                      >
                        <td className="num">{c.id}</td>
                        <td>
                          {/* the lock under the task: in one row of this narrow column it was cut off */}
                          <div className="mono">{first ? linkLabel(first) : '—'}</div>
                          <div className="muted" style={CHAIN_META} title={`${first?.lock ?? 'no lock'} · ${c.links.length} links`}>
                            <span className="mono">{first?.lock ?? '—'}</span> · {c.links.length} {c.links.length === 1 ? 'link' : 'links'}
                            {inferred && (
                              <span className="badge inferred" title="at least one link is inferred">
                                inferred
                              </span>
                            )}
                          </div>
                        </td>
                        <td className="num strong">{formatNs(c.duration_ns)}</td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
          )}
        </section>
        {selected ? (
          <ChainDetail analysis={analysis} chain={selected} marks={marks.data ?? []} />
        ) : (
          chains.data &&
          all.length > 0 && (
            <section className="panel">
              <p className="muted">
                No chain #{view.chain} {windowed ? 'starts its first wait in this time range' : 'in this analysis'}.
              </p>
            </section>
          )
        )}
      </div>
      {!filtered && <WaitsPanel analysis={analysis} />}
    </div>
  );
}
