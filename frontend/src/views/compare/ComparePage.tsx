// The Compare page (/compare?a=…&b=…&a_from=…): two analyses, or two time ranges of one, side by side with the
// changes from before (a) to after (b). The URL is the view: a copied link opens the same comparison.
import { useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../../api/client';
import { useAnalysis } from '../../api/queries';
import type { Comparison } from '../../charts/compare';
import { CopyLink } from '../../components/CopyLink';
import { ErrorBox, Loading } from '../../components/Status';
import { formatAbsTime, formatCount, formatNs } from '../../lib/format';
import { CompareWith } from './CompareWith';
import { HeatmapPairPanel } from './CompareHeatmaps';
import { DispatchTable, LockTable, MissingNote } from './CompareTables';
import { compareParams, decodeCompare, encodeCompare, formatSeconds, parseSeconds, type CompareState } from './compareState';
import './compare.css';

function useComparison(s: CompareState) {
  return useQuery({
    queryKey: ['compare', encodeCompare({ ...s, stat: 'p99' }).toString()],
    queryFn: ({ signal }) => unwrap(api.GET('/api/compare', { params: { query: compareParams(s) }, signal })),
    enabled: !!s.a && !!s.b,
    placeholderData: keepPreviousData,
    retry: (n, e) => ![404, 422].includes((e as { status?: number }).status ?? 0) && n < 2,
  });
}

export function ComparePage() {
  const [params, setParams] = useSearchParams();
  const s = decodeCompare(params);
  const set = (patch: Partial<CompareState>, replace = false) => setParams(encodeCompare({ ...s, ...patch }), { replace });
  if (!s.a) {
    return (
      <div className="status" role="status">
        Choose two analyses to compare from <Link to="/">the analysis list</Link> (“Compare with…” on a row).
      </div>
    );
  }
  if (!s.b) return <ChooseOther id={s.a} />;
  return <Compared s={s} set={set} />;
}

function ChooseOther({ id }: { id: string }) {
  const q = useAnalysis(id);
  if (q.isPending) return <Loading what="analysis" />;
  if (q.isError) return <ErrorBox title="Could not load the analysis to compare." error={q.error} />;
  const name = q.data.name || q.data.id;
  return (
    <section className="panel" data-testid="compare-choose">
      <h1>Compare {name}</h1>
      <p className="hint">
        Before: <b>{name}</b>. Choose the after side: another analysis, or the second half of this one&apos;s time span
        (the ranges can be changed afterwards).
      </p>
      <CompareWith id={id} name={name} open />
    </section>
  );
}

function Compared({ s, set }: { s: CompareState; set: (p: Partial<CompareState>, replace?: boolean) => void }) {
  const q = useComparison(s);
  if (q.isPending) return <Loading what="comparison" />;
  if (q.isError) {
    return (
      <ErrorBox title="Could not compare." error={q.error}>
        {' '}
        <Link to="/">Back to the analyses</Link>
      </ErrorBox>
    );
  }
  const cmp = q.data;
  const hasRequests = cmp.a.requests > 0 || cmp.b.requests > 0;
  const hasWaits = cmp.a.waits > 0 || cmp.b.waits > 0;
  return (
    <div className={`compare${q.isFetching ? ' refreshing' : ''}`} data-testid="compare">
      <header className="panel">
        <div className="title-row">
          <h1>Before / after</h1>
          <span className="muted">{cmp.same_analysis ? 'two time ranges of one analysis' : 'two analyses'}</span>
          <span className="tabs-spacer" />
          <button
            type="button"
            className="btn small"
            onClick={() => set({ a: s.b, b: s.a, aFrom: s.bFrom, aTo: s.bTo, bFrom: s.aFrom, bTo: s.aTo })}
          >
            Swap sides
          </button>
          <CopyLink />
        </div>
        <div className="cmp-sides">
          <SideCard cmp={cmp} k="a" s={s} set={set} />
          <SideCard cmp={cmp} k="b" s={s} set={set} />
        </div>
      </header>
      {!hasRequests && !hasWaits && cmp.a.offcpu_stacks === 0 && cmp.b.offcpu_stacks === 0 && (
        <p className="status" data-testid="compare-empty">
          Neither side has block requests, waits or off-CPU stacks in its range: nothing to compare.
        </p>
      )}
      {hasRequests && (
        <>
          <MissingNote cmp={cmp} what="block requests" has={(x) => x.requests > 0} />
          <DispatchTable
            title="Dispatch per device"
            by="device"
            data={cmp.dispatch_by_device}
            cmp={cmp}
            stat={s.stat}
            onStat={(stat) => set({ stat }, true)}
          />
          <DispatchTable
            title="Dispatch per process (by command name)"
            by="process"
            data={cmp.dispatch_by_process}
            cmp={cmp}
            stat={s.stat}
            onStat={(stat) => set({ stat }, true)}
          />
        </>
      )}
      {hasWaits && (
        <>
          <MissingNote cmp={cmp} what="stall waits" has={(x) => x.waits > 0} />
          <LockTable cmp={cmp} />
        </>
      )}
      {cmp.heatmaps.map((pair) => (
        <HeatmapPairPanel key={pair.metric} cmp={cmp} pair={pair} xTime={s.xTime} onXTime={(xTime) => set({ xTime }, true)} />
      ))}
      <OffcpuSection cmp={cmp} />
    </div>
  );
}

function SideCard({
  cmp,
  k,
  s,
  set,
}: {
  cmp: Comparison;
  k: 'a' | 'b';
  s: CompareState;
  set: (p: Partial<CompareState>, replace?: boolean) => void;
}) {
  const side = cmp[k];
  const [from, to] = k === 'a' ? [s.aFrom, s.aTo] : [s.bFrom, s.bTo];
  return (
    <div className={`cmp-side cmp-side-${k}`} data-testid={`compare-side-${k}`}>
      <div>
        <span className={`badge ${k === 'a' ? 'cmp-a' : 'cmp-b'}`}>{k === 'a' ? 'before' : 'after'}</span>{' '}
        <Link to={`/a/${encodeURIComponent(side.analysis_id)}`} className="strong" data-testid="compare-side-name">
          {side.name || side.analysis_id}
        </Link>
      </div>
      <div className="facts">
        <span>
          <span className="k">Span</span>{' '}
          {side.span_ns ? `${formatAbsTime(side.span_ns[0])} → ${formatAbsTime(side.span_ns[1])}` : '—'}
        </span>
        <span data-testid="compare-side-requests">
          <span className="k">Requests</span> {formatCount(side.requests)}
        </span>
        <span data-testid="compare-side-waits">
          <span className="k">Waits</span> {formatCount(side.waits)}
        </span>
        {side.offcpu_stacks > 0 && (
          <span>
            <span className="k">Off-CPU</span> {formatCount(side.offcpu_stacks)} stacks, {formatNs(side.offcpu_us * 1000)}
          </span>
        )}
      </div>
      <RangeForm
        key={`${from}-${to}`}
        from={from}
        to={to}
        span={side.span_ns ?? null}
        onApply={(f, t) => set(k === 'a' ? { aFrom: f, aTo: t } : { bFrom: f, bTo: t })}
        label={k === 'a' ? 'before' : 'after'}
      />
    </div>
  );
}

/** The side's range: seconds on its analysis' timeline; empty = open (the analysis' first or last event). */
function RangeForm({
  from,
  to,
  span,
  onApply,
  label,
}: {
  from: number | null;
  to: number | null;
  span: number[] | null;
  onApply: (from: number | null, to: number | null) => void;
  label: string;
}) {
  const [f, setF] = useState(formatSeconds(from));
  const [t, setT] = useState(formatSeconds(to));
  const [bad, setBad] = useState<string | null>(null);
  return (
    <form
      className="cmp-range"
      onSubmit={(e) => {
        e.preventDefault();
        const pf = f.trim() ? parseSeconds(f) : null;
        const pt = t.trim() ? parseSeconds(t) : null;
        if ((f.trim() && pf === null) || (t.trim() && pt === null)) return setBad('seconds, e.g. 12.5');
        if (pf !== null && pt !== null && pt <= pf) return setBad('“to” must be after “from”');
        setBad(null);
        onApply(pf, pt);
      }}
    >
      <label className="field inline">
        <span>from (s)</span>
        <input
          value={f}
          onChange={(e) => setF(e.target.value)}
          placeholder={span ? formatSeconds(span[0]) : 'start'}
          aria-label={`${label} from (s)`}
          size={20}
        />
      </label>
      <label className="field inline">
        <span>to (s)</span>
        <input
          value={t}
          onChange={(e) => setT(e.target.value)}
          placeholder={span ? formatSeconds(span[1]) : 'end'}
          aria-label={`${label} to (s)`}
          size={20}
        />
      </label>
      <button type="submit" className="btn small">
        Apply
      </button>
      {(from !== null || to !== null) && (
        <button type="button" className="btn small" onClick={() => onApply(null, null)}>
          Whole analysis
        </button>
      )}
      {bad && (
        <span className="error" role="alert">
          {' '}
          {bad}
        </span>
      )}
    </form>
  );
}

function OffcpuSection({ cmp }: { cmp: Comparison }) {
  const a = cmp.a.offcpu_stacks;
  const b = cmp.b.offcpu_stacks;
  if (a === 0 && b === 0) return null;
  const diff = `/a/${encodeURIComponent(cmp.a.analysis_id)}?tab=offcpu&fg_diff=1${
    cmp.same_analysis ? '' : `&fg_ban=${encodeURIComponent(cmp.b.analysis_id)}`
  }`;
  return (
    <section className="panel" data-testid="compare-offcpu">
      <div className="title-row">
        <h2>Off-CPU</h2>
      </div>
      {cmp.same_analysis ? (
        <p className="note">
          Off-CPU stacks (bcc) carry no time: the two ranges of one analysis hold the same stacks. The{' '}
          <Link to={diff}>diff flame graph</Link> compares its sources with each other.
        </p>
      ) : a === 0 || b === 0 ? (
        <p className="note">
          {a === 0 ? 'Before' : 'After'} has no off-CPU stacks: there is no diff flame graph to draw.
        </p>
      ) : (
        <p>
          Off CPU: {formatNs(cmp.a.offcpu_us * 1000)} before, {formatNs(cmp.b.offcpu_us * 1000)} after.{' '}
          <Link to={diff} data-testid="compare-flame-diff">
            Open the diff flame graph →
          </Link>{' '}
          <span className="muted">(width: after; colour: after − before, per frame)</span>
        </p>
      )}
    </section>
  );
}
