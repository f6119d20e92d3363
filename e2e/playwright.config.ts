import { defineConfig } from '@playwright/test';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// Drives the real app: the backend serves the built frontend (frontend/dist) and the API.
// Build first (`npm run test:e2e` at the repo root does). Each run gets a fresh database.
const REPO = path.resolve(__dirname, '..');
const PORT = Number(process.env.STALLSCOPE_E2E_PORT ?? 8765);
const CHROMIUM = JSON.parse(fs.readFileSync(path.join(__dirname, 'chromium.json'), 'utf8')) as { executablePath: string; args: string[] };
const dbDir = process.env.STALLSCOPE_E2E_DB_DIR ?? fs.mkdtempSync(path.join(os.tmpdir(), 'stallscope-e2e-'));
process.env.STALLSCOPE_E2E_DB_DIR = dbDir; // workers re-evaluate this file: keep one directory

export default defineConfig({
  testDir: './tests',
  timeout: 60_000,
  expect: { timeout: 10_000 },
  fullyParallel: false,
  workers: 1,
  retries: process.env.CI ? 1 : 0,
  forbidOnly: !!process.env.CI,
  // shared-skips.ts: one line for the tests skipped without ../shared/samples-public (tests/paths.ts: needsPublic)
  reporter: process.env.CI
    ? [['list'], ['html', { open: 'never' }], ['./shared-skips.ts']]
    : [['list'], ['./shared-skips.ts']],
  use: {
    baseURL: `http://127.0.0.1:${PORT}`,
    browserName: 'chromium',
    viewport: { width: 1440, height: 900 },
    trace: 'retain-on-failure',
    screenshot: 'only-on-failure',
    launchOptions: { executablePath: process.env.CHROMIUM_PATH ?? CHROMIUM.executablePath, args: CHROMIUM.args },
  },
  webServer: {
    command: `.venv/bin/stallscope serve --db ${JSON.stringify(path.join(dbDir, 'e2e.duckdb'))} --port ${PORT}`,
    cwd: REPO,
    url: `http://127.0.0.1:${PORT}/api/analyses`,
    reuseExistingServer: false,
    timeout: 60_000,
    stdout: 'pipe',
    stderr: 'pipe',
  },
});
