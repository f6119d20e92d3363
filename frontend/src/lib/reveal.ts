// Selecting something opens its details somewhere on the page: bring them into sight and flash them, so a click
// never looks as if nothing happened (the request detail of Dispatch sat ~1,300 px below the link that opened it).
import { useEffect, useRef, type RefObject } from 'react';

const SETTLE_MS = 1500; // charts and tables above the target load for a while after a link lands: follow them
const FLASH_MS = 1600;
const REVEALED = 'stallscope:revealed'; // a window event: a selection was brought into view

/** How far `r` is outside a viewport `vh` px tall: 0 when it is wholly in it, or when it is taller than the
 * viewport and fills it from its top. */
export function outOfView(r: { top: number; bottom: number }, vh: number): number {
  if (r.top >= 0 && r.bottom <= vh) return 0;
  if (r.bottom - r.top > vh && r.top >= 0 && r.top < vh * 0.35) return 0; // tall: its head is in view
  return r.top < 0 ? -r.top : r.bottom - vh;
}

/** Scroll `el` into view (its top, when it is taller than the viewport) unless it is already there. */
export function reveal(el: HTMLElement): void {
  const r = el.getBoundingClientRect();
  const vh = window.innerHeight || document.documentElement.clientHeight;
  if (outOfView(r, vh) === 0) return;
  el.scrollIntoView({ block: r.height > vh * 0.9 ? 'start' : 'nearest', behavior: 'instant' as ScrollBehavior });
}

/** Flash `el` (the `revealed` class, an outline that fades). */
export function flash(el: HTMLElement): void {
  el.classList.remove('revealed');
  void el.offsetWidth; // restart the animation
  el.classList.add('revealed');
  window.setTimeout(() => el.classList.remove('revealed'), FLASH_MS);
}

/** A ref for the panel that shows the selection `key` (null: nothing selected): each time the key changes to a
 * selection, and once `ready` (its content is there), the panel is brought into view and flashed; while the page
 * above it settles (charts loading) it is kept in view. */
export function useReveal<T extends HTMLElement>(key: string | null, ready = true): RefObject<T | null> {
  const ref = useRef<T | null>(null);
  const shown = useRef<string | null>(null);
  useEffect(() => {
    const el = ref.current;
    if (key === null) {
      shown.current = null;
      return;
    }
    if (!el || !ready || shown.current === key) return;
    shown.current = key;
    reveal(el);
    flash(el);
    // the latest selection shown wins: one revealed before it stops following (a heatmap cell selects a wait of the
    // table above and lists the cell's waits below: the list, shown once loaded, is what the click asked for)
    window.dispatchEvent(new CustomEvent(REVEALED, { detail: el }));
    const until = performance.now() + SETTLE_MS;
    const ro = new ResizeObserver(() => {
      if (performance.now() > until) return ro.disconnect();
      if (ref.current) reveal(ref.current);
    });
    ro.observe(document.body);
    // a user who scrolls on their own is left alone
    const stop = () => ro.disconnect();
    const other = (e: Event) => (e as CustomEvent).detail !== el && stop();
    window.addEventListener('wheel', stop, { once: true, passive: true });
    window.addEventListener('keydown', stop, { once: true });
    window.addEventListener(REVEALED, other);
    const t = window.setTimeout(stop, SETTLE_MS);
    return () => {
      ro.disconnect();
      window.clearTimeout(t);
      window.removeEventListener('wheel', stop);
      window.removeEventListener('keydown', stop);
      window.removeEventListener(REVEALED, other);
    };
  }, [key, ready]);
  return ref;
}
