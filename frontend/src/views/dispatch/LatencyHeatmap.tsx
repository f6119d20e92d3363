import { useMemo, useRef } from 'react';
import * as echarts from 'echarts/core';
import { HeatmapChart } from 'echarts/charts';
import { VisualMapContinuousComponent } from 'echarts/components';
import { useHeatmap } from '../../api/queries';
import { EChart, type EChartHandler } from '../../charts/EChart';
import type { EChartsOption } from '../../charts/types';
import { buildHeatmapOption, heatmapZoomWindow, type Heatmap, type HeatmapDatum } from '../../charts/heatmap';
import { ErrorBox, Loading } from '../../components/Status';
import { formatCount, formatNs } from '../../lib/format';
import { useViewState } from '../../state/useViewState';
import type { Phase } from '../../state/viewState';

echarts.use([HeatmapChart, VisualMapContinuousComponent]);

export const HEATMAP_X_BINS = 120;
export const HEATMAP_Y_BINS = 40;
const METRICS: { key: Phase; label: string; title: string }[] = [
  { key: 'i2d', label: 'I2D', title: 'insert → dispatch, placed at I' },
  { key: 'd2c', label: 'D2C', title: 'dispatch → complete, placed at D' },
  { key: 'q2c', label: 'Q2C', title: 'queue → complete, placed at Q' },
];

function PercentileTable({ data }: { data: Heatmap }) {
  const p = data.percentiles;
  const rows: [string, number | null][] = [
    ['p50', p.p50_ns],
    ['p90', p.p90_ns],
    ['p99', p.p99_ns],
    ['p99.9', p.p999_ns],
    ['p99.99', p.p9999_ns],
    ['max', p.max_ns],
  ];
  return (
    <table className="grid compact heatmap-pct" data-testid="heatmap-percentiles">
      <thead>
        <tr>
          <th>{data.metric.toUpperCase()}</th>
          <th className="num">latency</th>
        </tr>
      </thead>
      <tbody>
        {rows.map(([k, v]) => (
          <tr key={k}>
            <td>{k}</td>
            <td className="num">{formatNs(v)}</td>
          </tr>
        ))}
        <tr>
          <td>count</td>
          <td className="num">{formatCount(p.count)} requests</td>
        </tr>
      </tbody>
    </table>
  );
}

export function LatencyHeatmap({ analysisId }: { analysisId: string }) {
  const [view, setView] = useViewState();
  const q = useHeatmap(analysisId, view.hm, HEATMAP_X_BINS, HEATMAP_Y_BINS, {
    pid: view.pid,
    dev: view.dev,
    t0: view.t0,
    t1: view.t1,
  });
  const option = useMemo(() => (q.data ? (buildHeatmapOption(q.data, view.req) as EChartsOption) : null), [q.data, view.req]);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);

  const events = useMemo<Record<string, EChartHandler>>(
    () => ({
      click: (p) => {
        const v = p?.value as HeatmapDatum | undefined;
        if (Array.isArray(v) && typeof v[5] === 'number' && typeof v[6] === 'number') {
          setView({ req: { sourceId: v[5], line: v[6] } });
        }
      },
      datazoom: (p) => {
        if (!q.data) return;
        const w = heatmapZoomWindow(q.data, p);
        clearTimeout(timer.current);
        if (w) timer.current = setTimeout(() => setView({ t0: w.t0, t1: w.t1 }), 450);
      },
    }),
    [q.data, setView],
  );

  const empty = q.data && q.data.cells.length === 0;
  return (
    <section className="panel chart-panel" data-testid="latency-heatmap">
      <div className="panel-head">
        <h2>Latency heatmap</h2>
        <div className="segmented" role="group" aria-label="Heatmap metric">
          {METRICS.map((m) => (
            <button key={m.key} title={m.title} aria-pressed={view.hm === m.key} onClick={() => setView({ hm: m.key })}>
              {m.label}
            </button>
          ))}
        </div>
        <span className="muted">
          requests per {q.data?.x_bin_ns ? formatNs(q.data.x_bin_ns) : ''} × latency bin · click a cell to open its
          slowest request · drag the slider (or shift + wheel) to select a time window
        </span>
      </div>
      {q.isPending && <Loading what="latency heatmap" />}
      {q.isError && <ErrorBox title="Could not load the latency heatmap." error={q.error} />}
      {empty && <p className="muted">No requests with {view.hm.toUpperCase()} in this selection.</p>}
      {option && q.data && !empty && (
        <div className="heatmap-row">
          <div className="heatmap-chart">
            <EChart option={option} onEvents={events} height={320} ariaLabel="Latency heatmap" />
          </div>
          <PercentileTable data={q.data} />
        </div>
      )}
    </section>
  );
}
