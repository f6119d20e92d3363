import { useMemo } from 'react';
import { useDispatchSummary } from '../../api/queries';
import type { DispatchSummaryRow } from '../../api/types';
import { ErrorBox, Loading } from '../../components/Status';
import { formatCount, formatNs } from '../../lib/format';
import { isRowSelected, rowLabel, sortSummary } from '../../lib/summary';
import { useViewState } from '../../state/useViewState';
import type { Phase, SortColumn, Stat } from '../../state/viewState';

const PHASES: Phase[] = ['i2d', 'd2c', 'q2c'];
const STATS: Stat[] = ['p50', 'p95', 'p99', 'max'];

export function SummaryTable({ analysisId }: { analysisId: string }) {
  const [view, setView] = useViewState();
  const q = useDispatchSummary(analysisId, view.by, { t0: view.t0, t1: view.t1 });
  const rows = useMemo(() => (q.data ? sortSummary(q.data, view.sort) : []), [q.data, view.sort]);

  function sortBy(column: SortColumn) {
    const desc = view.sort.column === column ? !view.sort.desc : column !== 'key';
    setView({ sort: { column, desc } }, { replace: true });
  }
  function select(r: DispatchSummaryRow) {
    if (view.by === 'device') setView({ dev: view.dev === r.dev ? null : r.dev, pid: null });
    else setView({ pid: view.pid === r.pid ? null : r.pid, dev: null });
  }
  const th = (column: SortColumn, label: string, cls = 'num') => {
    const active = view.sort.column === column;
    return (
      <th
        key={column}
        className={`${cls} sortable${active ? ' sorted' : ''}`}
        aria-sort={active ? (view.sort.desc ? 'descending' : 'ascending') : 'none'}
        onClick={() => sortBy(column)}
      >
        {label}
        <span className="sort-ind">{active ? (view.sort.desc ? '▼' : '▲') : ''}</span>
      </th>
    );
  };

  return (
    <section className="panel">
      <div className="panel-head">
        <h2>Dispatch summary</h2>
        <div className="segmented" role="group" aria-label="Group by">
          <button aria-pressed={view.by === 'process'} onClick={() => setView({ by: 'process' })}>
            per process
          </button>
          <button aria-pressed={view.by === 'device'} onClick={() => setView({ by: 'device' })}>
            per device
          </button>
        </div>
        <span className="muted">click a row to filter the chart and the requests</span>
      </div>
      {q.isPending && <Loading what="dispatch summary" />}
      {q.isError && <ErrorBox title="Could not load the dispatch summary." error={q.error} />}
      {q.data && (
        <div className="table-scroll">
          <table className="grid summary" data-testid="summary-table">
            <thead>
              <tr className="group-row">
                <th colSpan={2} />
                <th colSpan={4} className="group i2d">
                  I2D <span className="muted">insert → dispatch</span>
                </th>
                <th colSpan={4} className="group d2c">
                  D2C <span className="muted">dispatch → complete</span>
                </th>
                <th colSpan={4} className="group q2c">
                  Q2C <span className="muted">queue → complete</span>
                </th>
              </tr>
              <tr>
                {th('key', view.by === 'device' ? 'Device' : 'Process', '')}
                {th('count', 'Requests')}
                {PHASES.flatMap((p) => STATS.map((s) => th(`${p}.${s}`, s)))}
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => {
                const sel = isRowSelected(r, view.by, view.pid, view.dev);
                return (
                  <tr key={r.key} className={`clickable${sel ? ' selected' : ''}`} aria-selected={sel} onClick={() => select(r)}>
                    <td className="mono">{rowLabel(r, view.by)}</td>
                    <td className="num">{formatCount(r.count)}</td>
                    {PHASES.flatMap((p) =>
                      STATS.map((s) => (
                        <td key={`${p}.${s}`} className={`num${s === 'max' ? ' strong' : ''}${view.sort.column === `${p}.${s}` ? ' sorted' : ''}`}>
                          {formatNs(r[p][s])}
                        </td>
                      )),
                    )}
                  </tr>
                );
              })}
              {rows.length === 0 && (
                <tr>
                  <td colSpan={14} className="muted">
                    No requests in this selection.
                  </td>
                </tr>
              )}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
