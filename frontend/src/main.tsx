// The entry, kept small: it starts what the address asks for, then loads the app. On an analysis page the
// analysis' request, its tab's first requests (api/tabQueries.ts) and its tab's code start at once, while the
// app (React, the router, the pages: ./App) and the charts' library load and compile beside them, instead of
// one after the other (the whole app, then the analysis, then the view's code, then the view's requests). The charts'
// library is preloaded too, except on the Timeline tab, which does not use it (lib/preloadCharts.ts).
import { QueryClient } from '@tanstack/react-query';
import { analysisQuery } from './api/queries';
import { analysisPageOf, prefetchAnalysisPage } from './api/tabQueries';
import { preloadTab } from './views/tabViews';
import { preloadCharts, wantsCharts } from './lib/preloadCharts';
import './styles.css';

const queryClient = new QueryClient({
  defaultOptions: { queries: { staleTime: 60_000, refetchOnWindowFocus: false } },
});

const page = analysisPageOf(window.location.pathname, window.location.search);
if (!page || wantsCharts(page.view.tab)) preloadCharts();
if (page) {
  prefetchAnalysisPage(queryClient, page.id, page.view);
  if (page.view.tab !== null) preloadTab(page.view.tab);
  else {
    // the analysis' default tab depends on its sources: its code and first requests start once the analysis is
    // there (and the page's module, in the app's chunk), not once the page has drawn that tab's view
    const { id, view } = page;
    void Promise.all([queryClient.fetchQuery(analysisQuery(id)), import('./views/AnalysisPage')]).then(
      ([analysis, { availableTabs, defaultTab }]) => {
        const tab = defaultTab(availableTabs(analysis));
        preloadTab(tab);
        prefetchAnalysisPage(queryClient, id, { ...view, tab });
      },
      () => {}, // the page shows the error
    );
  }
}

void import('./App').then(({ renderApp }) => renderApp(queryClient));
