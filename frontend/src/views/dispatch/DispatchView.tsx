import type { AnalysisDetail } from '../../api/types';
import { formatAbsTime, formatNs } from '../../lib/format';
import { useViewState } from '../../state/useViewState';
import { LatencyChart } from './LatencyChart';
import { LatencyHeatmap } from './LatencyHeatmap';
import { RequestDetailPanel } from './RequestDetailPanel';
import { RequestsTable } from './RequestsTable';
import { SummaryTable } from './SummaryTable';

export function DispatchView({ analysis }: { analysis: AnalysisDetail }) {
  const [view, setView] = useViewState();
  const hasWindow = view.t0 !== null && view.t1 !== null;
  const hasFilter = view.pid !== null || view.dev !== null;
  return (
    <div className="dispatch">
      {(hasWindow || hasFilter) && (
        <div className="filterbar" data-testid="filters">
          <span className="k">Showing</span>
          {hasWindow && (
            <span className="chip">
              window {formatAbsTime(view.t0)} → {formatAbsTime(view.t1)} ({formatNs(view.t1! - view.t0!)})
              <button aria-label="Clear time window" onClick={() => setView({ t0: null, t1: null })}>
                ×
              </button>
            </span>
          )}
          {view.pid !== null && (
            <span className="chip">
              pid {view.pid}
              <button aria-label="Clear process filter" onClick={() => setView({ pid: null })}>
                ×
              </button>
            </span>
          )}
          {view.dev !== null && (
            <span className="chip">
              device {view.dev}
              <button aria-label="Clear device filter" onClick={() => setView({ dev: null })}>
                ×
              </button>
            </span>
          )}
        </div>
      )}
      <LatencyChart analysisId={analysis.id} />
      <LatencyHeatmap analysisId={analysis.id} />
      <SummaryTable analysisId={analysis.id} />
      <div className={`split${view.req ? ' with-detail' : ''}`}>
        <RequestsTable analysis={analysis} />
        {view.req && <RequestDetailPanel analysis={analysis} reqRef={view.req} />}
      </div>
    </div>
  );
}
