import { defineConfig } from 'vitest/config';
import react from '@vitejs/plugin-react';

// The backend (stallscope serve) serves frontend/dist and the API on the same origin.
// In `npm run dev` the API is proxied to a locally running backend.
export default defineConfig({
  plugins: [react()],
  server: {
    proxy: { '/api': process.env.STALLSCOPE_API ?? 'http://127.0.0.1:8000' },
  },
  build: { outDir: 'dist', sourcemap: true, chunkSizeWarningLimit: 1200 },
  test: { include: ['src/**/*.test.ts'], environment: 'node' },
});
