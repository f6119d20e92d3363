// Helpers of the issue 25 walks (landing.spec.ts, fit.spec.ts): analyses made once per run through the API, and the
// check that an element lies in the viewport.
import { expect, type APIRequestContext, type Locator, type Page } from '@playwright/test';
import fs from 'node:fs';
import path from 'node:path';
import { REPO } from './paths';

export const INCIDENT = ['blkparse', 'trace-cmd-report', 'offcputime'].map((k) => path.join(REPO, `samples/incident.${k}.txt`));

const made = new Map<string, string>();

/** An analysis of these files, as uploaded (made once per run, through the API). */
export async function analysis(request: APIRequestContext, name: string, files: { name: string; bytes: Buffer }[]): Promise<string> {
  if (made.has(name)) return made.get(name)!;
  const form = new FormData();
  form.append('name', name);
  for (const f of files) form.append('files', new Blob([new Uint8Array(f.bytes)]), f.name);
  const res = await request.post('/api/analyses', { multipart: form, timeout: 120_000 });
  expect(res.status()).toBe(201);
  const id = ((await res.json()) as { id: string }).id;
  made.set(name, id);
  return id;
}

export const file = (p: string) => ({ name: path.basename(p), bytes: fs.readFileSync(p) });

/** The id of the analysis' first source of this format. */
export async function sourceOf(request: APIRequestContext, id: string, format: string): Promise<number> {
  const a = (await (await request.get(`/api/analyses/${id}`)).json()) as { sources: { id: number; format: string }[] };
  return a.sources.find((s) => s.format === format)!.id;
}

/** The element's box lies in the viewport (wholly, or its top part when it is taller than the viewport). */
export async function expectInView(page: Page, el: Locator) {
  await expect(el).toBeVisible();
  await expect
    .poll(async () => {
      const b = (await el.boundingBox())!;
      const vh = page.viewportSize()!.height;
      return b.y >= -1 && (b.y + b.height <= vh + 1 || (b.height > vh && b.y < vh * 0.35));
    })
    .toBe(true);
}
