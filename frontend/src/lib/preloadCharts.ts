// The charts' library (ECharts, ~0.6 MB) is preloaded beside the entry on the pages that draw its charts, and not on
// the Timeline tab (a canvas of its own): index.html names its chunks in a meta tag (vite.config.ts), and the entry
// asks for them here, as the modulepreload links index.html had for every page.
import type { Tab } from '../state/viewState';

/** Does a page of this tab (null: the analysis' default tab, not known yet, or a page without tabs) want the charts
 * early? Every tab but the Timeline draws ECharts charts, or may (the default tab is seldom the Timeline). */
export function wantsCharts(tab: Tab | null): boolean {
  return tab !== 'timeline';
}

/** Ask for the chunks named by index.html's `stallscope-charts` meta tag (each once). */
export function preloadCharts(doc: Document = document): void {
  const names = doc.querySelector('meta[name="stallscope-charts"]')?.getAttribute('content')?.split(' ').filter(Boolean) ?? [];
  for (const href of names) {
    if (doc.querySelector(`link[rel="modulepreload"][href="${href}"]`)) continue;
    const link = doc.createElement('link');
    link.rel = 'modulepreload';
    link.crossOrigin = '';
    link.href = href;
    doc.head.appendChild(link);
  }
}
