// The entry, kept small: it starts what the address asks for, then loads the app. On an analysis page the
// analysis' request, its tab's first requests (api/tabQueries.ts) and its tab's code start at once, while the
// app (React, the router, the pages: ./App) and the charts' library load and compile beside them, instead of
// one after the other (the whole app, then the analysis, then the view's code, then the view's requests).
import { QueryClient } from '@tanstack/react-query';
import { analysisPageOf, prefetchAnalysisPage } from './api/tabQueries';
import { preloadTab } from './views/tabViews';
import './styles.css';

const queryClient = new QueryClient({
  defaultOptions: { queries: { staleTime: 60_000, refetchOnWindowFocus: false } },
});

const page = analysisPageOf(window.location.pathname, window.location.search);
if (page) {
  prefetchAnalysisPage(queryClient, page.id, page.view);
  if (page.view.tab !== null) preloadTab(page.view.tab);
}

void import('./App').then(({ renderApp }) => renderApp(queryClient));
