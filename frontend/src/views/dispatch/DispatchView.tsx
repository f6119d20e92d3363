import type { AnalysisDetail } from '../../api/types';
import { useViewState } from '../../state/useViewState';
import { LatencyChart } from './LatencyChart';
import { LatencyHeatmap } from './LatencyHeatmap';
import { RequestDetailPanel } from './RequestDetailPanel';
import { RequestsTable } from './RequestsTable';
import { SummaryTable } from './SummaryTable';

export function DispatchView({ analysis }: { analysis: AnalysisDetail }) {
  const [view, setView] = useViewState();
  // the time range has its chip above every tab (AnalysisPage): only Dispatch's own filters here
  return (
    <div className="dispatch">
      {(view.pid !== null || view.dev !== null) && (
        <div className="filterbar" data-testid="filters">
          <span className="k">Showing</span>
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
