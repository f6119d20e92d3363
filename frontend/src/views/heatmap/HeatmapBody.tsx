// The body of a latency heatmap panel (Dispatch and Stalls): the chart with its brush, the percentile
// table beside it, and the events of the brushed box (kept in the URL) below.
import { useMemo, useRef } from 'react';
import { Time, useTimeBase } from '../../lib/timeBase';
import * as echarts from 'echarts/core';
import { HeatmapChart } from 'echarts/charts';
import { BrushComponent, VisualMapContinuousComponent } from 'echarts/components';
import { useHeatmapEvents, type HeatmapQuery } from '../../api/queries';
import { EChart, type EChartHandler } from '../../charts/EChart';
import type { EChartsOption } from '../../charts/types';
import {
  BRUSH_CURSOR,
  boxLabel,
  brushBox,
  buildHeatmapOption,
  countOf,
  fitInstant,
  heatmapZoomWindow,
  metricTitle,
  type EventKind,
  type Heatmap,
  type HeatmapDatum,
  type HeatmapEvent,
} from '../../charts/heatmap';
import { ErrorBox, Loading } from '../../components/Status';
import { formatCount, formatNs, formatSector, formatWaitNs } from '../../lib/format';
import { useViewState } from '../../state/useViewState';
import type { HeatmapBox, RequestRef } from '../../state/viewState';
import { eventLink } from './eventLink';
import { useReveal } from '../../lib/reveal';

echarts.use([HeatmapChart, VisualMapContinuousComponent, BrushComponent]);

export { HEATMAP_X_BINS, HEATMAP_Y_BINS } from '../../api/tabQueries';
const EVENTS_LIMIT = 200;

export function PercentileTable({ data }: { data: Heatmap }) {
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
          <th>{metricTitle(data)}</th>
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
          <td className="num">{countOf(data.kind, p.count)}</td>
        </tr>
      </tbody>
    </table>
  );
}

type Props = {
  analysisId: string;
  query: HeatmapQuery;
  data: Heatmap;
  selected: RequestRef | null; // outline the cell whose max is this event
  onCell: (datum: HeatmapDatum) => void;
  ariaLabel: string;
};

export function HeatmapBody({ analysisId, query, data: asked, selected, onCell, ariaLabel }: Props) {
  const [view, setView] = useViewState();
  const data = useMemo(() => fitInstant(asked), [asked]);
  const box = view.hbox !== null && view.hbox.metric === query.metric ? view.hbox : null;
  const time = useTimeBase();
  const option = useMemo(() => buildHeatmapOption(data, { selected, box, time }) as EChartsOption, [data, selected, box, time]);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);

  const events = useMemo<Record<string, EChartHandler>>(
    () => ({
      click: (p) => {
        const v = p?.value as HeatmapDatum | undefined;
        if (p?.componentType === 'series' && Array.isArray(v) && v.length === 7) onCell(v);
      },
      datazoom: (p) => {
        const w = heatmapZoomWindow(data, p);
        clearTimeout(timer.current);
        if (w) timer.current = setTimeout(() => setView({ t0: w.t0, t1: w.t1 }), 450);
      },
      brushEnd: (p) => {
        const b = brushBox(data, p?.areas?.[0]);
        if (b) setView({ hbox: b });
      },
    }),
    [data, onCell, setView],
  );

  return (
    <>
      <div className="heatmap-row">
        <div className="heatmap-chart">
          <EChart
            option={option}
            onEvents={events}
            height={320}
            ariaLabel={ariaLabel}
            afterSetOption={(c) => c.dispatchAction(BRUSH_CURSOR)}
          />
        </div>
        <PercentileTable data={data} />
      </div>
      {box && <BoxEvents analysisId={analysisId} query={query} box={box} kind={data.kind} />}
    </>
  );
}

function BoxEvents({ analysisId, query, box, kind }: { analysisId: string; query: HeatmapQuery; box: HeatmapBox; kind: EventKind }) {
  const [view, setView] = useViewState();
  const q = useHeatmapEvents(analysisId, query, box, EVENTS_LIMIT);
  const open = (e: HeatmapEvent) => {
    const link = eventLink(e);
    if (!link) return;
    setView(link.patch);
    setTimeout(() => document.querySelector(`[data-testid="${link.target}"]`)?.scrollIntoView({ block: 'start' }), 50);
  };
  const isSelected = (e: HeatmapEvent) => {
    if (e.ref.kind === 'request') return view.req?.sourceId === e.ref.source_id && view.req.line === e.ref.line;
    const w = e.ref.kind === 'wait' ? e.ref : e.wait;
    return !!w && view.wait?.sourceId === w.source_id && view.wait.line === w.line;
  };
  const data = q.data;
  const time = useTimeBase();
  // a cell clicked or a box drawn: its list, under the chart, brought into view once it is there
  const ref = useReveal<HTMLDivElement>(`${box.metric}:${box.t0}:${box.t1}:${box.latMin}:${box.latMax}`, !!data);
  return (
    <div ref={ref} className="heatmap-events" data-testid="heatmap-events">
      <div className="panel-head">
        <span className="chip" data-testid="heatmap-box">
          box {boxLabel(box, time)}
          <button aria-label="Clear the box" onClick={() => setView({ hbox: null })}>
            ×
          </button>
        </span>
        {data && (
          <span className="muted" data-testid="heatmap-events-count">
            {countOf(kind, data.count)} in the box
            {data.count > data.events.length ? ` · the ${formatCount(data.events.length)} slowest shown` : ' · slowest first'}
          </span>
        )}
        <button
          className="btn small"
          title="Set the analysis-wide time range to the box's: every view follows it"
          onClick={() => setView({ t0: box.t0, t1: Math.max(box.t1, box.t0 + 1) })}
        >
          Select this time range
        </button>
      </div>
      {q.isPending && <Loading what={`the ${kind}s in the box`} />}
      {q.isError && <ErrorBox title="Could not list the events in the box." error={q.error} />}
      {data && data.events.length === 0 && <p className="muted">No {kind}s in this box.</p>}
      {data && data.events.length > 0 && (
        <div className="table-scroll" style={{ maxHeight: 320 }}>
          <table className="grid compact" data-testid="heatmap-events-table">
            <thead>
              <tr>
                <th className="num">{kind === 'request' ? metricTitle({ metric: query.metric, filter: null }) : 'Duration'}</th>
                <th className="num">{kind === 'request' ? `At (${query.metric[0].toUpperCase()})` : kind === 'call' ? 'Entry' : 'From'}</th>
                <th>{kind === 'request' ? 'Process' : 'Task'}</th>
                {kind === 'request' && (
                  <>
                    <th>Device</th>
                    <th>Op</th>
                    <th>Sector + size</th>
                  </>
                )}
                {kind === 'call' && <th>Function</th>}
                <th>{kind === 'call' ? 'Waited on' : kind === 'wait' ? 'Lock' : ''}</th>
                <th className="num">Line</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {data.events.map((e) => {
                const link = eventLink(e);
                const sel = isSelected(e);
                return (
                  <tr
                    key={`${e.ref.source_id}:${e.ref.line}`}
                    className={[link ? 'clickable' : '', sel ? 'selected' : ''].filter(Boolean).join(' ') || undefined}
                    aria-selected={sel}
                    onClick={link ? () => open(e) : undefined}
                    title={link ? link.label : 'no wait began during this call'}
                  >
                    <td className="num strong">
                      {formatWaitNs(e.latency_ns, e.end_known)}
                    </td>
                    <td className="num mono">
                      <Time ns={e.t_ns} />
                    </td>
                    <td className="mono">
                      {e.comm ?? '?'} {e.ref.pid ?? ''}
                    </td>
                    {kind === 'request' && (
                      <>
                        <td className="mono">{e.dev}</td>
                        <td className="mono">{e.rwbs}</td>
                        <td className="mono">{formatSector(e.sector, e.nsect)}</td>
                      </>
                    )}
                    {kind === 'call' && <td className="mono">{e.func}</td>}
                    <td className="mono">{kind === 'request' ? '' : (e.lock ?? '—')}</td>
                    <td className="num mono">{e.ref.line}</td>
                    <td className="muted">{link ? `${link.label} →` : '—'}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {data && data.events.some((e) => !e.end_known) && (
        <p className="muted small-note">+ : the wait was still open when the trace ended (its duration so far)</p>
      )}
    </div>
  );
}
