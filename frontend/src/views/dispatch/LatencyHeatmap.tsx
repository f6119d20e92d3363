import { useCallback } from 'react';
import { useHeatmap } from '../../api/queries';
import { HEATMAP_X_BINS, HEATMAP_Y_BINS, latencyHeatmap } from '../../api/tabQueries';
import { binWords, type HeatmapDatum } from '../../charts/heatmap';
import { ErrorBox, Loading } from '../../components/Status';
import type { Phase } from '../../state/viewState';
import { HeatmapBody } from '../heatmap/HeatmapBody';
import { phaseAbsent, useDispatchView } from './phases';

const METRICS: { key: Phase; label: string; title: string }[] = [
  { key: 'i2d', label: 'I2D', title: 'insert → dispatch, placed at I' },
  { key: 'd2c', label: 'D2C', title: 'dispatch → complete, placed at D' },
  { key: 'q2c', label: 'Q2C', title: 'queue → complete, placed at Q' },
];

export function LatencyHeatmap({ analysisId }: { analysisId: string }) {
  const [view, setView, present] = useDispatchView(analysisId);
  const query = latencyHeatmap(view);
  const q = useHeatmap(analysisId, query, HEATMAP_X_BINS, HEATMAP_Y_BINS);
  const onCell = useCallback((v: HeatmapDatum) => setView({ req: { sourceId: v[5], line: v[6] } }), [setView]);

  const empty = q.data && q.data.cells.length === 0;
  return (
    <section className="panel chart-panel" data-testid="latency-heatmap">
      <div className="panel-head">
        <h2>Latency heatmap</h2>
        <div className="segmented" role="group" aria-label="Heatmap metric">
          {METRICS.map((m) => (
            <button
              key={m.key}
              title={phaseAbsent(m.key, present) ?? m.title}
              disabled={phaseAbsent(m.key, present) !== null}
              aria-pressed={view.hm === m.key}
              onClick={() => setView({ hm: m.key })}
            >
              {m.label}
            </button>
          ))}
        </div>
        <span className="muted">
          requests {!q.data || binWords(q.data) ? `per ${q.data ? binWords(q.data) : 'time'} × latency bin` : 'per latency bin (all at one instant)'} · click a
          cell to open its slowest request · drag a box to list its requests
          {!q.data || binWords(q.data) ? ' · the slider (or shift + wheel) selects a time window' : ''}
        </span>
      </div>
      {q.isPending && <Loading what="latency heatmap" />}
      {q.isError && <ErrorBox title="Could not load the latency heatmap." error={q.error} />}
      {empty && <p className="muted">No requests with {view.hm.toUpperCase()} in this selection.</p>}
      {q.data && !empty && (
        <HeatmapBody
          analysisId={analysisId}
          query={query}
          data={q.data}
          selected={view.req}
          onCell={onCell}
          ariaLabel="Latency heatmap"
        />
      )}
    </section>
  );
}
