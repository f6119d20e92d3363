// The side-by-side tables of a comparison: the dispatch summary per device and per process, the waits per lock.
// Each figure is shown as before | after | change; a change is coloured by its verdict for the after side. Each row
// links to the events behind it, in each side's own analysis (with the side's range).
import type { ReactNode } from 'react';
import { Link } from 'react-router';
import { deltaClass, deltaText, deltasByMetric, formatFigure, type Comparison, type Delta } from '../../charts/compare';
import { formatCount } from '../../lib/format';
import type { ViewState } from '../../state/viewState';
import { STATS, lockWaitsLink, sideLink, type Stat } from './compareState';

type Side = Comparison['a'];
type DispatchPair = Comparison['dispatch_by_device']['rows'][number];
type LockPair = Comparison['locks']['rows'][number];

const STAT_LABEL: Record<Stat, string> = { p50: 'p50', p95: 'p95', p99: 'p99', max: 'max', avg: 'mean' };

/** Before | after | change of one figure. */
export function Triple({ d, testId }: { d: Delta | undefined; testId?: string }) {
  if (!d) return <td colSpan={3} />;
  return (
    <>
      <td className="num cmp-a" data-testid={testId && `${testId}-a`}>
        {formatFigure(d.a, d.unit)}
      </td>
      <td className="num cmp-b" data-testid={testId && `${testId}-b`}>
        {formatFigure(d.b, d.unit)}
      </td>
      <td className={`num ${deltaClass(d)}`} data-testid={testId && `${testId}-delta`} title={verdictWords(d)}>
        {deltaText(d, false)}
      </td>
    </>
  );
}

function verdictWords(d: Delta): string | undefined {
  if (d.verdict === 'same') return 'within 5 % of before';
  if (d.verdict === 'better') return 'better after';
  if (d.verdict === 'worse') return 'worse after';
  return undefined;
}

function GroupHead({ labels }: { labels: string[] }) {
  return (
    <>
      <tr>
        <th rowSpan={2} />
        {labels.map((l) => (
          <th key={l} colSpan={3} className="cmp-group">
            {l}
          </th>
        ))}
      </tr>
      <tr>
        {labels.map((l) => (
          <SubHeads key={l} />
        ))}
      </tr>
    </>
  );
}

function SubHeads() {
  return (
    <>
      <th className="num cmp-a">before</th>
      <th className="num cmp-b">after</th>
      <th className="num">change</th>
    </>
  );
}

/** The links to the events behind a row, in each side's analysis: under the row's key. */
function EventLinks({ a, b }: { a: string | null; b: string | null }) {
  return (
    <span className="cmp-links">
      events:{' '}
      {a && (
        <Link to={a} data-testid="events-before">
          before
        </Link>
      )}
      {a && b && ' · '}
      {b && (
        <Link to={b} data-testid="events-after">
          after
        </Link>
      )}
    </span>
  );
}

function rangeOf(s: Side) {
  return { from: s.from_ns, to: s.to_ns, span: s.span_ns };
}

/** The table of a dispatch comparison (per device or per process), showing statistic `stat`. */
export function DispatchTable({
  title,
  by,
  data,
  cmp,
  stat,
  onStat,
}: {
  title: string;
  by: 'device' | 'process';
  data: Comparison['dispatch_by_device'];
  cmp: Comparison;
  stat: Stat;
  onStat: (s: Stat) => void;
}) {
  const patch = (row: DispatchPair, side: 'a' | 'b'): Partial<ViewState> | null => {
    const r = row[side];
    if (!r) return null;
    if (by === 'device') return { tab: 'dispatch', dev: row.key };
    return { tab: 'dispatch', pid: r.pids.length === 1 ? r.pids[0] : null };
  };
  const link = (row: DispatchPair, side: 'a' | 'b') => {
    const p = patch(row, side);
    return p && sideLink(cmp[side].analysis_id, rangeOf(cmp[side]), p);
  };
  return (
    <section className="panel" data-testid={`compare-dispatch-${by}`}>
      <div className="title-row">
        <h2>{title}</h2>
        <label className="field inline">
          <span>statistic</span>
          <select value={stat} onChange={(e) => onStat(e.target.value as Stat)} aria-label="Statistic">
            {STATS.map((s) => (
              <option key={s} value={s}>
                {STAT_LABEL[s]}
              </option>
            ))}
          </select>
        </label>
      </div>
      <Overflow total={data.total} shown={data.rows.length} noun={by === 'device' ? 'devices' : 'processes'} />
      <div className="table-scroll">
        <table className="grid compact cmp-table">
          <thead>
            <GroupHead labels={['requests', `I2D ${STAT_LABEL[stat]}`, `D2C ${STAT_LABEL[stat]}`, `Q2C ${STAT_LABEL[stat]}`]} />
          </thead>
          <tbody>
            {data.rows.map((row) => {
              const d = deltasByMetric(row.deltas);
              return (
                <tr key={row.key} data-testid="compare-row" data-key={row.key}>
                  <th scope="row" className="mono cmp-key">
                    {row.key}
                    {by === 'process' && <Pids a={row.a?.pids} b={row.b?.pids} />}
                    <EventLinks a={link(row, 'a')} b={link(row, 'b')} />
                  </th>
                  <Triple d={d.count} testId="count" />
                  <Triple d={d[`i2d.${stat}`]} testId="i2d" />
                  <Triple d={d[`d2c.${stat}`]} testId="d2c" />
                  <Triple d={d[`q2c.${stat}`]} testId="q2c" />
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function Pids({ a, b }: { a?: number[]; b?: number[] }) {
  const words = (p?: number[]) => (p && p.length ? (p.length > 3 ? `${p.length} pids` : `pid ${p.join(', ')}`) : '—');
  return (
    <span className="muted cmp-pids">
      {words(a)} → {words(b)}
    </span>
  );
}

function Overflow({ total, shown, noun }: { total: number; shown: number; noun: string }) {
  if (total <= shown) return null;
  return (
    <p className="muted">
      The {formatCount(shown)} {noun} with the most requests of {formatCount(total)}.
    </p>
  );
}

/** The waits per lock of both sides. */
export function LockTable({ cmp }: { cmp: Comparison }) {
  const data = cmp.locks;
  // the waits on no known lock have no filter of their own in the Stalls tab: no link
  const link = (row: LockPair, side: 'a' | 'b') =>
    row[side] && row.lock_key !== null ? lockWaitsLink(cmp[side], row.lock_key) : null;
  return (
    <section className="panel" data-testid="compare-locks">
      <div className="title-row">
        <h2>Waits per lock</h2>
        <span className="muted" data-testid="compare-locks-note">
          stall waits starting in each side&apos;s range (idle sleeps left out): a lock&apos;s links list these waits
        </span>
      </div>
      <Overflow total={data.total} shown={data.rows.length} noun="locks" />
      <div className="table-scroll">
        <table className="grid compact cmp-table">
          <thead>
            <GroupHead labels={['waits', 'total', 'p50', 'p99', 'max']} />
          </thead>
          <tbody>
            {data.rows.map((row) => {
              const d = deltasByMetric(row.deltas);
              return (
                <tr key={row.lock_key ?? ''} data-testid="compare-lock-row" data-key={row.lock_key ?? ''}>
                  <th scope="row" className="mono cmp-key" title={[...(row.a?.locks ?? []), ...(row.b?.locks ?? [])].join('\n')}>
                    {row.lock_key ?? <span className="muted">no known lock</span>}
                    {(row.a?.ends_known === false || row.b?.ends_known === false) && (
                      <span className="muted" title="a wait was still open at the end of the trace: its duration is a lower bound">
                        {' '}
                        (open waits)
                      </span>
                    )}
                    <EventLinks a={link(row, 'a')} b={link(row, 'b')} />
                  </th>
                  <Triple d={d.waits} testId="waits" />
                  <Triple d={d.total_ns} testId="total" />
                  <Triple d={d.p50_ns} testId="p50" />
                  <Triple d={d.p99_ns} testId="p99" />
                  <Triple d={d.max_ns} testId="max" />
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </section>
  );
}

/** A section a side has no data for: says which side lacks it. */
export function MissingNote({ cmp, what, has }: { cmp: Comparison; what: string; has: (s: Side) => boolean }): ReactNode {
  const missing = (['a', 'b'] as const).filter((k) => !has(cmp[k]));
  if (missing.length === 0 || missing.length === 2) return null;
  const k = missing[0];
  return (
    <p className="note cmp-note" data-testid="compare-missing">
      {k === 'a' ? 'Before' : 'After'} ({cmp[k].name || cmp[k].analysis_id}) has no {what} in its range: its columns are
      empty.
    </p>
  );
}
