import { useParams, Link } from 'react-router';
import { useAnalysis } from '../api/queries';
import type { AnalysisDetail } from '../api/types';
import { ApiError } from '../api/client';
import { CopyLink } from '../components/CopyLink';
import { ErrorBox, Loading } from '../components/Status';
import { formatAbsTime, formatCount, formatDate, formatNs, formatBytes } from '../lib/format';
import { useViewState } from '../state/useViewState';
import { DispatchView } from './dispatch/DispatchView';
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
  return (
    <div className="analysis">
      <AnalysisHeader a={a} />
      <nav className="tabs" role="tablist">
        <button role="tab" aria-selected={view.tab === 'dispatch'} className="tab" onClick={() => setView({ tab: 'dispatch' })}>
          Dispatch
        </button>
        <button role="tab" aria-selected={view.tab === 'sources'} className="tab" onClick={() => setView({ tab: 'sources' })}>
          Sources
        </button>
        <span className="tabs-spacer" />
        <CopyLink />
      </nav>
      {view.tab === 'dispatch' ? <DispatchView analysis={a} /> : <SourcesView a={a} />}
    </div>
  );
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
