import { useMemo, useState } from 'react';
import { useDispatchSummary } from '../../api/queries';
import type { DispatchSummaryRow } from '../../api/types';
import { ErrorBox, Loading } from '../../components/Status';
import { formatCount, formatNs } from '../../lib/format';
import { UNNAMED_KEY, filterSummary, groupUnnamed, isRowSelected, rowLabel } from '../../lib/summary';
import { ShowAll, TableFilter, useRowLimit } from '../../components/LongTable';
import { useDispatchView } from './phases';
import { bttAverage, bttFor, bttSeconds } from '../../lib/btt';
import type { Phase, SortColumn, Stat } from '../../state/viewState';

const PHASES: Phase[] = ['i2d', 'd2c', 'q2c'];
const STATS: Stat[] = ['p50', 'p95', 'p99', 'max'];
const BTT_NOTE =
  "btt's figures, as `btt -A` prints them (seconds): btt counts per queued bio, not per request — a request that took merged bios counts one D2C and Q2C per bio, the halves of a split bio have no I2D, D2C or Q2C of their own — over the whole trace";

export function SummaryTable({ analysisId }: { analysisId: string }) {
  const [view, setView] = useDispatchView(analysisId); // (sorted by a phase the capture has)
  const q = useDispatchSummary(analysisId, view.by, { t0: view.t0, t1: view.t1 });
  const [text, setText] = useState('');
  // the processes blktrace could not name ("(null)", a pid each) are one row, opened on a click
  const grouped = useMemo(
    () => groupUnnamed(filterSummary(q.data ?? [], view.by, text), view.sort),
    [q.data, view.by, text, view.sort],
  );
  const [openGroup, setOpenGroup] = useState(false);
  const [limit, setAll] = useRowLimit(`${view.by}:${text}`);
  const COLS = view.btt ? 4 : 2 + STATS.length; // columns per phase: btt's N MIN AVG MAX, else min avg and STATS
  const rows = grouped.rows;

  function sortBy(column: SortColumn) {
    const desc = view.sort.column === column ? !view.sort.desc : column !== 'key';
    setView({ sort: { column, desc } }, { replace: true });
  }
  function select(r: DispatchSummaryRow) {
    if (r.key === UNNAMED_KEY) return setOpenGroup(!openGroup);
    if (view.by === 'device') setView({ dev: view.dev === r.dev ? null : r.dev, pid: null });
    else setView({ pid: view.pid === r.pid ? null : r.pid, dev: null });
  }
  const th = (column: SortColumn, label: string, cls = 'num') => {
    const active = view.sort.column === column;
    return (
      <th
        key={column}
        data-column={column}
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
        <div className="segmented" role="group" aria-label="Figures">
          <button aria-pressed={!view.btt} onClick={() => setView({ btt: false }, { replace: true })} title="each request counted once">
            per request
          </button>
          <button aria-pressed={view.btt} onClick={() => setView({ btt: true }, { replace: true })} title={BTT_NOTE}>
            btt's way
          </button>
        </div>
        <TableFilter value={text} onChange={setText} label={view.by === 'device' ? 'Filter devices' : 'Filter processes'} />
        <span className="muted">click a row to filter the chart and the requests</span>
      </div>
      {view.btt && (
        <p className="muted" data-testid="btt-note">
          {BTT_NOTE}
          {view.t0 !== null || view.t1 !== null ? ': clear the time selection to see them.' : '.'}
        </p>
      )}
      {q.isPending && <Loading what="dispatch summary" />}
      {q.isError && <ErrorBox title="Could not load the dispatch summary." error={q.error} />}
      {q.data && (
        // fits 1,440 px; narrower, it scrolls sideways with the process or device column pinned
        <div className="table-scroll" data-testid="summary-scroll">
          <table className="grid summary" data-testid="summary-table">
            <thead>
              <tr className="group-row">
                <th colSpan={2} className="key-group" />
                <th colSpan={COLS} className="group i2d">
                  I2D <span className="muted">insert → dispatch</span>
                </th>
                <th colSpan={COLS} className="group d2c">
                  D2C <span className="muted">dispatch → complete</span>
                </th>
                <th colSpan={COLS} className="group q2c">
                  Q2C <span className="muted">queue → complete</span>
                </th>
              </tr>
              <tr>
                {th('key', view.by === 'device' ? 'Device' : 'Process', 'key')}
                {th('count', 'Requests')}
                {PHASES.flatMap((p) =>
                  view.btt
                    ? ['N', 'MIN', 'AVG', 'MAX'].map((c) => (
                        <th key={`${p}.btt.${c}`} className={c === 'N' ? 'num phase-start' : 'num'} title={BTT_NOTE}>
                          {c}
                        </th>
                      ))
                    : [
                        <th key={`${p}.min`} className="num phase-start">
                          min
                        </th>,
                        <th key={`${p}.avg`} className="num">
                          avg
                        </th>,
                        ...STATS.map((s) => th(`${p}.${s}`, s)),
                      ],
                )}
              </tr>
            </thead>
            <tbody>
              {rows.slice(0, limit).flatMap((r) =>
                r.key === UNNAMED_KEY
                  ? [
                      summaryRow(r, { group: true, open: openGroup }),
                      ...(openGroup ? grouped.unnamed.map((m) => summaryRow(m, { member: true })) : []),
                    ]
                  : [summaryRow(r, {})],
              )}
              {rows.length === 0 && (
                <tr>
                  <td colSpan={2 + 3 * COLS} className="muted">
                    No requests in this selection.
                  </td>
                </tr>
              )}
            </tbody>
          </table>
          <ShowAll shown={Math.min(limit, rows.length)} total={rows.length} onAll={setAll} what={view.by === 'device' ? 'devices' : 'processes'} />
        </div>
      )}
    </section>
  );

  function summaryRow(r: DispatchSummaryRow, { group, open, member }: { group?: boolean; open?: boolean; member?: boolean }) {
    const sel = !group && isRowSelected(r, view.by, view.pid, view.dev);
    const cls = ['clickable', sel && 'selected', group && 'group-head', group && open && 'open', member && 'member'].filter(Boolean).join(' ');
    return (
      <tr
        key={r.key}
        className={cls}
        aria-selected={sel}
        aria-expanded={group ? !!open : undefined}
        onClick={() => select(r)}
        title={group ? "processes blktrace could not name ('(null)'): their count and max; a percentile here is the highest of theirs (the group's own is at most that)" : undefined}
      >
        <td className="mono key" title={group ? undefined : rowLabel(r, view.by)}>
          {group ? r.comm : rowLabel(r, view.by)}
        </td>
        <td className="num">{formatCount(r.count)}</td>
        {PHASES.flatMap((p) => {
          if (view.btt) {
            const b = group ? null : bttFor(r, p);
            return [
              <td key={`${p}.btt.n`} className="num phase-start">
                {b ? String(b.n) : '—'}
              </td>,
              <td key={`${p}.btt.min`} className="num mono">
                {b ? bttSeconds(b.min_ns) : '—'}
              </td>,
              <td key={`${p}.btt.avg`} className="num mono">
                {b ? bttAverage(b.total_ns, b.n) : '—'}
              </td>,
              <td key={`${p}.btt.max`} className="num mono strong">
                {b ? bttSeconds(b.max_ns) : '—'}
              </td>,
            ];
          }
          return [
            <td key={`${p}.min`} className="num phase-start">
              {group ? '' : formatNs(r[p].min)}
            </td>,
            <td key={`${p}.avg`} className="num">
              {group ? '' : formatNs(r[p].avg)}
            </td>,
            ...STATS.map((s) => (
              <td key={`${p}.${s}`} className={`num${s === 'max' ? ' strong' : ''}${view.sort.column === `${p}.${s}` ? ' sorted' : ''}`}>
                {group && s !== 'max' && r[p][s] !== null ? '≤ ' : ''}
                {formatNs(r[p][s])}
              </td>
            )),
          ];
        })}
      </tr>
    );
  }
}
