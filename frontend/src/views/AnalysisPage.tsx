import { useParams, Link } from 'react-router';
import { useAnalysis } from '../api/queries';
import type { AnalysisDetail } from '../api/types';
import { ApiError } from '../api/client';
import { CopyLink } from '../components/CopyLink';
import { ErrorBox, Loading } from '../components/Status';
import { formatAbsTime, formatCount, formatDate, formatNs, formatBytes } from '../lib/format';
import { useViewState } from '../state/useViewState';
import { DispatchView } from './dispatch/DispatchView';
import { OffcpuView } from './offcpu/OffcpuView';
import { StallsView } from './stalls/StallsView';
import { TABS, type Tab } from '../state/viewState';
import { SkippedAndNotes } from './HomePage';

export function AnalysisPage() {
  const { id = '' } = useParams();
  const q = useAnalysis(id);
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
  const tab: Tab = view.tab !== null && tabs.includes(view.tab) ? view.tab : tabs[0];
  return (
    <div className="analysis">
      <AnalysisHeader a={a} />
      <nav className="tabs" role="tablist">
        {tabs.map((t) => (
          <button key={t} role="tab" aria-selected={tab === t} className="tab" onClick={() => setView({ tab: t })}>
            {TAB_LABEL[t]}
          </button>
        ))}
        <span className="tabs-spacer" />
        <CopyLink />
      </nav>
      {tab === 'dispatch' && <DispatchView analysis={a} />}
      {tab === 'stalls' && <StallsView analysis={a} />}
      {tab === 'offcpu' && <OffcpuView analysis={a} />}
      {tab === 'sources' && <SourcesView a={a} />}
    </div>
  );
}

const TAB_LABEL: Record<Tab, string> = { stalls: 'Stalls', dispatch: 'Dispatch', offcpu: 'Off-CPU', sources: 'Sources' };
const TAB_FORMAT: Partial<Record<Tab, string>> = { stalls: 'ftrace', dispatch: 'blkparse', offcpu: 'offcputime' };

/** The tabs this analysis has data for, the default first: Stalls (ftrace) explains the most, then
 * Dispatch (blkparse), Off-CPU (offcputime); Sources always. */
export function availableTabs(a: Pick<AnalysisDetail, 'sources'>): Tab[] {
  return TABS.filter((t) => {
    const f = TAB_FORMAT[t];
    return f === undefined || a.sources.some((s) => s.format === f);
  });
}

function AnalysisHeader({ a }: { a: AnalysisDetail }) {
  const span = a.t_min_ns !== null && a.t_max_ns !== null ? a.t_max_ns - a.t_min_ns : null;
  return (
    <header className="panel analysis-header">
      <div className="title-row">
        <h1>{a.name || a.id}</h1>
        <span className="muted">created {formatDate(a.created_at)}</span>
      </div>
      <div className="facts">
        <span>
          <span className="k">Time span</span> {formatAbsTime(a.t_min_ns)} → {formatAbsTime(a.t_max_ns)}
          {span !== null && <b> ({formatNs(span)})</b>}
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
                <span className="badge">{s.format}</span>
              </td>
              <td className="num">{formatCount(s.events)}</td>
              <td className={`num${s.skipped_lines ? ' warn' : ''}`}>{formatCount(s.skipped_lines)}</td>
              <td className="num">{formatBytes(s.bytes)}</td>
              <td className="num mono">{formatAbsTime(s.t_min_ns)}</td>
              <td className="num mono">{formatAbsTime(s.t_max_ns)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </header>
  );
}

function SourcesView({ a }: { a: AnalysisDetail }) {
  return (
    <section className="panel">
      <h2>Sources</h2>
      <table className="grid">
        <thead>
          <tr>
            <th>File</th>
            <th>Format</th>
            <th className="num">Lines</th>
            <th className="num">Events</th>
            <th className="num">Skipped lines</th>
            <th className="num">Clock offset</th>
          </tr>
        </thead>
        <tbody>
          {a.sources.map((s) => (
            <tr key={s.id}>
              <td className="mono">{s.filename}</td>
              <td>
                <span className="badge">{s.format}</span>
              </td>
              <td className="num">{formatCount(s.lines)}</td>
              <td className="num">{formatCount(s.events)}</td>
              <td className="num">{formatCount(s.skipped_lines)}</td>
              <td className="num">{formatNs(s.clock_offset_ns)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {a.sources.map((s) => (
        <SkippedAndNotes key={s.id} filename={s.filename} skipped={s.skipped_examples} notes={s.notes} total={s.skipped_lines} />
      ))}
      {a.sources.every((s) => s.skipped_lines === 0 && s.notes.length === 0) && (
        <p className="muted">Every line of every source was parsed.</p>
      )}
    </section>
  );
}
