// "What this capture can tell": which views have data, what the capture lacks for the others and the capture command
// that would add it next time, and where the trace lost events (GET /api/analyses/{id}/capabilities).
import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';
import type { paths } from '../api/schema';
import { formatAbsTime } from '../lib/format';
import { useViewState } from '../state/useViewState';
import type { Tab } from '../state/viewState';

type Capabilities =
  paths['/api/analyses/{analysis_id}/capabilities']['get']['responses'][200]['content']['application/json'];

const TAB_LABEL: Record<string, string> = {
  stalls: 'Stalls',
  timeline: 'Timeline',
  dispatch: 'Dispatch',
  offcpu: 'Off-CPU',
  sources: 'Sources',
};

export function useCapabilities(id: string) {
  return useQuery({
    queryKey: ['capabilities', id],
    queryFn: ({ signal }) =>
      unwrap(api.GET('/api/analyses/{analysis_id}/capabilities', { params: { path: { analysis_id: id } }, signal })),
    staleTime: Infinity,
  });
}

/** The panel: open when a tab of the analysis (`tabs`) has nothing to show, events were lost or no view has data;
 * else one line that opens it (a capture of one kind lacks the others' views: said in that line, not spread over
 * 250 px above every view of it). */
export function CaptureCapabilities({ analysisId, tabs }: { analysisId: string; tabs: Tab[] }) {
  const q = useCapabilities(analysisId);
  const [, setView] = useViewState();
  if (!q.data) return null;
  const c: Capabilities = q.data;
  const empty = c.views.filter((v) => v.state !== 'data');
  const withData = c.views.filter((v) => v.state === 'data' && v.tab !== 'sources');
  const open = empty.some((v) => tabs.includes(v.tab as Tab)) || c.lost.length > 0 || withData.length === 0;
  return (
    <details className="panel capabilities" data-testid="capabilities" open={open}>
      <summary style={{ cursor: 'pointer' }}>
        <b>What this capture can tell</b>{' '}
        <span className="muted">
          {withData.length ? `data for ${withData.map((v) => TAB_LABEL[v.tab] ?? v.tab).join(', ')}` : 'no view has data'}
          {c.missing.length ? ` · ${c.missing.length} thing${c.missing.length > 1 ? 's' : ''} it lacks` : ''}
          {c.lost.length ? ` · events lost (${c.lost.length})` : ''}
        </span>
      </summary>
      <table className="grid compact" data-testid="capability-views">
        <tbody>
          {c.views.map((v) => (
            <tr key={v.tab} data-state={v.state}>
              <td>{v.state === 'data' ? '✓' : '–'}</td>
              <td>
                {v.state === 'data' ? (
                  <button className="link-btn" style={{ color: 'var(--accent)', padding: 0 }} onClick={() => setView({ tab: v.tab as Tab })}>
                    {TAB_LABEL[v.tab] ?? v.tab}
                  </button>
                ) : (
                  (TAB_LABEL[v.tab] ?? v.tab)
                )}
              </td>
              <td className={v.state === 'data' ? '' : 'muted'}>{v.summary}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {c.missing.length > 0 && (
        <>
          <h3 style={{ fontSize: 13, margin: '8px 0 4px' }}>What it lacks, and how to capture it next time</h3>
          <ul data-testid="capability-missing">
            {c.missing.map((m) => (
              <li key={m.what}>
                <b>{m.what}</b> <span className="muted">— {m.why}</span>
                <br />
                <code className="mono">{m.capture}</code>
              </li>
            ))}
          </ul>
        </>
      )}
      {c.lost.length > 0 && (
        <>
          <h3 style={{ fontSize: 13, margin: '8px 0 4px' }}>Events lost</h3>
          <ul data-testid="capability-lost">
            {c.lost.map((l, i) => (
              <li key={i}>
                <span className="mono">{l.filename}</span>
                {l.cpu !== null ? `, CPU ${l.cpu}` : ''}
                {l.t0_ns !== null || l.t1_ns !== null
                  ? `, ${l.t0_ns !== null ? `between ${formatAbsTime(l.t0_ns)}` : 'before'} ${l.t0_ns !== null ? 'and ' : ''}${formatAbsTime(l.t1_ns)}`
                  : ''}
                : {l.what}
              </li>
            ))}
          </ul>
        </>
      )}
    </details>
  );
}
