import { useMemo, useRef } from 'react';
import { useTimeBase } from '../../lib/timeBase';
import { useLatencyOverTime } from '../../api/queries';
import { LATENCY_BUCKETS, blockFilter } from '../../api/tabQueries';
import { EChart, type EChartHandler } from '../../charts/EChart';
import { buildLatencyOverTimeOption, zoomWindow } from '../../charts/latencyOverTime';
import { ErrorBox, Loading } from '../../components/Status';
import { formatNs } from '../../lib/format';
import { useViewState } from '../../state/useViewState';

export function LatencyChart({ analysisId }: { analysisId: string }) {
  const [view, setView] = useViewState();
  const q = useLatencyOverTime(analysisId, LATENCY_BUCKETS, blockFilter(view));
  const time = useTimeBase();
  const option = useMemo(() => (q.data ? buildLatencyOverTimeOption(q.data, view.req, time) : null), [q.data, view.req, time]);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);

  const events = useMemo<Record<string, EChartHandler>>(
    () => ({
      click: (p) => {
        const v = p?.value as unknown[] | undefined;
        if (Array.isArray(v) && typeof v[2] === 'number' && typeof v[3] === 'number') {
          setView({ req: { sourceId: v[2], line: v[3] } });
        }
      },
      datazoom: (p) => {
        if (!q.data) return;
        const w = zoomWindow(q.data, p);
        clearTimeout(timer.current);
        if (w) timer.current = setTimeout(() => setView({ t0: w.t0, t1: w.t1 }), 450);
      },
    }),
    [q.data, setView],
  );

  const empty = q.data && q.data.series.i2d.length === 0 && q.data.series.d2c.length === 0;
  return (
    <section className="panel chart-panel">
      <div className="panel-head">
        <h2>I2D and D2C over time</h2>
        <span className="muted">
          maximum per {q.data?.bucket_ns ? formatNs(q.data.bucket_ns) : ''} bucket · click a point to open its request ·
          drag the slider (or shift + wheel) to select a time window
        </span>
      </div>
      {q.isPending && <Loading what="latency over time" />}
      {q.isError && <ErrorBox title="Could not load latency over time." error={q.error} />}
      {empty && <p className="muted">No dispatched or completed requests in this selection.</p>}
      {option && !empty && (
        <EChart option={option} onEvents={events} height={260} ariaLabel="I2D and D2C latency over time" />
      )}
    </section>
  );
}
