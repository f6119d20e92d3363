// The timeline's ruler (ticks whose labels are distinct at every zoom), the pointer's time, and a measurement
// (two instants and the time between them), drawn in HTML over the plot.
import { useEffect, useState, type RefObject } from 'react';
import { formatInstant, labelFits, ticks } from '../../charts/timeAxis';
import { formatNs, type TimeBase } from '../../lib/format';

export const RULER_H = 24;

export type Geometry = { v0: number; v1: number; left: number; width: number }; // the window and the plot (px in the box)

export const xOf = (g: Geometry, ns: number) => g.left + ((ns - g.v0) / (g.v1 - g.v0)) * g.width;

/** Ticks every nice step, relative to `origin` (the analysis start; 0 and `absolute` on the trace's clock, written
 * without a sign), about one per 130 px; a label that would run past the ruler's right edge (`right`, px) is left out
 * (its line stays, its time in its tooltip). */
export function Ruler({ g, origin, absolute, right }: { g: Geometry; origin: number; absolute: boolean; right: number }) {
  const t = ticks(g.v0 - origin, g.v1 - origin, Math.max(2, Math.floor(g.width / 130)));
  if (absolute) t.labels = t.labels.map((l) => l.replace(/^\+/, ''));
  return (
    <div className="timeline-ruler" style={{ height: RULER_H }} data-testid="timeline-ticks" title="Click to place a mark: two marks measure the time between them">
      {t.at.map((v, i) => {
        const x = xOf(g, v + origin);
        const fits = labelFits(x, t.labels[i], right);
        return (
          <span key={v} className={`tick${fits ? '' : ' bare'}`} style={{ left: x }} title={fits ? undefined : t.labels[i]}>
            {fits ? t.labels[i] : ''}
          </span>
        );
      })}
    </div>
  );
}

/** The pointer's time: a line down the plot and its time in the ruler (its own state: moving the pointer redraws
 * nothing else). */
export function Cursor({ box, g, time }: { box: RefObject<HTMLDivElement | null>; g: Geometry; time: TimeBase }) {
  const [x, setX] = useState<number | null>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const move = (e: MouseEvent) => {
      const px = e.clientX - el.getBoundingClientRect().left;
      setX(px >= g.left && px <= g.left + g.width ? px : null);
    };
    const leave = () => setX(null);
    el.addEventListener('mousemove', move);
    el.addEventListener('mouseleave', leave);
    return () => {
      el.removeEventListener('mousemove', move);
      el.removeEventListener('mouseleave', leave);
    };
  }, [box, g.left, g.width]);
  if (x === null) return null;
  const ns = g.v0 + ((x - g.left) / g.width) * (g.v1 - g.v0);
  return (
    <>
      <div className="timeline-cursor" style={{ left: x }} />
      <span className="cursor-readout" data-testid="cursor-readout" style={{ left: x }}>
        {formatInstant(ns, g.v1 - g.v0, time)}
      </span>
    </>
  );
}

/** A measurement: its two instants as lines, the span between them shaded, Δt written above it. */
export function Measure({ g, mark }: { g: Geometry; mark: [number, number | null] }) {
  const [a, b] = mark;
  const xa = xOf(g, a);
  if (b === null) return <div className="timeline-mark" style={{ left: xa }} />;
  const [lo, hi] = a <= b ? [a, b] : [b, a];
  const x0 = Math.max(g.left, xOf(g, lo));
  const x1 = Math.min(g.left + g.width, xOf(g, hi));
  return (
    <>
      <div className="timeline-mark" style={{ left: xOf(g, lo) }} />
      <div className="timeline-mark" style={{ left: xOf(g, hi) }} />
      {x1 > x0 && <div className="timeline-measure" style={{ left: x0, width: x1 - x0 }} />}
      <span className="measure-label" style={{ left: Math.max(g.left, Math.min(g.left + g.width - 60, (x0 + x1) / 2)) }}>
        Δ {formatNs(hi - lo)}
      </span>
    </>
  );
}
