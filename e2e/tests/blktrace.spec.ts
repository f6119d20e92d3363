import { expect, test } from '@playwright/test';
import fs from 'node:fs';
import path from 'node:path';
import { PUBLIC, needsPublic } from './paths';

needsPublic();
const SET = path.join(PUBLIC, 'blktrace-binary/isotopp-keks');
const DUMP = path.join(PUBLIC, 'blktrace-binary/romeus-blkparse-dump/trace_x_0_y_1.bin');

/** Drops files on the home page's drop zone at once, as a file manager does (a DataTransfer of File objects). */
async function drop(page: import('@playwright/test').Page, files: string[]) {
  const payload = files.map((f) => ({ name: path.basename(f), b64: fs.readFileSync(f).toString('base64') }));
  const transfer = await page.evaluateHandle((items) => {
    const dt = new DataTransfer();
    for (const it of items) {
      const bytes = Uint8Array.from(atob(it.b64), (c) => c.charCodeAt(0));
      dt.items.add(new File([bytes], it.name, { type: 'application/octet-stream' }));
    }
    return dt;
  }, payload);
  await page.getByTestId('dropzone').dispatchEvent('drop', { dataTransfer: transfer });
}

/** Records the parts of every FormData the page sends by XMLHttpRequest (the upload), as `field filename`, in
 *  order, in window.sentParts (Chromium does not hand Playwright a body made of files). */
async function recordSentParts(page: import('@playwright/test').Page) {
  await page.addInitScript(() => {
    const w = window as unknown as { sentParts: string[][] };
    w.sentParts = [];
    const send = XMLHttpRequest.prototype.send;
    XMLHttpRequest.prototype.send = function (body?: Document | XMLHttpRequestBodyInit | null) {
      if (body instanceof FormData) {
        w.sentParts.push([...body.entries()].map(([field, v]) => (typeof v === 'string' ? field : `${field} ${v.name} ${v.size}`)));
      }
      return send.call(this, body);
    };
  });
}

const sentParts = (page: import('@playwright/test').Page) =>
  page.evaluate(() => (window as unknown as { sentParts: string[][] }).sentParts);

test('a blktrace per-CPU set dropped at once becomes one source listing its files', async ({ page }) => {
  const set = fs.readdirSync(SET).sort().map((f) => path.join(SET, f));
  await recordSentParts(page);
  await page.goto('/');
  await drop(page, [...set, DUMP]);
  await page.getByLabel('Name (optional)').fill('blktrace binary set');
  await page.getByRole('button', { name: /^Analyse 9 files/ }).click();
  const result = page.getByTestId('upload-result');
  await expect(result).toBeVisible({ timeout: 30_000 });
  // the set's files went as pieces (one each: they are under 4 MiB), the dump whole, the name last
  const size = (f: string) => fs.statSync(f).size;
  expect(await sentParts(page)).toEqual([
    [...set.map((f) => `chunk ${path.basename(f)} ${size(f)}`), `files ${path.basename(DUMP)} ${size(DUMP)}`, 'name'],
  ]);
  const rows = result.locator('tbody tr');
  await expect(rows).toHaveCount(2); // the 8 per-CPU files are one source, the dump another
  await expect(rows.nth(0)).toContainText('keks.blktrace.0-7');
  await expect(rows.nth(0).getByTestId('source-files').locator('li')).toHaveCount(8);
  await expect(rows.nth(0).getByTestId('source-files')).toContainText('keks.blktrace.3 blktrace per-CPU file, CPU 3');
  await expect(rows.nth(0)).toContainText('2,398'); // the events blkparse prints for the set
  await expect(rows.nth(1)).toContainText('trace_x_0_y_1.bin');
  await expect(rows.nth(1)).toContainText('7,168');
  // the chip names the kind of file read, not the text it was rendered to
  await expect(result.getByTestId('source-format')).toHaveText(['blktrace binary', 'blktrace binary']);

  await result.getByRole('link', { name: /Open analysis/ }).click();
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('blktrace binary set');
  await page.getByRole('tab', { name: 'Sources' }).click();
  const sources = page.locator('table.grid', { hasText: 'SHA-256' });
  await expect(sources.getByTestId('source-files').first().locator('li')).toHaveCount(8);
});

test('a set larger than a piece is sent interleaved and parsed into the rows it gives sent whole', async ({ page, request }) => {
  // 3 per-CPU files of 4.5 MiB each, made of the keks capture's CPU 3 records: the first piece of each, then their
  // second pieces; the server parses the set while they arrive. The same bytes sent whole (the old shape, as curl
  // sends them) give the same events.
  const cpu3 = fs.readFileSync(path.join(SET, 'keks.blktrace.3'));
  const big = Buffer.concat(Array.from({ length: Math.ceil((4.5 * 2 ** 20) / cpu3.length) }, () => cpu3));
  const names = ['big.blktrace.0', 'big.blktrace.1', 'big.blktrace.2'];
  await recordSentParts(page);
  await page.goto('/');
  await page.getByTestId('file-input').setInputFiles(names.map((name) => ({ name, mimeType: 'application/octet-stream', buffer: big })));
  await page.getByRole('button', { name: /^Analyse 3 files/ }).click();
  const result = page.getByTestId('upload-result');
  await expect(result).toBeVisible({ timeout: 60_000 });
  await expect(result.locator('tbody tr')).toHaveCount(1);
  await expect(result.locator('tbody tr').nth(0)).toContainText('big.blktrace.0-2');
  const rest = big.length - 4 * 2 ** 20;
  expect(await sentParts(page)).toEqual([[...names.map((n) => `chunk ${n} ${4 * 2 ** 20}`), ...names.map((n) => `chunk ${n} ${rest}`)]]);

  const form = new FormData();
  for (const name of names) form.append('files', new Blob([big]), name);
  const sentWhole = await request.fetch('/api/analyses', { method: 'POST', multipart: form });
  expect(sentWhole.status()).toBe(201);
  const created = await sentWhole.json();
  expect(created.sources[0].filename).toBe('big.blktrace.0-2');
  const events = await result.locator('tbody tr').nth(0).innerText();
  expect(events).toContain(created.sources[0].events.toLocaleString('en-US'));
});

test('a cut binary file is refused naming the file and the byte offset', async ({ page }) => {
  const data = fs.readFileSync(path.join(SET, 'keks.blktrace.3'));
  await page.goto('/');
  await page.getByTestId('file-input').setInputFiles([
    { name: 'keks.blktrace.3', mimeType: 'application/octet-stream', buffer: data.subarray(0, 1000) },
  ]);
  await page.getByRole('button', { name: /^Analyse/ }).click();
  const error = page.getByTestId('upload-error');
  await expect(error).toBeVisible({ timeout: 30_000 });
  await expect(error).toContainText('keks.blktrace.3');
  await expect(error).toContainText(/byte \d+/);
  await expect(error).toContainText(/was cut|runs past the end/);
});
