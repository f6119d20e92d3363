import { useCallback } from 'react';
import { Time } from '../../lib/timeBase';
import { MORE_PAGE, PAGE_MAX, fetchRequestsPage, useRequestsPage } from '../../api/pagedQueries';
import { REQUESTS_LIMIT, blockFilter } from '../../api/tabQueries';
import { MoreRows, usePagedRows } from '../../components/LongTable';
import type { AnalysisDetail, BlockRequest } from '../../api/types';
import { ErrorBox, Loading } from '../../components/Status';
import { formatNs, formatSector } from '../../lib/format';
import type { RequestOrder } from '../../state/viewState';
import { phaseAbsent, useDispatchView } from './phases';
import { requestOrigin } from '../../charts/waterfall';

const ORDERS: { value: RequestOrder; label: string }[] = [
  { value: 'i2d', label: 'I2D' },
  { value: 'd2c', label: 'D2C' },
  { value: 'q2c', label: 'Q2C' },
  { value: 'time', label: 'time' },
];

export function RequestsTable({ analysis }: { analysis: AnalysisDetail }) {
  const [view, setView, present] = useDispatchView(analysis.id);
  const filter = blockFilter(view);
  const q = useRequestsPage(analysis.id, view.order, REQUESTS_LIMIT, filter);
  const { pid, dev, t0, t1 } = filter;
  const fetchPage = useCallback(
    (cursor: string, all: boolean, signal: AbortSignal) =>
      fetchRequestsPage(analysis.id, view.order, { pid, dev, t0, t1 }, all ? PAGE_MAX : MORE_PAGE, cursor, signal),
    [analysis.id, view.order, pid, dev, t0, t1],
  );
  const paged = usePagedRows<BlockRequest>(q.data, fetchPage);
  const rows = paged.rows;
  const isSel = (r: BlockRequest) => view.req !== null && view.req.sourceId === r.source_id && view.req.line === r.line;
  const hl = (o: RequestOrder) => (view.order === o ? ' sorted' : '');

  return (
    <section className="panel requests-panel">
      <div className="panel-head">
        <h2>{view.order === 'time' ? 'Requests by time' : `Slowest requests by ${view.order.toUpperCase()}`}</h2>
        <div className="segmented" role="group" aria-label="Order requests by">
          {ORDERS.map((o) => (
            <button
              key={o.value}
              title={o.value === 'time' ? undefined : (phaseAbsent(o.value, present) ?? undefined)}
              disabled={o.value !== 'time' && phaseAbsent(o.value, present) !== null}
              aria-pressed={view.order === o.value}
              onClick={() => setView({ order: o.value }, { replace: true })}
            >
              {o.label}
            </button>
          ))}
        </div>
        {q.data && (
          <span className="muted">
            {paged.hasMore ? `first ${rows.length}` : `${rows.length} request${rows.length === 1 ? '' : 's'}`}
          </span>
        )}
      </div>
      {q.isPending && <Loading what="requests" />}
      {q.isError && <ErrorBox title="Could not load the requests." error={q.error} />}
      {q.data && (
        <div className="table-scroll tall">
          <table className="grid requests" data-testid="requests-table">
            <thead>
              <tr>
                <th className="num">Time</th>
                <th>Dev</th>
                <th className="num">Sector + size</th>
                <th>RWBS</th>
                <th>Process</th>
                <th className={`num${hl('i2d')}`}>I2D</th>
                <th className={`num${hl('d2c')}`}>D2C</th>
                <th className={`num${hl('q2c')}`}>Q2C</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => {
                const sel = isSel(r);
                return (
                  <tr
                    key={`${r.source_id}:${r.line}`}
                    className={`clickable${sel ? ' selected' : ''}`}
                    aria-selected={sel}
                    data-req={`${r.source_id}:${r.line}`}
                    onClick={() => setView({ req: sel ? null : { sourceId: r.source_id, line: r.line } })}
                  >
                    <td className="num mono">
                      <Time ns={requestOrigin(r)} />
                    </td>
                    <td className="mono">{r.dev}</td>
                    <td className="num mono">{formatSector(r.sector, r.nsect)}</td>
                    <td className="mono">{r.rwbs ?? '—'}</td>
                    <td className="mono">
                      {r.pid ?? '—'} {r.comm ?? ''}
                    </td>
                    <td className={`num${hl('i2d')}`}>{formatNs(r.i2d_ns)}</td>
                    <td className={`num${hl('d2c')}`}>{formatNs(r.d2c_ns)}</td>
                    <td className={`num${hl('q2c')}`}>{formatNs(r.q2c_ns)}</td>
                  </tr>
                );
              })}
              {rows.length === 0 && (
                <tr>
                  <td colSpan={8} className="muted">
                    No requests in this selection.
                  </td>
                </tr>
              )}
            </tbody>
          </table>
        </div>
      )}
      {q.data && <MoreRows paged={paged} what="requests" />}
    </section>
  );
}
