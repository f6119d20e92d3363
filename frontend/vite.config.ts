import { defineConfig, type Plugin } from 'vitest/config';
import react from '@vitejs/plugin-react';

/** The entry (src/main.tsx) is small: it starts the page's API requests, then imports the app (src/App.tsx);
 * each tab's view is a chunk of its own (src/views/tabViews.ts), and the charts' library (the chunk with
 * src/charts/EChart.tsx, ~0.6 MB) is shared by the tabs that draw ECharts charts. index.html asks for the app's chunk
 * beside the entry: it loads and compiles while the entry runs, not after it, nor next to the API requests on the
 * same server. The charts' chunks are named in a meta tag (`stallscope-charts`): the entry preloads them unless the
 * page is the Timeline tab, which draws on a canvas of its own and needs no ECharts (src/lib/preloadCharts.ts). */
const PRELOADED = ['/src/App.tsx'];
const CHARTS = ['/src/charts/EChart.tsx'];
function preloadChunks(): Plugin {
  return {
    name: 'stallscope:preload-chunks',
    apply: 'build',
    transformIndexHtml: {
      order: 'post',
      handler(_html, ctx) {
        const bundle = ctx.bundle ?? {};
        // a chunk holding one of `modules` and what it imports (the entry's own imports are preloaded by Vite)
        const chunksOf = (modules: string[], skip: Set<string>) => {
          const files = new Set<string>();
          const add = (name: string) => {
            const c = bundle[name];
            if (c?.type !== 'chunk' || c.isEntry || files.has(name) || skip.has(name)) return;
            files.add(name);
            c.imports.forEach(add);
          };
          for (const c of Object.values(bundle)) {
            if (c.type === 'chunk' && c.moduleIds.some((id) => modules.some((m) => id.endsWith(m)))) add(c.fileName);
          }
          return files;
        };
        const app = chunksOf(PRELOADED, new Set());
        const charts = chunksOf(CHARTS, app);
        return [
          ...[...app].map((f) => ({ tag: 'link', attrs: { rel: 'modulepreload', crossorigin: true, href: `/${f}` }, injectTo: 'head' as const })),
          { tag: 'meta', attrs: { name: 'stallscope-charts', content: [...charts].map((f) => `/${f}`).join(' ') }, injectTo: 'head' as const },
        ];
      },
    },
  };
}

/** The chunks of the libraries a page runs through at its first render (React DOM in the app's chunk, ECharts
 * and zrender in the charts') carry V8's compile hint `//# allFunctionsCalledOnLoad`: their functions are
 * compiled while the chunk streams in, off the main thread, instead of one by one on it when first called
 * (a cold timeline or Dispatch page: ~440 -> ~370 ms of main-thread CPU for React DOM's, ~100 ms more for the
 * charts' on the 2-core VM). Not the entry: it is run at once, and compiling its unused functions first only
 * delays it. */
const COMPILE_HINT = '//# allFunctionsCalledOnLoad\n';
function compileHintLibraries(): Plugin {
  return {
    name: 'stallscope:compile-hint-libraries',
    apply: 'build',
    enforce: 'post',
    generateBundle(_options, bundle) {
      for (const chunk of Object.values(bundle)) {
        if (chunk.type !== 'chunk' || chunk.isEntry) continue;
        if (!chunk.moduleIds.some((id) => /\/node_modules\/(echarts|zrender|react-dom)\//.test(id))) continue;
        chunk.code = COMPILE_HINT + chunk.code;
        // one more line on top: the source map's lines move down by one
        const map = bundle[`${chunk.fileName}.map`];
        if (map?.type === 'asset' && typeof map.source === 'string') {
          const m = JSON.parse(map.source);
          m.mappings = `;${m.mappings}`;
          map.source = JSON.stringify(m);
        }
        if (chunk.map) chunk.map.mappings = `;${chunk.map.mappings}`;
      }
    },
  };
}

// The backend (stallscope serve) serves frontend/dist and the API on the same origin.
// In `npm run dev` the API is proxied to a locally running backend.
export default defineConfig({
  plugins: [react(), preloadChunks(), compileHintLibraries()],
  server: {
    proxy: { '/api': process.env.STALLSCOPE_API ?? 'http://127.0.0.1:8000' },
  },
  build: { outDir: 'dist', sourcemap: true, chunkSizeWarningLimit: 1200 },
  test: { include: ['src/**/*.test.ts'], environment: 'node' },
});
