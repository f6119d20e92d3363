// The timeline's plot: timelineScene (charts/timeline.ts) painted on a 2D canvas, its tooltips and clicks found by
// sceneHit. Its container says data-ready="1" once the scene in view is painted (as EChart's do: see charts/ready.ts).
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react';
import { GRID, sceneHit, timelineScene, type Item, type Layout, type Scene, type TimelineOptions } from '../../charts/timeline';
import { C, FONT } from '../../charts/theme';

type Props = {
  layout: Layout;
  items: Item[];
  options: TimelineOptions;
  /** A click on an item (not at the end of a drag). */
  onPick: (item: Item) => void;
  ariaLabel: string;
};

export function TimelineCanvas({ layout, items, options, onPick, ariaLabel }: Props) {
  const box = useRef<HTMLDivElement>(null);
  const canvas = useRef<HTMLCanvasElement>(null);
  const tip = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(0);
  useLayoutEffect(() => {
    const el = box.current!;
    setWidth(el.clientWidth);
    const ro = new ResizeObserver(() => setWidth(el.clientWidth));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  const scene = useMemo(() => (width > 0 ? timelineScene(layout, items, options, width) : null), [layout, items, options, width]);
  useLayoutEffect(() => {
    const el = box.current!;
    if (!scene) {
      el.dataset.ready = '0';
      return;
    }
    paint(canvas.current!, scene);
    el.dataset.ready = '1';
  }, [scene]);
  useEffect(() => {
    if (tip.current) tip.current.style.display = 'none'; // what it described may be gone
  }, [scene]);

  const down = useRef<{ x: number; y: number } | null>(null);
  const local = (e: React.MouseEvent) => {
    const r = box.current!.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  };
  const onMove = (e: React.MouseEvent) => {
    const t = tip.current;
    if (!scene || !t) return;
    const p = local(e);
    const hit = sceneHit(scene, items, p.x, p.y);
    canvas.current!.style.cursor = hit && hit.item >= 0 ? 'pointer' : '';
    if (!hit) {
      t.style.display = 'none';
      return;
    }
    t.innerHTML = hit.html; // built with the escaping `html` tag (charts/html.ts)
    t.style.display = 'block';
    // beside the pointer, kept inside the plot
    const w = t.offsetWidth;
    const h = t.offsetHeight;
    const left = p.x + 14 + w > scene.width ? Math.max(0, p.x - 14 - w) : p.x + 14;
    const top = p.y + 14 + h > scene.height ? Math.max(0, p.y - 14 - h) : p.y + 14;
    t.style.transform = `translate(${Math.round(left)}px, ${Math.round(top)}px)`;
  };
  const onLeave = () => {
    if (tip.current) tip.current.style.display = 'none';
  };
  const onClick = (e: React.MouseEvent) => {
    const p = local(e);
    const d = down.current;
    if (!scene || (d && Math.hypot(p.x - d.x, p.y - d.y) > 5)) return; // the end of a drag
    const hit = sceneHit(scene, items, p.x, p.y);
    if (hit && hit.item >= 0) onPick(items[hit.item]);
  };

  return (
    <div
      ref={box}
      className="timeline-chart"
      role="img"
      aria-label={ariaLabel}
      style={{ position: 'relative', width: '100%', height: layout.height + GRID.top + GRID.bottom }}
      onMouseMove={onMove}
      onMouseLeave={onLeave}
      onMouseDown={(e) => (down.current = local(e))}
      onClick={onClick}
    >
      <canvas ref={canvas} style={{ display: 'block' }} />
      <div ref={tip} className="timeline-tooltip" style={TIP} />
    </div>
  );
}

const TIP: React.CSSProperties = {
  display: 'none',
  position: 'absolute',
  left: 0,
  top: 0,
  zIndex: 5,
  pointerEvents: 'none',
  background: '#1b2330',
  border: '1px solid #344154',
  borderRadius: 4,
  padding: '6px 9px',
  color: C.text,
  font: `12px/1.5 ${FONT}`,
  whiteSpace: 'nowrap',
  boxShadow: '0 4px 14px rgba(0,0,0,.4)',
};

/** Paints a scene at the device's pixel ratio. */
export function paint(el: HTMLCanvasElement, s: Scene): void {
  const dpr = window.devicePixelRatio || 1;
  el.width = Math.round(s.width * dpr);
  el.height = Math.round(s.height * dpr);
  el.style.width = `${s.width}px`;
  el.style.height = `${s.height}px`;
  const ctx = el.getContext('2d');
  if (!ctx) return;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, s.width, s.height);
  const { plot } = s;
  // grid lines (the ruler's ticks) and the axis line under the plot
  ctx.strokeStyle = C.grid;
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (const gx of s.grid) {
    const x = Math.round(gx) + 0.5;
    ctx.moveTo(x, plot.y);
    ctx.lineTo(x, plot.y + plot.h);
  }
  ctx.stroke();
  ctx.strokeStyle = C.axis;
  ctx.beginPath();
  ctx.moveTo(plot.x, plot.y + plot.h + 0.5);
  ctx.lineTo(plot.x + plot.w, plot.y + plot.h + 0.5);
  ctx.stroke();

  ctx.save();
  ctx.beginPath();
  ctx.rect(plot.x, plot.y, plot.w, plot.h);
  ctx.clip();
  if (s.selection) rect(ctx, s.selection);
  // runs of rects of one fill and opacity share a path (most of a lane's slices): one fill call per run
  let run: typeof s.rects = [];
  const flush = () => {
    if (!run.length) return;
    ctx.globalAlpha = run[0].opacity;
    ctx.fillStyle = run[0].fill;
    ctx.beginPath();
    for (const r of run) ctx.rect(r.x, r.y, r.w, r.h);
    ctx.fill();
    ctx.globalAlpha = 1;
    run = [];
  };
  for (const r of s.rects) {
    if (r.stroke) {
      flush();
      rect(ctx, r);
    } else {
      if (run.length && (run[0].fill !== r.fill || run[0].opacity !== r.opacity)) flush();
      run.push(r);
    }
  }
  flush();
  if (s.labels.length) {
    ctx.font = `10px ${FONT}`;
    ctx.fillStyle = '#0d1117';
    ctx.textBaseline = 'middle';
    for (const l of s.labels) {
      const text = elide(ctx, l.text, l.w);
      if (text) ctx.fillText(text, l.x, l.y);
    }
  }
  for (const a of s.arrows) {
    line(ctx, a.line);
    polygon(ctx, a.head.points, a.head.fill);
  }
  ctx.restore();
  for (const m of s.marks) {
    line(ctx, m.line);
    polygon(ctx, m.head.points, m.head.fill);
  }
  // requests in flight: a step line across the device's lane
  ctx.strokeStyle = '#e6edf3';
  ctx.globalAlpha = 0.7;
  ctx.lineWidth = 1;
  for (const st of s.steps) {
    ctx.beginPath();
    st.points.forEach(([x, y], i) => {
      if (i === 0) ctx.moveTo(x, y);
      else {
        ctx.lineTo(x, st.points[i - 1][1]);
        ctx.lineTo(x, y);
      }
    });
    ctx.stroke();
  }
  ctx.globalAlpha = 1;
}

function rect(ctx: CanvasRenderingContext2D, r: Scene['rects'][number]): void {
  ctx.globalAlpha = r.opacity;
  ctx.fillStyle = r.fill;
  ctx.fillRect(r.x, r.y, r.w, r.h);
  ctx.globalAlpha = 1;
  if (r.stroke) {
    ctx.strokeStyle = r.stroke;
    ctx.lineWidth = r.lineWidth ?? 1;
    ctx.setLineDash(r.dash ?? []);
    ctx.strokeRect(r.x, r.y, r.w, r.h);
    ctx.setLineDash([]);
  }
}

function line(ctx: CanvasRenderingContext2D, l: Scene['arrows'][number]['line']): void {
  ctx.globalAlpha = l.opacity ?? 1;
  ctx.strokeStyle = l.color;
  ctx.lineWidth = l.width;
  ctx.setLineDash(l.dash ?? []);
  ctx.beginPath();
  ctx.moveTo(l.x1, l.y1);
  ctx.lineTo(l.x2, l.y2);
  ctx.stroke();
  ctx.setLineDash([]);
  ctx.globalAlpha = 1;
}

function polygon(ctx: CanvasRenderingContext2D, points: [number, number][], fill: string): void {
  ctx.fillStyle = fill;
  ctx.beginPath();
  points.forEach(([x, y], i) => (i ? ctx.lineTo(x, y) : ctx.moveTo(x, y)));
  ctx.closePath();
  ctx.fill();
}

/** The text cut to `w` px with an ellipsis ('' when not even one character and the ellipsis fit). */
function elide(ctx: CanvasRenderingContext2D, text: string, w: number): string {
  if (ctx.measureText(text).width <= w) return text;
  let lo = 0;
  let hi = text.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (ctx.measureText(`${text.slice(0, mid)}…`).width <= w) lo = mid;
    else hi = mid - 1;
  }
  return lo > 0 ? `${text.slice(0, lo)}…` : '';
}
