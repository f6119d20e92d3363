// Each tab's view is a chunk of its own, loaded when the tab is shown (or as soon as the URL names it: main.tsx),
// so a page parses the code of its own tab only; the charts' library comes with the first tab that draws one.
import { lazy } from 'react';
import type { Tab } from '../state/viewState';

const loaders = {
  stalls: () => import('./stalls/StallsView').then((m) => ({ default: m.StallsView })),
  timeline: () => import('./timeline/TimelineView').then((m) => ({ default: m.TimelineView })),
  dispatch: () => import('./dispatch/DispatchView').then((m) => ({ default: m.DispatchView })),
  offcpu: () => import('./offcpu/OffcpuView').then((m) => ({ default: m.OffcpuView })),
  sources: () => import('./sources/SourcesView').then((m) => ({ default: m.SourcesView })),
};
const _everyTab: Record<Tab, () => Promise<unknown>> = loaders; // a tab without its view fails to compile
void _everyTab;

/** Start loading a tab's code (the module system loads each once). */
export function preloadTab(tab: Tab): void {
  void loaders[tab]().catch(() => {}); // a failed load shows when the tab renders (lazy's own import)
}

export const StallsView = lazy(loaders.stalls);
export const TimelineView = lazy(loaders.timeline);
export const DispatchView = lazy(loaders.dispatch);
export const OffcpuView = lazy(loaders.offcpu);
export const SourcesView = lazy(loaders.sources);
