import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import type { AnalysisDetail } from '../../api/types';
import { useTimeline } from '../../api/queries';
import { TIMELINE_WIDTH_PX, timelineWindow } from '../../api/tabQueries';
import { EChart, type EChartHandler } from '../../charts/EChart';
import {
  RELATION_COLORS,
  STATE_COLORS,
  buildTimelineOption,
  itemOf,
  panWindow,
  timelineItems,
  timelineLayout,
  zoomWindow,
  type Item,
} from '../../charts/timeline';
import { ErrorBox, Loading } from '../../components/Status';
import { formatAbsTime, formatCount, formatNs } from '../../lib/format';
import { useViewState } from '../../state/useViewState';

const GRID_LEFT = 8; // keep in sync with buildTimelineOption's grid
const GRID_RIGHT = 16;
const GRID_TOP = 12;
const LABELS_W = 220;

/** The analysis on one time axis. Wheel or W/S zoom, A/D pan, drag to select a time range (every view of the
 * analysis is then filtered to it), click an item for what is behind it. Window and selection are in the URL. */
export function TimelineView({ analysis }: { analysis: AnalysisDetail }) {
  const [view, setView] = useViewState();
  const lo = analysis.t_min_ns ?? 0;
  const hi = Math.max(analysis.t_max_ns ?? lo + 1, lo + 1);
  const v0 = view.v0 ?? lo;
  const v1 = view.v1 ?? hi;
  const box = useRef<HTMLDivElement>(null);
  // the pixels the window is asked for: TIMELINE_WIDTH_PX (what main.tsx asked before the page was laid out),
  // asked again only when the plot is much wider or narrower (within 20 % the drawing is the same: items are
  // drawn at their own times, at least a pixel wide)
  const [width, setWidth] = useState(TIMELINE_WIDTH_PX);
  const [plotShown, setPlotShown] = useState(false); // the plot (box) is there once a timeline is
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const ro = new ResizeObserver(() => {
      const px = Math.max(200, Math.round((el.clientWidth - GRID_LEFT - GRID_RIGHT) / 100) * 100);
      setWidth((w) => (Math.abs(px - w) > 0.2 * w ? px : w));
    });
    ro.observe(el);
    return () => ro.disconnect();
  }, [plotShown]);

  // the window asked of the server follows the URL, a little later while the user keeps zooming; the whole
  // analysis is asked without a window (the server's default: the request main.tsx started from the URL), unless
  // the analysis spans no time (its window is then [lo, lo + 1], which the server would not default to)
  const spans = analysis.t_min_ns !== null && analysis.t_max_ns !== null && analysis.t_max_ns > analysis.t_min_ns;
  const want: [number | null, number | null] = view.v0 !== null || !spans ? [v0, v1] : [null, null];
  const [asked, setAsked] = useState(want);
  useEffect(() => {
    const t = setTimeout(() => setAsked((a) => (a[0] === want[0] && a[1] === want[1] ? a : want)), 120); // same: no render
    return () => clearTimeout(t);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [want[0], want[1]]);
  const q = useTimeline(analysis.id, { ...timelineWindow(view, width), v0: asked[0], v1: asked[1] });

  const names = useMemo(() => new Map(analysis.sources.map((s) => [s.id, `${s.format} · ${s.filename}`])), [analysis.sources]);
  const layout = useMemo(() => (q.data ? timelineLayout(q.data, (id) => names.get(id) ?? `source ${id}`) : null), [q.data, names]);
  if (!!layout !== plotShown) setPlotShown(!!layout);
  const items = useMemo(() => (q.data && layout ? timelineItems(q.data, layout) : []), [q.data, layout]);
  const selection: [number, number] | null = view.t0 !== null && view.t1 !== null ? [view.t0, view.t1] : null;
  const option = useMemo(
    () => (layout ? buildTimelineOption(layout, items, { v0, v1, selection, origin: lo }) : null),
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [layout, items, v0, v1, selection?.[0], selection?.[1], lo],
  );

  const setWindow = useCallback(
    ([a, b]: [number, number]) => setView(a <= lo && b >= hi ? { v0: null, v1: null } : { v0: a, v1: b }, { replace: true }),
    [setView, lo, hi],
  );

  // px inside the plot → ns on the timeline
  const plotW = () => (box.current ? box.current.clientWidth - GRID_LEFT - GRID_RIGHT : 1);
  const toNs = (clientX: number) => {
    const r = box.current!.getBoundingClientRect();
    const frac = Math.max(0, Math.min(1, (clientX - r.left - GRID_LEFT) / plotW()));
    return Math.round(v0 + frac * (v1 - v0));
  };

  // keyboard: W/S zoom around the centre, A/D pan (as Perfetto users expect)
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const t = e.target as HTMLElement | null;
      if (t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT' || t.isContentEditable)) return;
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      const k = e.key.toLowerCase();
      const mid = (v0 + v1) / 2;
      if (k === 'w') setWindow(zoomWindow(v0, v1, 0.6, mid, lo, hi));
      else if (k === 's') setWindow(zoomWindow(v0, v1, 1 / 0.6, mid, lo, hi));
      else if (k === 'a') setWindow(panWindow(v0, v1, -0.2, lo, hi));
      else if (k === 'd') setWindow(panWindow(v0, v1, 0.2, lo, hi));
      else return;
      e.preventDefault();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [v0, v1, lo, hi, setWindow]);

  // wheel: zoom around the pointer (a native listener: React's is passive and cannot preventDefault)
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const onWheel = (e: WheelEvent) => {
      e.preventDefault();
      const r = el.getBoundingClientRect();
      const frac = Math.max(0, Math.min(1, (e.clientX - r.left - GRID_LEFT) / (el.clientWidth - GRID_LEFT - GRID_RIGHT)));
      const at = v0 + frac * (v1 - v0);
      setWindow(zoomWindow(v0, v1, e.deltaY < 0 ? 0.8 : 1.25, at, lo, hi));
    };
    el.addEventListener('wheel', onWheel, { passive: false });
    return () => el.removeEventListener('wheel', onWheel);
  }, [v0, v1, lo, hi, setWindow]);

  // drag: select a time range
  const [drag, setDrag] = useState<{ from: number; to: number; x0: number } | null>(null);
  const onMouseDown = (e: React.MouseEvent) => {
    if (e.button !== 0) return;
    const ns = toNs(e.clientX);
    setDrag({ from: ns, to: ns, x0: e.clientX });
  };
  const onMouseMove = (e: React.MouseEvent) => {
    if (drag) setDrag({ ...drag, to: toNs(e.clientX) });
  };
  const onMouseUp = (e: React.MouseEvent) => {
    if (!drag) return;
    if (Math.abs(e.clientX - drag.x0) > 5) {
      const a = Math.min(drag.from, drag.to);
      const b = Math.max(drag.from, drag.to);
      setView({ t0: a, t1: b });
    }
    setDrag(null);
  };

  const selected = useMemo(() => findSelected(items, view.tlSel), [items, view.tlSel]);
  const events = useMemo<Record<string, EChartHandler>>(
    () => ({
      click: (p) => {
        const it = itemOf(items, p);
        if (!it) return;
        if (it.kind === 'segment') setView({ tlSel: { sourceId: it.seg.source_id, line: it.seg.line } });
        else if (it.kind === 'arrow') setView({ tab: 'stalls', chain: it.arrow.chain_id });
        else if (it.kind === 'mark') setView({ tlSel: { sourceId: it.mark.source_id, line: it.mark.line } });
        else if (it.kind === 'band') setView({ tab: 'offcpu' });
      },
    }),
    [items, setView],
  );

  const t = q.data;
  return (
    <div className="timeline-view" data-testid="timeline-view">
      <section className="panel">
        <div className="panel-head">
          <h2>Timeline</h2>
          <span className="muted mono" data-testid="timeline-window">
            {formatAbsTime(v0)} → {formatAbsTime(v1)} ({formatNs(v1 - v0)})
            {t?.bucket_ns ? ` · 1 px = ${formatNs(t.bucket_ns)}` : ''}
          </span>
          <span className="tabs-spacer" />
          <button className="btn small" onClick={() => setWindow(zoomWindow(v0, v1, 0.5, (v0 + v1) / 2, lo, hi))} title="Zoom in (W)">
            +
          </button>
          <button className="btn small" onClick={() => setWindow(zoomWindow(v0, v1, 2, (v0 + v1) / 2, lo, hi))} title="Zoom out (S)">
            −
          </button>
          {selection && (
            <button className="btn small" onClick={() => setWindow(selection)} data-testid="zoom-to-selection">
              Zoom to selection
            </button>
          )}
          <button className="btn small" onClick={() => setView({ v0: null, v1: null }, { replace: true })} disabled={view.v0 === null}>
            Whole analysis
          </button>
        </div>
        <p className="muted hint">
          Wheel or <kbd>W</kbd>/<kbd>S</kbd> to zoom, <kbd>A</kbd>/<kbd>D</kbd> to pan, drag to select a time range (every table,
          heatmap and list of this analysis follows it), click an item for the events behind it.
        </p>
        <Legend />
        {q.isPending && <Loading what="timeline" />}
        {q.isError && <ErrorBox title="Could not load the timeline." error={q.error} />}
        {t && layout && option && (
          <div className="timeline-body">
            <div className="timeline-labels" style={{ width: LABELS_W, height: layout.height + GRID_TOP + 26 }}>
              {layout.headers.map((h) => (
                <div key={`h${h.y}`} className="timeline-header" style={{ top: GRID_TOP + h.y }}>
                  {h.label}
                </div>
              ))}
              {layout.lanes.map((b) => (
                <div
                  key={b.lane.id}
                  className={`timeline-label kind-${b.lane.kind}`}
                  style={{ top: GRID_TOP + b.y, height: b.h }}
                  title={`${b.lane.label}: ${b.lane.why}`}
                  data-lane={b.lane.id}
                >
                  {b.lane.label}
                  {b.lane.counter && <span className="muted"> · ≤{b.lane.counter.max} in flight</span>}
                </div>
              ))}
            </div>
            <div
              ref={box}
              className="timeline-plot"
              onMouseDown={onMouseDown}
              onMouseMove={onMouseMove}
              onMouseUp={onMouseUp}
              onMouseLeave={() => setDrag(null)}
              style={{ position: 'relative' }}
            >
              <EChart option={option} onEvents={events} height={layout.height + GRID_TOP + 26} ariaLabel="Analysis timeline" className="timeline-chart" />
              {drag && Math.abs(drag.to - drag.from) > 0 && (
                <div
                  className="timeline-drag"
                  style={{
                    left: GRID_LEFT + ((Math.min(drag.from, drag.to) - v0) / (v1 - v0)) * plotW(),
                    width: (Math.abs(drag.to - drag.from) / (v1 - v0)) * plotW(),
                  }}
                />
              )}
            </div>
          </div>
        )}
        {t && (
          <div className="timeline-foot muted">
            {formatCount(t.lanes.length)} of {formatCount(t.total_lanes)} lanes with something in this window
            {t.total_lanes > t.lanes.length && (
              <button className="btn small" onClick={() => setView({ tlN: Math.min(200, view.tlN + 40) })}>
                Show {Math.min(40, t.total_lanes - t.lanes.length)} more
              </button>
            )}
            {' · '}
            {formatCount(t.arrows.length)} chain arrows · {formatCount(t.marks.length)} print markers
          </div>
        )}
      </section>
      {selected && <SelectedItem item={selected} />}
    </div>
  );
}

function findSelected(items: Item[], sel: { sourceId: number; line: number } | null): Item | null {
  if (!sel) return null;
  const hit = (it: Item) =>
    (it.kind === 'segment' && it.seg.source_id === sel.sourceId && it.seg.line === sel.line) ||
    (it.kind === 'mark' && it.mark.source_id === sel.sourceId && it.mark.line === sel.line);
  // prefer a wait or a block phase over the scheduler state that began on the same line
  return items.find((it) => hit(it) && it.kind === 'segment' && it.seg.track !== 'state') ?? items.find(hit) ?? null;
}

function SelectedItem({ item }: { item: Item }) {
  const [, setView] = useViewState();
  if (item.kind === 'mark') {
    const m = item.mark;
    return (
      <section className="panel" data-testid="timeline-selected">
        <h3>print marker</h3>
        <p className="mono">{m.text}</p>
        <p className="muted">
          {m.comm} ({m.pid}) at {formatAbsTime(m.t_ns)} · source {m.source_id}, line {m.line}
        </p>
      </section>
    );
  }
  if (item.kind !== 'segment') return null;
  const { lane, seg } = item;
  const block = seg.track === 'queued' || seg.track === 'service';
  return (
    <section className="panel" data-testid="timeline-selected">
      <div className="panel-head">
        <h3>
          {lane.label}: {seg.track === 'call' ? `${seg.state}()` : seg.track === 'wait' ? `wait in ${seg.state}` : seg.state}
        </h3>
        <button className="btn small" onClick={() => setView({ tlSel: null })} aria-label="Close">
          ×
        </button>
      </div>
      <table className="grid compact">
        <tbody>
          <tr>
            <th>From → to (shown)</th>
            <td className="mono">
              {formatAbsTime(seg.t0_ns)} → {formatAbsTime(seg.t1_ns)} ({formatNs(seg.t1_ns - seg.t0_ns)})
            </td>
          </tr>
          <tr>
            <th>{seg.n > 1 ? 'Merged here' : 'Segments'}</th>
            <td>
              {formatCount(seg.n)}
              {seg.n > 1 && <span className="muted"> (shorter than a pixel each, drawn as one; zoom in to separate them)</span>}
            </td>
          </tr>
          <tr>
            <th>{seg.n > 1 ? 'Longest' : 'Duration'}</th>
            <td>{formatNs(seg.max_ns)}</td>
          </tr>
          <tr>
            <th>Behind it</th>
            <td className="mono">
              source {seg.source_id}, line {seg.line}
            </td>
          </tr>
        </tbody>
      </table>
      <div className="actions">
        {block && (
          <button className="btn" onClick={() => setView({ tab: 'dispatch', req: { sourceId: seg.source_id, line: seg.line } })}>
            Open the request
          </button>
        )}
        {seg.track === 'wait' && (
          <button className="btn" onClick={() => setView({ tab: 'stalls', lock: seg.state })}>
            Waits on {seg.state}
          </button>
        )}
        <button className="btn" onClick={() => setView({ t0: seg.t0_ns, t1: Math.max(seg.t1_ns, seg.t0_ns + 1) })}>
          Select its time range
        </button>
      </div>
    </section>
  );
}

function Legend() {
  return (
    <div className="legend-row muted">
      {(['running', 'runnable', 'blocked'] as const).map((s) => (
        <span key={s}>
          <span className="swatch" style={{ background: STATE_COLORS[s] }} /> {s}
        </span>
      ))}
      <span>
        <span className="swatch" style={{ background: 'hsl(200,55%,58%)' }} /> wait / call (colour = lock or function)
      </span>
      <span>
        <span className="swatch" style={{ background: STATE_COLORS.queued }} /> I→D queued
      </span>
      <span>
        <span className="swatch" style={{ background: STATE_COLORS.service }} /> D→C service
      </span>
      <span>— requests in flight</span>
      {Object.entries(RELATION_COLORS).map(([k, c]) => (
        <span key={k}>
          <span className="swatch" style={{ background: c }} /> {k.replace('_', ' ')}
        </span>
      ))}
      <span>
        <span className="swatch" style={{ background: '#b99cf0' }} /> offcputime window
      </span>
    </div>
  );
}
