import { useParams, Link } from 'react-router';
import { useAnalysis } from '../api/queries';
import type { AnalysisDetail } from '../api/types';
import { ApiError } from '../api/client';
import { CopyLink } from '../components/CopyLink';
import { ErrorBox, Loading } from '../components/Status';
import { useMemo, type ReactNode } from 'react';
import { formatCount, formatDate, formatNs, formatBytes, formatName, type TimeBase } from '../lib/format';
import { Time, TimeBaseContext } from '../lib/timeBase';
import { useViewState } from '../state/useViewState';
import { hasWakerStacks } from '../lib/wakers';
import { CaptureCapabilities, useCapabilities } from './CaptureCapabilities';
import { DispatchView, OffcpuView, SourcesView, SqlView, StallsView, TimelineView } from './tabViews';
import { TABS, type Tab } from '../state/viewState';

export function AnalysisPage() {
  const { id = '' } = useParams();
  const q = useAnalysis(id);
  const caps = useCapabilities(id);
  const [view, setView] = useViewState();

  if (q.isPending) return <Loading what="analysis" />;
  if (q.isError) {
    const notFound = q.error instanceof ApiError && q.error.status === 404;
    return (
      <ErrorBox title={notFound ? 'No such analysis.' : 'Could not load the analysis.'} error={q.error}>
        {' '}
        <Link to="/">Back to the analyses</Link>
      </ErrorBox>
    );
  }
  const a = q.data;
  const tabs = availableTabs(a);
  const tab: Tab = view.tab !== null && tabs.includes(view.tab) ? view.tab : defaultTab(tabs, caps.data?.views);
  return (
    <AnalysisTimeBase origin={a.t_min_ns} absolute={view.timeAbs}>
      <div className="analysis">
        <AnalysisHeader a={a} />
        <CaptureCapabilities analysisId={a.id} tabs={tabs} />
        <nav className="tabs" role="tablist">
          {tabs.map((t) => (
            <button key={t} role="tab" aria-selected={tab === t} className="tab" onClick={() => setView({ tab: t })}>
              {TAB_LABEL[t]}
            </button>
          ))}
          <span className="tabs-spacer" />
          <Link className="btn small" to={`/compare?a=${encodeURIComponent(a.id)}`} data-testid="compare-link">
            Compare with…
          </Link>
          <CopyLink />
        </nav>
        {followsTimeRange(tab, a) && <TimeRange />}
        {tab === 'dispatch' && <DispatchView analysis={a} />}
        {tab === 'stalls' && <StallsView analysis={a} />}
        {tab === 'timeline' && <TimelineView analysis={a} />}
        {tab === 'offcpu' && <OffcpuView analysis={a} />}
        {tab === 'sources' && <SourcesView a={a} />}
        {tab === 'sql' && <SqlView analysis={a} />}
      </div>
    </AnalysisTimeBase>
  );
}

/** The page's time base (lib/timeBase.tsx): from the analysis' start unless the URL says time=abs. */
function AnalysisTimeBase({ origin, absolute, children }: { origin: number | null; absolute: boolean; children: ReactNode }) {
  const base = useMemo<TimeBase>(() => ({ origin, absolute }), [origin, absolute]);
  return <TimeBaseContext.Provider value={base}>{children}</TimeBaseContext.Provider>;
}

/** The one toggle of the page's time base. */
function TimeBaseToggle() {
  const [view, setView] = useViewState();
  return (
    <div className="segmented" role="group" aria-label="Times" data-testid="time-base">
      <button aria-pressed={!view.timeAbs} onClick={() => setView({ timeAbs: false }, { replace: true })} title="times from the analysis' start (its first event)">
        from start
      </button>
      <button aria-pressed={view.timeAbs} onClick={() => setView({ timeAbs: true }, { replace: true })} title="times on the trace's own clock, as the trace and the exports have them">
        trace clock
      </button>
    </div>
  );
}

const TAB_LABEL: Record<Tab, string> = { stalls: 'Stalls', timeline: 'Timeline', dispatch: 'Dispatch', offcpu: 'Off-CPU', sources: 'Sources', sql: 'SQL' };
const TAB_FORMAT: Partial<Record<Tab, string>> = { stalls: 'ftrace', offcpu: 'offcputime' };

/** The tabs this analysis has data for, the default first: Stalls (ftrace, or offwaketime's wake-up pairs)
 * explains the most, then Dispatch (block requests: a blktrace's, else those a perf script or function_graph
 * capture rebuilt from its block tracepoints, `has_requests`), Off-CPU (offcputime); the Timeline when a source has
 * events on a clock (offcputime dumps have none: a timeline of them was 1 ns wide); Sources always. */
export function availableTabs(a: Pick<AnalysisDetail, 'sources'>): Tab[] {
  return TABS.filter((t) => {
    if (t === 'timeline') return a.sources.some((s) => s.format !== 'offcputime');
    if (t === 'dispatch') return a.sources.some((s) => s.has_requests || s.format === 'blkparse');
    const f = TAB_FORMAT[t];
    return f === undefined || a.sources.some((s) => s.format === f) || (t === 'stalls' && hasWakerStacks(a.sources));
  });
}

/** Does the tab follow the analysis-wide time range (its chip shown there)? Stalls, Timeline and Dispatch do; an
 * off-CPU flame graph has no timestamps (only its lock frames' waits follow it, with an ftrace source); Sources and
 * SQL list what was loaded, whatever the range. */
export function followsTimeRange(tab: Tab, a: Pick<AnalysisDetail, 'sources'>): boolean {
  if (tab === 'offcpu') return a.sources.some((s) => s.format === 'ftrace');
  return tab === 'stalls' || tab === 'timeline' || tab === 'dispatch';
}

/** The tab an analysis opens on: the first view of its own data (Stalls, Dispatch, Off-CPU), else the timeline; once
 * the capture's capabilities are known (`views`), not a view they say is empty while another has data (function_graph
 * calls without a wait: the Timeline, not an empty Stalls). */
export function defaultTab(tabs: Tab[], views?: { tab: string; state: string }[]): Tab {
  const first = tabs.find((t) => t !== 'timeline' && t !== 'sources' && t !== 'sql') ?? tabs[0];
  const state = (t: Tab) => views?.find((v) => v.tab === t)?.state;
  if (state(first) !== 'empty') return first;
  return tabs.find((t) => t !== 'sources' && t !== 'sql' && state(t) === 'data') ?? first;
}

function AnalysisHeader({ a }: { a: AnalysisDetail }) {
  const span = a.t_min_ns !== null && a.t_max_ns !== null ? a.t_max_ns - a.t_min_ns : null;
  return (
    <header className="panel analysis-header">
      <div className="title-row">
        <h1>{a.name || a.id}</h1>
        {span !== null && <TimeBaseToggle />}
        <span className="muted">created {formatDate(a.created_at)}</span>
      </div>
      <div className="facts">
        <span data-testid="analysis-span">
          <span className="k">Time span</span>{' '}
          {span !== null ? (
            <>
              <Time ns={a.t_min_ns} /> → <Time ns={a.t_max_ns} /> <b>({formatNs(span)})</b>
            </>
          ) : (
            <span className="muted" data-testid="no-time-span">
              none: {a.sources.every((s) => s.format === 'offcputime') ? 'offcputime totals per stack carry no timestamps' : 'no timestamps'}
            </span>
          )}
        </span>
        <span>
          <span className="k">Sources</span> {a.sources.length}
        </span>
      </div>
      <table className="grid compact sources-table">
        <thead>
          <tr>
            <th>File</th>
            <th>Format</th>
            <th className="num">Events</th>
            <th className="num">Skipped</th>
            <th className="num">Size</th>
            <th className="num">From</th>
            <th className="num">To</th>
          </tr>
        </thead>
        <tbody>
          {a.sources.map((s) => (
            <tr key={s.id}>
              <td className="mono">{s.filename}</td>
              <td>
                <span className="badge">{formatName(s)}</span>
              </td>
              <td className="num">{formatCount(s.events)}</td>
              <td className={`num${s.skipped_lines ? ' warn' : ''}`}>{formatCount(s.skipped_lines)}</td>
              <td className="num">{formatBytes(s.bytes)}</td>
              <td className="num mono">
                <Time ns={s.t_min_ns === null ? null : s.t_min_ns + s.clock_offset_ns} />
              </td>
              <td className="num mono">
                <Time ns={s.t_max_ns === null ? null : s.t_max_ns + s.clock_offset_ns} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </header>
  );
}

/** The analysis-wide time range (from the timeline, a heatmap or a chart): every view follows it. */
function TimeRange() {
  const [view, setView] = useViewState();
  if (view.t0 === null || view.t1 === null) return null;
  return (
    <div className="time-range" data-testid="time-range">
      <span className="chip">
        time range <Time ns={view.t0} /> → <Time ns={view.t1} /> ({formatNs(view.t1 - view.t0)})
        <button aria-label="Clear the time range" onClick={() => setView({ t0: null, t1: null })}>
          ×
        </button>
      </span>
    </div>
  );
}
