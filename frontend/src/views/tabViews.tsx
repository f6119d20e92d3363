// Each tab's view is a chunk of its own, loaded when the tab is shown (or as soon as the URL names it: main.tsx),
// so a page parses the code of its own tab only; the charts' library comes with the first tab that draws one.
import { lazy, useState, type ComponentType } from 'react';
import type { Tab } from '../state/viewState';

/** A view loaded on demand: drawn at once if its code is already there (preloaded), else through React.lazy
 * (suspending: the fallback is committed and laid out, then the view in another pass). Which of the two is
 * decided when the view mounts, so that a view is never mounted twice. */
function lazyView<P extends object>(load: () => Promise<ComponentType<P>>) {
  let loaded: ComponentType<P> | null = null;
  const get = () =>
    load().then((c) => {
      loaded = c;
      return { default: c };
    });
  const Lazy = lazy(get);
  function View(props: P) {
    const [Loaded] = useState(() => loaded);
    return Loaded ? <Loaded {...props} /> : <Lazy {...props} />;
  }
  return { View, preload: () => void get().catch(() => {}) }; // a failed load shows when the tab renders
}

const views = {
  stalls: lazyView(() => import('./stalls/StallsView').then((m) => m.StallsView)),
  timeline: lazyView(() => import('./timeline/TimelineView').then((m) => m.TimelineView)),
  dispatch: lazyView(() => import('./dispatch/DispatchView').then((m) => m.DispatchView)),
  offcpu: lazyView(() => import('./offcpu/OffcpuView').then((m) => m.OffcpuView)),
  sources: lazyView(() => import('./sources/SourcesView').then((m) => m.SourcesView)),
};
const _everyTab: Record<Tab, { preload: () => void }> = views; // a tab without its view fails to compile
void _everyTab;

/** Start loading a tab's code (the module system loads each once). */
export function preloadTab(tab: Tab): void {
  views[tab].preload();
}

export const StallsView = views.stalls.View;
export const TimelineView = views.timeline.View;
export const DispatchView = views.dispatch.View;
export const OffcpuView = views.offcpu.View;
export const SourcesView = views.sources.View;
