// The React app: its router and pages. Loaded by main.tsx once the page's requests have started.
import { StrictMode, Suspense, lazy } from 'react';
import { createRoot } from 'react-dom/client';
import { QueryClientProvider, type QueryClient } from '@tanstack/react-query';
import { BrowserRouter, Route, Routes } from 'react-router';
import { Layout } from './views/Layout';
import { HomePage } from './views/HomePage';
import { AnalysisPage } from './views/AnalysisPage';
import { NotFound } from './views/NotFound';
import { Loading } from './components/Status';

// the Compare page draws charts: a chunk of its own, with the charts' library, loaded when it is opened
const ComparePage = lazy(() => import('./views/compare/ComparePage').then((m) => ({ default: m.ComparePage })));

export function renderApp(queryClient: QueryClient): void {
  createRoot(document.getElementById('root')!).render(
    <StrictMode>
      <QueryClientProvider client={queryClient}>
        {/* The URL is the view state: a control bound to it (a checkbox, a sort) must show a click at once, so the
            router's updates are urgent, not transitions (under load a transition left a box unticked after its click) */}
        <BrowserRouter useTransitions={false}>
          <Routes>
            <Route element={<Layout />}>
              <Route index element={<HomePage />} />
              <Route path="a/:id" element={<AnalysisPage />} />
              <Route
                path="compare"
                element={
                  <Suspense fallback={<Loading what="comparison" />}>
                    <ComparePage />
                  </Suspense>
                }
              />
              <Route path="*" element={<NotFound />} />
            </Route>
          </Routes>
        </BrowserRouter>
      </QueryClientProvider>
    </StrictMode>,
  );
}
