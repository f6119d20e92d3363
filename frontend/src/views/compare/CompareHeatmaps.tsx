// The heatmaps of a comparison: per metric (I2D, D2C, wait) both sides next to each other on one scale (the time
// axis shared, or each side's own: a short capture beside a long one over the whole width), and their percentiles
// side by side with the change. Clicking a cell opens the slowest event of it in its own analysis.
import { useMemo } from 'react';
import { useNavigate } from 'react-router';
import * as echarts from 'echarts/core';
import { HeatmapChart } from 'echarts/charts';
import { VisualMapContinuousComponent } from 'echarts/components';
import { EChart, type EChartHandler } from '../../charts/EChart';
import type { EChartsOption } from '../../charts/types';
import {
  buildCompareHeatmapOption,
  deltasByMetric,
  pairTitle,
  type CompareDatum,
  type Comparison,
  type HeatmapPair,
  type SideKey,
} from '../../charts/compare';
import { countOf } from '../../charts/heatmap';
import { formatAbsTime, formatNs } from '../../lib/format';
import { Triple } from './CompareTables';
import { sideLink, type XTime } from './compareState';

echarts.use([HeatmapChart, VisualMapContinuousComponent]);

const HEIGHT = 260;

export function sideName(cmp: Comparison, k: SideKey): string {
  return `${k === 'a' ? 'Before' : 'After'}: ${cmp[k].name || cmp[k].analysis_id}`;
}

function SideChart({ cmp, pair, k }: { cmp: Comparison; pair: HeatmapPair; k: SideKey }) {
  const label = sideName(cmp, k);
  const option = useMemo(() => buildCompareHeatmapOption(pair, k, label) as EChartsOption, [pair, k, label]);
  const side = pair[k];
  const navigate = useNavigate();
  const onEvents = useMemo<Record<string, EChartHandler>>(
    () => ({
      click: (p: { value?: CompareDatum }) => {
        if (!p.value) return;
        const [, , , , , sourceId, line] = p.value;
        const ref = { sourceId, line };
        const s = cmp[k];
        const patch = pair.kind === 'request' ? { tab: 'dispatch' as const, req: ref } : { tab: 'stalls' as const, wait: ref };
        navigate(sideLink(s.analysis_id, { from: s.from_ns, to: s.to_ns, span: s.span_ns }, patch));
      },
    }),
    [cmp, k, pair.kind, navigate],
  );
  return (
    <div className="cmp-heat-side" data-testid={`compare-heatmap-${pair.metric}-${k}`}>
      <div className="cmp-heat-head">
        <b className={k === 'a' ? 'cmp-a' : 'cmp-b'}>{label}</b>
        {side ? (
          <span className="muted">
            {' '}
            {countOf(pair.kind, side.percentiles.count)} over {formatNs(side.t1_ns - side.t0_ns)} from{' '}
            {formatAbsTime(side.t0_ns)}
          </span>
        ) : (
          <span className="muted"> no {pair.kind === 'request' ? 'block requests' : 'waits'} in its range</span>
        )}
      </div>
      <EChart option={option} onEvents={onEvents} height={HEIGHT} ariaLabel={`${pairTitle(pair)} heatmap, ${label}`} />
    </div>
  );
}

function PercentileCompare({ pair }: { pair: HeatmapPair }) {
  const d = deltasByMetric(pair.deltas);
  const rows: [string, string][] = [
    ['count', pair.kind === 'request' ? 'requests' : 'waits'],
    ['p50_ns', 'p50'],
    ['p90_ns', 'p90'],
    ['p99_ns', 'p99'],
    ['max_ns', 'max'],
  ];
  return (
    <table className="grid compact cmp-pct" data-testid={`compare-percentiles-${pair.metric}`}>
      <thead>
        <tr>
          <th>{pairTitle(pair)}</th>
          <th className="num cmp-a">before</th>
          <th className="num cmp-b">after</th>
          <th className="num">change</th>
        </tr>
      </thead>
      <tbody>
        {rows.map(([k, label]) => (
          <tr key={k} data-testid={`pct-${label}`}>
            <td>{label}</td>
            <Triple d={d[k]} />
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** What the time bins of a pair are, in words. */
function timeBinsText(pair: HeatmapPair): string {
  if (pair.x_time === 'shared') return `time bins of ${formatNs(pair.x_bin_ns)} from each side's start`;
  const widths = (['a', 'b'] as const).map((k) => pair[k]).filter((s) => s !== null);
  return `each side's own time axis (bins of ${widths.map((s) => formatNs(s.x_bin_ns)).join(' and ')})`;
}

export function HeatmapPairPanel({
  cmp,
  pair,
  xTime,
  onXTime,
}: {
  cmp: Comparison;
  pair: HeatmapPair;
  xTime: XTime;
  onXTime: (x: XTime) => void;
}) {
  return (
    <section className="panel" data-testid={`compare-heatmaps-${pair.metric}`}>
      <div className="title-row">
        <h2>{pairTitle(pair)} heatmaps</h2>
        <span className="muted" data-testid="compare-heatmap-scale">
          {pair.y_bins} latency bins {formatNs(pair.y_edges_ns[0])} – {formatNs(pair.y_edges_ns[pair.y_edges_ns.length - 1])} and one
          colour scale (max {pair.max_count} per cell) for both sides, {timeBinsText(pair)}
        </span>
        <label className="field inline">
          <span>time axis</span>
          <select value={xTime} onChange={(e) => onXTime(e.target.value as XTime)} aria-label="Time axis">
            <option value="shared">shared</option>
            <option value="own">each side&apos;s own</option>
          </select>
        </label>
      </div>
      <div className="cmp-heat-row">
        <SideChart cmp={cmp} pair={pair} k="a" />
        <SideChart cmp={cmp} pair={pair} k="b" />
        <PercentileCompare pair={pair} />
      </div>
    </section>
  );
}
