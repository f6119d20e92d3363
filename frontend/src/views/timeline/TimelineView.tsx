import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import type { AnalysisDetail } from '../../api/types';
import { useTimeline } from '../../api/queries';
import { TIMELINE_WIDTH_PX, timelineWindow } from '../../api/tabQueries';
import { GRID, chainOfSegment, keepLanesOutside, panWindow, timelineItems, timelineLayout, zoomWindow, type Item, type Timeline, type TimelineLane, type TimelineOptions } from '../../charts/timeline';
import { niceStep } from '../../charts/timeAxis';
import { formatInstant } from '../../charts/timeAxis';
import { ErrorBox, Loading } from '../../components/Status';
import { formatCount, formatName, formatNs } from '../../lib/format';
import { useViewState } from '../../state/useViewState';
import { Cursor, Measure, RULER_H, Ruler, type Geometry } from './Ruler';
import { Legend, SelectedItem } from './SelectedItem';
import { TimelineCanvas } from './TimelineCanvas';
import { useRevealSlice } from './revealSlice';
import { useTimeBase } from '../../lib/timeBase';

const GRID_LEFT = GRID.left;
const GRID_RIGHT = GRID.right;
const GRID_TOP = GRID.top;
const GRID_BOTTOM = GRID.bottom;
const LABELS_W = 240;
const MAX_LANES = 200; // the route's max_lanes at most

/** The analysis on one time axis, as Perfetto's and KernelShark's: a track tree (groups fold, lanes pin to the top,
 * a search), wheel or W/S zoom, A/D pan, drag to select a time range (every view of the analysis follows it),
 * Shift+drag or two clicks on the ruler to measure, M to measure the selected slice, F to fit it, Esc to clear.
 * Window, selection, measurement and tree are in the URL. */
export function TimelineView({ analysis }: { analysis: AnalysisDetail }) {
  const [view, setView] = useViewState();
  const lo = analysis.t_min_ns ?? 0;
  const hi = Math.max(analysis.t_max_ns ?? lo + 1, lo + 1);
  const v0 = view.v0 ?? lo;
  // the page's time base: the ruler, the pointer and the tooltips from the analysis' start, or on the trace's clock
  const time = useTimeBase();
  const origin = time.absolute ? 0 : lo;
  const v1 = view.v1 ?? hi;
  const box = useRef<HTMLDivElement>(null);
  // the pixels the window is asked for: TIMELINE_WIDTH_PX (what main.tsx asked before the page was laid out),
  // asked again only when the plot is much wider or narrower (within 20 % the drawing is the same: items are
  // drawn at their own times, at least a pixel wide)
  const [width, setWidth] = useState(TIMELINE_WIDTH_PX);
  const [plotPx, setPlotPx] = useState(TIMELINE_WIDTH_PX); // the plot's width, exactly (the ruler's)
  const [plotShown, setPlotShown] = useState(false); // the plot (box) is there once a timeline is
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const ro = new ResizeObserver(() => {
      setPlotPx(Math.max(1, el.clientWidth - GRID_LEFT - GRID_RIGHT));
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
  const [want0, want1] = view.v0 !== null || !spans ? [v0, v1] : [null, null];
  const [asked, setAsked] = useState<[number | null, number | null]>([want0, want1]);
  useEffect(() => {
    const t = setTimeout(() => setAsked((a) => (a[0] === want0 && a[1] === want1 ? a : [want0, want1])), 120); // same: no render
    return () => clearTimeout(t);
  }, [want0, want1]);
  // a search looks among the lanes the route ranks (up to its 200), not only the first view's: a lane it finds may
  // have been ranked out of the first 40
  const ask = timelineWindow(view, width);
  const q = useTimeline(analysis.id, { ...ask, v0: asked[0], v1: asked[1], maxLanes: view.tlQ ? MAX_LANES : ask.maxLanes });

  const names = useMemo(() => new Map(analysis.sources.map((s) => [s.id, `${formatName(s)} · ${s.filename}`])), [analysis.sources]);
  // the lanes of a source the window has left stay, empty (keepLanesOutside): the previous response's, per analysis
  const sourceSpans = useMemo(
    () =>
      new Map(
        analysis.sources.flatMap((s) =>
          s.t_min_ns === null ? [] : [[s.id, [s.t_min_ns + s.clock_offset_ns, (s.t_max_ns ?? s.t_min_ns) + s.clock_offset_ns] as const] as const],
        ),
      ),
    [analysis.sources],
  );
  const shownBefore = useRef<{ id: string; lanes: TimelineLane[] }>({ id: analysis.id, lanes: [] });
  const data = useMemo(() => {
    if (!q.data) return undefined;
    const prev = shownBefore.current.id === analysis.id ? shownBefore.current.lanes : [];
    const lanes = q.data.t0_ns === null || q.data.t1_ns === null ? q.data.lanes : keepLanesOutside(prev, q.data.lanes, sourceSpans, q.data.t0_ns, q.data.t1_ns);
    return lanes === q.data.lanes ? q.data : { ...q.data, lanes };
  }, [q.data, sourceSpans, analysis.id]);
  useEffect(() => {
    if (data) shownBefore.current = { id: analysis.id, lanes: data.lanes };
  }, [data, analysis.id]);
  const layout = useMemo(
    () => (data ? timelineLayout(data, (id) => names.get(id) ?? `source ${id}`, { pinned: view.tlPin, folded: view.tlFold, query: view.tlQ }) : null),
    [data, names, view.tlPin, view.tlFold, view.tlQ],
  );
  if (!!layout !== plotShown) setPlotShown(!!layout);
  // the selected slice (by its source and line) and the chain it is part of: only that chain's arrows are drawn
  // (unless every chain's are asked for)
  const starts = useMemo(
    () => new Map(analysis.sources.flatMap((s) => (s.t_min_ns === null ? [] : [[s.id, s.t_min_ns + s.clock_offset_ns] as const]))),
    [analysis.sources],
  );
  const allItems = useMemo(() => (data && layout ? timelineItems(data, layout, { chain: null, all: false }, starts) : []), [data, layout, starts]);
  const selected = useMemo(() => findSelected(allItems, view.tlSel), [allItems, view.tlSel]);
  const chain = view.chain;
  const items = useMemo(
    () => (data && layout ? timelineItems(data, layout, { chain, all: view.tlArrows }, starts) : []),
    [data, layout, chain, view.tlArrows, starts],
  );
  useRevealSlice(box, layout, selected, view.tlSel ? `${view.tlSel.sourceId}:${view.tlSel.line}` : null);
  const selIndex = useMemo(() => {
    if (!selected || selected.kind !== 'segment') return null;
    const i = items.findIndex((it) => it.kind === 'segment' && it.seg === selected.seg);
    return i >= 0 ? i : null;
  }, [items, selected]);
  const { t0: sel0, t1: sel1 } = view;
  const selection: [number, number] | null = sel0 !== null && sel1 !== null ? [sel0, sel1] : null;
  const tickStep = niceStep(v1 - v0, Math.max(2, Math.floor(plotPx / 130)));
  const options = useMemo<TimelineOptions>(
    () => ({ v0, v1, selection: sel0 !== null && sel1 !== null ? [sel0, sel1] : null, origin, tickStep, selected: selIndex, time }),
    [v0, v1, sel0, sel1, origin, tickStep, selIndex, time],
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

  // the span the keys M and F act on: the selected slice, else the analysis-wide time range
  const focus: [number, number] | null =
    selected?.kind === 'segment' ? [selected.seg.t0_ns, Math.max(selected.seg.t1_ns, selected.seg.t0_ns + 1)] : selected?.kind === 'mark' ? [selected.mark.t_ns, selected.mark.t_ns + 1] : selection;
  const [focus0, focus1] = focus ?? [null, null];

  // keyboard as in Perfetto: W/S zoom around the centre, A/D pan, M measure the selection, F fit it, Esc clear
  const { tlMark, tlSel, chain: viewChain } = view;
  useEffect(() => {
    const focus: [number, number] | null = focus0 !== null && focus1 !== null ? [focus0, focus1] : null;
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
      else if (k === 'm' && focus) setView({ tlMark: focus }, { replace: true });
      else if (k === 'f' && focus) setWindow(fitWindow(focus, lo, hi));
      else if (k === 'escape' && (tlMark || tlSel || viewChain !== null)) setView({ tlMark: null, tlSel: null, chain: null });
      else return;
      e.preventDefault();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [v0, v1, lo, hi, setWindow, setView, focus0, focus1, tlMark, tlSel, viewChain]);

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
  }, [v0, v1, lo, hi, setWindow, plotShown]);

  // drag: select a time range; with Shift, measure it. A click on the ruler places a mark (two measure).
  const [drag, setDrag] = useState<{ from: number; to: number; x0: number; measure: boolean } | null>(null);
  const onMouseDown = (e: React.MouseEvent) => {
    if (e.button !== 0) return;
    const ns = toNs(e.clientX);
    setDrag({ from: ns, to: ns, x0: e.clientX, measure: e.shiftKey });
  };
  const onMouseMove = (e: React.MouseEvent) => {
    if (drag) setDrag({ ...drag, to: toNs(e.clientX) });
  };
  const onMouseUp = (e: React.MouseEvent) => {
    if (!drag) return;
    const a = Math.min(drag.from, drag.to);
    const b = Math.max(drag.from, drag.to);
    if (Math.abs(e.clientX - drag.x0) > 5) setView(drag.measure ? { tlMark: [a, b] } : { t0: a, t1: b });
    else if ((e.target as HTMLElement).closest('.timeline-ruler')) {
      const m = view.tlMark;
      setView({ tlMark: m && m[1] === null ? [m[0], drag.from] : [drag.from, null] }, { replace: true });
    }
    setDrag(null);
  };

  const arrowsOfWindow = data?.arrows;
  const pick = useCallback(
    (it: Item) => {
      if (it.kind === 'segment') {
        const c = arrowsOfWindow ? chainOfSegment(arrowsOfWindow, it.lane, it.seg) : null;
        setView({ tlSel: { sourceId: it.seg.source_id, line: it.seg.line }, chain: c });
      } else if (it.kind === 'arrow') setView({ chain: it.arrow.chain_id, tlSel: null });
      else if (it.kind === 'mark') setView({ tlSel: { sourceId: it.mark.source_id, line: it.mark.line } });
      else if (it.kind === 'band') setView({ tab: 'offcpu' });
    },
    [setView, arrowsOfWindow],
  );

  const togglePin = (id: string) => setView({ tlPin: view.tlPin.includes(id) ? view.tlPin.filter((x) => x !== id) : [...view.tlPin, id] });
  const toggleFold = (key: string) => setView({ tlFold: view.tlFold.includes(key) ? view.tlFold.filter((x) => x !== key) : [...view.tlFold, key] }, { replace: true });
  const g: Geometry = { v0, v1, left: GRID_LEFT, width: plotPx };
  const chartH = (layout?.height ?? 40) + GRID_TOP + GRID_BOTTOM;
  const mark = view.tlMark;

  const t = data;
  return (
    <div className="timeline-view" data-testid="timeline-view">
      <section className="panel">
        <div className="panel-head">
          <h2>Timeline</h2>
          <span className="muted mono" data-testid="timeline-window">
            {formatInstant(v0, v1 - v0, time)} → {formatInstant(v1, v1 - v0, time)} ({formatNs(v1 - v0)})
            {t?.bucket_ns ? ` · 1 px = ${formatNs(t.bucket_ns)}` : ''}
          </span>
          {mark && (
            <span className="chip" data-testid="measure">
              {mark[1] === null ? `mark at ${formatInstant(mark[0], v1 - v0, time)} · click the ruler again to measure` : `Δt ${formatNs(Math.abs(mark[1] - mark[0]))}`}
              <button aria-label="Clear the measurement" onClick={() => setView({ tlMark: null })}>
                ×
              </button>
            </span>
          )}
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
          Wheel or <kbd>W</kbd>/<kbd>S</kbd> zoom, <kbd>A</kbd>/<kbd>D</kbd> pan · click a slice for its details, <kbd>F</kbd> to fit it,{' '}
          <kbd>M</kbd> to measure it · drag to select a time range (every view follows it) · <kbd>Shift</kbd>+drag, or click the ruler twice,
          to measure · <kbd>Esc</kbd> clears
        </p>
        <Legend arrowsAll={view.tlArrows} onArrows={(all) => setView({ tlArrows: all }, { replace: true })} />
        <div className="track-tools">
          <LaneSearch value={view.tlQ} onChange={(v) => setView({ tlQ: v }, { replace: true })} />
          {view.tlPin.length > 0 && (
            <button className="btn small" onClick={() => setView({ tlPin: [] })}>
              Unpin all ({view.tlPin.length})
            </button>
          )}
        </div>
        {q.isPending && <Loading what="timeline" />}
        {q.isError && <ErrorBox title="Could not load the timeline." error={q.error} />}
        {t && layout && (
          <div className="timeline-body">
            <div className="timeline-labels" style={{ width: LABELS_W, height: chartH + RULER_H }} data-testid="track-tree">
              {layout.headers.map((h) => (
                <button
                  key={`h${h.key}`}
                  className={`timeline-header${h.folded ? ' folded' : ''}${h.nested ? ' nested' : ''}`}
                  style={{ top: RULER_H + GRID_TOP + h.y }}
                  onClick={() => toggleFold(h.key)}
                  aria-expanded={!h.folded}
                  title={`${h.title ?? h.label} · click to ${h.folded ? 'unfold' : 'fold'}`}
                >
                  {h.folded ? '▸' : '▾'} {h.label} <span className="muted">({h.lanes})</span>
                </button>
              ))}
              {layout.lanes.map((b) => (
                <div
                  key={b.lane.id}
                  className={`timeline-label kind-${b.lane.kind}${b.nested ? ' nested' : ''}${b.lane.outside ? ' outside' : ''}`}
                  style={{ top: RULER_H + GRID_TOP + b.y, height: b.h }}
                  title={`${b.lane.label}: ${b.lane.why}`}
                  data-lane={b.lane.id}
                >
                  <button className={`pin${b.pinned ? ' on' : ''}`} onClick={() => togglePin(b.lane.id)} aria-label={b.pinned ? `Unpin ${b.lane.label}` : `Pin ${b.lane.label} to the top`} title={b.pinned ? 'Unpin' : 'Pin to the top'} />
                  <span className="lane-name">
                    {b.lane.label}
                    {b.lane.counter && <span className="muted"> · ≤{b.lane.counter.max} in flight</span>}
                  </span>
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
              <Ruler g={g} origin={origin} absolute={time.absolute} right={GRID_LEFT + plotPx + GRID_RIGHT} />
              <TimelineCanvas layout={layout} items={items} options={options} onPick={pick} ariaLabel="Analysis timeline" />
              {mark && <Measure g={g} mark={mark} />}
              <Cursor box={box} g={g} time={time} />
              {drag && Math.abs(drag.to - drag.from) > 0 && (
                <div
                  className={`timeline-drag${drag.measure ? ' measure' : ''}`}
                  style={{
                    left: GRID_LEFT + ((Math.min(drag.from, drag.to) - v0) / (v1 - v0)) * plotW(),
                    width: (Math.abs(drag.to - drag.from) / (v1 - v0)) * plotW(),
                  }}
                >
                  {drag.measure && <span className="measure-label">Δ {formatNs(Math.abs(drag.to - drag.from))}</span>}
                </div>
              )}
            </div>
          </div>
        )}
        {t && (
          <div className="timeline-foot muted">
            <HiddenLanes
              timeline={t}
              drawn={layout?.lanes.filter((b) => !b.lane.outside).length ?? 0}
              outside={layout?.lanes.filter((b) => b.lane.outside).length ?? 0}
              query={view.tlQ}
              canAsk={view.tlN < MAX_LANES && !view.tlQ}
              onMore={() => setView({ tlN: Math.min(MAX_LANES, view.tlN + 40) })}
            />
            {' · '}
            {view.tlArrows ? `${formatCount(t.arrows.length)} chain arrows` : `chain arrows: ${chain !== null ? `chain #${chain}'s` : 'click a wait or tick “every chain’s arrows”'}`} ·{' '}
            {formatCount(t.marks.length)} print markers
          </div>
        )}
      </section>
      {layout && t && <SelectedItem item={selected} chain={chain} arrows={t.arrows} lanes={t.lanes} />}
    </div>
  );
}

/** What the footer says of the lanes not drawn: which (the CPUs, block devices and dump windows are always in a
 * response, so the tasks and processes ranked lower in this window) and how to bring them in. */
function HiddenLanes({ timeline: t, drawn, outside, query, canAsk, onMore }: { timeline: Timeline; drawn: number; outside: number; query: string | null; canAsk: boolean; onMore: () => void }) {
  const hidden = t.total_lanes - t.lanes.filter((l) => !l.outside).length;
  return (
    <span data-testid="hidden-lanes">
      {formatCount(drawn)} of {formatCount(t.total_lanes)} lanes with something in this window{query ? ` match “${query}”` : ''}
      {outside > 0 && (
        <span data-testid="lanes-outside">
          {' · '}
          {formatCount(outside)} lane{outside === 1 ? '' : 's'} with no events in this window kept, empty (the window reaches past its source)
        </span>
      )}
      {hidden > 0 && (
        <>
          {' · '}
          <b>
            {formatCount(hidden)} task and process lane{hidden === 1 ? '' : 's'} hidden
          </b>{' '}
          (ranked after these in this window: tasks by time blocked, running and in calls, processes issuing I/O by their
          slowest phase; every CPU, device and dump window is shown):{' '}
          {canAsk && (
            <button className="btn small" onClick={onMore}>
              Show {formatCount(Math.min(40, hidden))} more
            </button>
          )}{' '}
          {query ? 'zoom in to rank the window’s lanes again' : 'or find one by name or pid above'}
        </>
      )}
    </span>
  );
}

/** The window that shows `span` with a margin of a tenth on each side, within [lo, hi]. */
export function fitWindow([a, b]: [number, number], lo: number, hi: number): [number, number] {
  const pad = Math.max((b - a) / 10, 25);
  return [Math.max(lo, Math.round(a - pad)), Math.min(hi, Math.round(b + pad))];
}

function LaneSearch({ value, onChange }: { value: string | null; onChange: (v: string | null) => void }) {
  const [draft, setDraft] = useState(value ?? '');
  useEffect(() => setDraft(value ?? ''), [value]);
  const changed = useRef(onChange); // the latest handler, called when the typing pauses
  useEffect(() => {
    changed.current = onChange;
  }, [onChange]);
  useEffect(() => {
    const t = setTimeout(() => (draft.trim() || null) !== value && changed.current(draft.trim() || null), 200);
    return () => clearTimeout(t);
  }, [draft, value]);
  return (
    <input
      className="text-input table-filter track-search"
      type="search"
      placeholder="find a track: name, pid, device…"
      aria-label="Find tracks"
      value={draft}
      onChange={(e) => setDraft(e.target.value)}
    />
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
