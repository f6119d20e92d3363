// Each tab's view is a chunk of its own, loaded when the tab is shown (or as soon as the URL names it: main.tsx),
// so a page parses the code of its own tab only; the charts' library comes with the first tab that draws one.
import { useEffect, useState, type ComponentType } from 'react';
import type { Tab } from '../state/viewState';
import { ErrorBox, Loading } from '../components/Status';

/** A view loaded on demand: drawn at once if its code is already there (preloaded), else a "Loading" line until
 * it is, then the view (a plain state update: React.lazy's Suspense would hold the view back for up to 300 ms
 * after its fallback was shown, React's throttle of fallback reveals). */
function lazyView<P extends object>(what: string, load: () => Promise<ComponentType<P>>) {
  let loaded: ComponentType<P> | null = null;
  let loading: Promise<ComponentType<P>> | null = null;
  const get = () =>
    (loading ??= load().then(
      (c) => (loaded = c),
      (e) => {
        loading = null; // asked again by the next view that mounts
        throw e;
      },
    ));
  function View(props: P) {
    const [state, setState] = useState<{ view: ComponentType<P> | null; error: unknown }>(() => ({ view: loaded, error: null }));
    useEffect(() => {
      if (state.view || state.error) return;
      let live = true;
      get().then(
        (view) => live && setState({ view, error: null }),
        (error) => live && setState({ view: null, error }),
      );
      return () => {
        live = false;
      };
    }, [state]);
    if (state.error) return <ErrorBox title={`Could not load the ${what} view.`} error={state.error} />;
    return state.view ? <state.view {...props} /> : <Loading what={what} />;
  }
  return { View, preload: () => void get().catch(() => {}) }; // a failed load shows when the tab renders
}

const views = {
  stalls: lazyView('stalls', () => import('./stalls/StallsView').then((m) => m.StallsView)),
  timeline: lazyView('timeline', () => import('./timeline/TimelineView').then((m) => m.TimelineView)),
  dispatch: lazyView('dispatch', () => import('./dispatch/DispatchView').then((m) => m.DispatchView)),
  offcpu: lazyView('off-CPU', () => import('./offcpu/OffcpuView').then((m) => m.OffcpuView)),
  sources: lazyView('sources', () => import('./sources/SourcesView').then((m) => m.SourcesView)),
  sql: lazyView('SQL', () => import('./sql/SqlView').then((m) => m.SqlView)),
};
const _everyTab: Record<Tab, { preload: () => void }> = views; // a tab without its view fails to compile
void _everyTab;

/** Start loading a tab's code (once). */
export function preloadTab(tab: Tab): void {
  views[tab].preload();
}

export const StallsView = views.stalls.View;
export const TimelineView = views.timeline.View;
export const DispatchView = views.dispatch.View;
export const OffcpuView = views.offcpu.View;
export const SourcesView = views.sources.View;
export const SqlView = views.sql.View;
