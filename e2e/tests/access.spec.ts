import { expect, test, type Browser, type Page } from '@playwright/test';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO, SEED_CFQ } from './paths';

// Issue 24's access model in the browser (docs/SECURITY.md): a local server (the config's, no token) lets anyone
// upload and delete; a shared one (a second server started here, with STALLSCOPE_TOKEN) needs a sign-in to list and
// upload, keeps each upload's edit key in the uploading browser, which then changes and deletes that analysis
// without the token; another browser sees none of it in its list.

const TOKEN = 'e2e-team-token-0123456789abcdef';
const SHARED_PORT = Number(process.env.STALLSCOPE_E2E_PORT ?? 8765) + 1;
const SHARED_URL = `http://127.0.0.1:${SHARED_PORT}`;

async function uploadFromHome(page: Page, name: string) {
  await page.getByTestId('file-input').setInputFiles([SEED_CFQ]);
  await page.getByLabel('Name (optional)').fill(name);
  await page.getByRole('button', { name: /^Analyse/ }).click();
  await expect(page.getByTestId('upload-result')).toBeVisible({ timeout: 30_000 });
}

const row = (page: Page, name: string) => page.getByTestId('analysis-row').filter({ hasText: name });

async function deleteFromList(page: Page, name: string) {
  await row(page, name).getByRole('button', { name: `Delete ${name}` }).click();
  await row(page, name).getByRole('button', { name: 'Yes, delete' }).click();
  await expect(row(page, name)).toHaveCount(0);
}

test('local mode: no sign-in, upload, then delete from the list', async ({ page, request }) => {
  const name = `local delete ${Date.now()}`;
  await page.goto('/');
  await expect(page.getByTestId('sign-in')).toHaveCount(0);
  await uploadFromHome(page, name);
  await expect(row(page, name)).toBeVisible();
  // the size uploaded: the seed's bytes
  await expect(row(page, name)).toContainText(/\d+(\.\d+)? (KiB|MiB|B)/);
  // a second thought: Cancel keeps it
  await row(page, name).getByRole('button', { name: `Delete ${name}` }).click();
  await row(page, name).getByRole('button', { name: 'Cancel' }).click();
  await expect(row(page, name)).toBeVisible();
  await deleteFromList(page, name);
  const left = (await (await request.get('/api/analyses')).json()) as { name: string }[];
  expect(left.map((a) => a.name)).not.toContain(name);
});

test.describe('a shared server (STALLSCOPE_TOKEN)', () => {
  let server: ChildProcess | undefined;
  let dir = '';

  test.beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stallscope-e2e-shared-'));
    server = spawn(
      path.join(REPO, '.venv/bin/stallscope'),
      ['serve', '--db', path.join(dir, 'shared.duckdb'), '--port', String(SHARED_PORT)],
      { cwd: REPO, env: { ...process.env, STALLSCOPE_TOKEN: TOKEN }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let log = '';
    server.stderr?.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-4000)));
    for (let i = 0; ; i++) {
      try {
        const r = await fetch(`${SHARED_URL}/api/locks`);
        if (r.ok) break;
      } catch {
        /* not listening yet */
      }
      if (i > 240 || server.exitCode !== null) throw new Error(`the shared server did not start:\n${log}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  });

  test.afterAll(async () => {
    if (server && server.exitCode === null) {
      const stopped = new Promise((r) => server!.once('exit', r));
      server.kill('SIGTERM');
      await stopped;
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function browserAt(browser: Browser) {
    const context = await browser.newContext({ baseURL: SHARED_URL });
    return { context, page: await context.newPage() };
  }

  test('sign in, list, upload; the kept edit key changes the offset and deletes; others see only theirs', async ({ browser }) => {
    test.setTimeout(120_000);
    const a = await browserAt(browser);
    const b = await browserAt(browser);
    const page = a.page;

    // no token yet: the list is only this browser's (none), and uploading asks for the token
    await page.goto('/');
    await expect(page.getByRole('heading', { name: 'Analyses created in this browser' })).toBeVisible();
    await expect(page.getByTestId('dropzone')).toHaveCount(0);
    await page.getByTestId('sign-in').getByLabel('Token').fill('not-the-token-0123456789');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByRole('alert')).toContainText('refused the token');
    await page.getByTestId('sign-in').getByLabel('Token').fill(TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByRole('heading', { name: 'Analyses', exact: true })).toBeVisible();
    await expect(page.getByText('No analyses yet')).toBeVisible();

    // upload with the token; the list (every analysis) shows it
    await uploadFromHome(page, 'team upload');
    await expect(row(page, 'team upload')).toBeVisible();

    // browser B, without the token, uploads nothing and lists nothing: not A's analysis
    await b.page.goto('/');
    await expect(b.page.getByRole('heading', { name: 'Analyses created in this browser' })).toBeVisible();
    await expect(b.page.getByTestId('sign-in')).toBeVisible();
    await expect(b.page.getByText('None: sign in above')).toBeVisible();
    await expect(row(b.page, 'team upload')).toHaveCount(0);

    // A signs out: its own analysis is still listed (its id and key are kept), the sign-in is back
    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect(page.getByRole('heading', { name: 'Analyses created in this browser' })).toBeVisible();
    await expect(row(page, 'team upload')).toBeVisible();

    // the link reads without anything; B may not change it
    await row(page, 'team upload').getByRole('link').click();
    await expect(page.getByRole('heading', { level: 1 })).toHaveText('team upload');
    const link = new URL(page.url());
    await b.page.goto(`${link.pathname}?tab=sources`);
    await expect(b.page.getByRole('heading', { level: 1 })).toHaveText('team upload');
    const bCard = b.page.locator('.align-card').first();
    await bCard.getByRole('textbox').fill('2.5');
    await bCard.getByRole('button', { name: 'Apply' }).click();
    await expect(bCard.locator('.error')).toContainText('edit key');
    await expect(bCard).toContainText('offset 0.000000000 s');

    // A, without the token, changes the offset with the key it kept at upload
    await page.getByRole('tablist').getByRole('tab', { name: 'Sources' }).click();
    await expect(page.getByTestId('analysis-size')).toContainText('uploaded in 1 file');
    const card = page.locator('.align-card').first();
    await card.getByRole('textbox').fill('2.5');
    await card.getByRole('button', { name: 'Apply' }).click();
    await expect(card).toContainText('offset 2.500000000 s');
    await expect(card).toContainText('set by hand');

    // and deletes it, from the Sources tab; it is gone for everyone
    await page.getByRole('button', { name: 'Delete team upload' }).click();
    await page.getByRole('button', { name: 'Yes, delete' }).click();
    await expect(page).toHaveURL(`${SHARED_URL}/`);
    await expect(row(page, 'team upload')).toHaveCount(0);
    const gone = await fetch(`${SHARED_URL}/api/analyses${link.pathname.replace('/a/', '/')}`);
    expect(gone.status).toBe(404);

    // signed in again, the token deletes what another browser uploaded
    await page.getByTestId('sign-in').getByLabel('Token').fill(TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await uploadFromHome(page, 'second upload');
    await b.page.goto('/');
    await b.page.getByTestId('sign-in').getByLabel('Token').fill(TOKEN);
    await b.page.getByRole('button', { name: 'Sign in' }).click();
    await expect(row(b.page, 'second upload')).toBeVisible();
    await deleteFromList(b.page, 'second upload');

    await a.context.close();
    await b.context.close();
  });
});
