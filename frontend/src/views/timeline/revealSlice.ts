// A slice selected from elsewhere (a wait's "Show on the timeline", a link) is scrolled into view: its lane could sit
// a thousand pixels down the track tree while its details showed in the drawer, as if the click had done nothing.
import { useEffect, useRef, type RefObject } from 'react';
import { GRID, segmentBand, type Item, type Layout } from '../../charts/timeline';
import { RULER_H } from './Ruler';

/** How far (px) to scroll so that the band [top, bottom] (viewport px) shows between `above` (the sticky ruler) and
 * `below` (the top of the drawer stuck to the window's bottom): 0 when it already does; else it is put at a third of
 * the room. */
export function scrollToShow(top: number, bottom: number, above: number, below: number): number {
  if (top >= above && bottom <= below) return 0;
  const room = Math.max(1, below - above);
  return Math.round(top - (above + Math.max(0, (room - (bottom - top)) / 3)));
}

/** Once per selection `key` (null: none), once its slice is laid out: the page scrolled so that the slice's row is
 * between the ruler and the drawer. A slice clicked in view does not move. */
export function useRevealSlice(plot: RefObject<HTMLDivElement | null>, layout: Layout | null, selected: Item | null, key: string | null): void {
  const shown = useRef<string | null>(null);
  useEffect(() => {
    if (key === null) {
      shown.current = null;
      return;
    }
    if (shown.current === key || !layout || !plot.current || selected?.kind !== 'segment') return;
    const lane = layout.byId.get(selected.lane.id);
    const canvas = plot.current.querySelector('.timeline-chart');
    if (!lane || !canvas) return;
    shown.current = key;
    const [top, h] = segmentBand(lane, selected.seg);
    const y = canvas.getBoundingClientRect().top + GRID.top + lane.y + top;
    const drawer = document.querySelector('[data-testid="timeline-selected"]');
    const below = drawer ? drawer.getBoundingClientRect().top : window.innerHeight;
    const dy = scrollToShow(y, y + h, RULER_H, Math.min(below, window.innerHeight));
    if (dy !== 0) window.scrollBy({ top: dy, behavior: 'instant' as ScrollBehavior });
  }, [plot, layout, selected, key]);
}
