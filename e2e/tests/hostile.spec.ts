import { expect, test, type Page } from '@playwright/test';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO, SEED_OFFCPU } from './paths';
import { upload } from './upload';

// Every name field a trace or a user supplies holds markup: a function, a comm, a frame (and so a lock's
// stack), a print marker's text, a file name, the analysis name. Nothing of it may become a DOM node or run.
const TOKEN = (n: number) => `<img/src/onerror=alert${n}>`; // no spaces or parentheses: fits a function or comm token
const TEXT = (n: number) => `<img src=x onerror=alert(${n})>`;

function hostileFiles(): string[] {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stallscope-hostile-'));
  const write = (name: string, text: string) => {
    const p = path.join(dir, name);
    fs.writeFileSync(p, text);
    return p;
  };
  const ftrace = fs
    .readFileSync(path.join(REPO, 'samples/ext4-jbd2-commit.trace-cmd-report.txt'), 'utf8')
    .replaceAll('postgres', TOKEN(1))
    .replaceAll('ext4_file_write_iter', TOKEN(2))
    .replaceAll('checkpoint-flush start', `${TEXT(3)} start`);
  const blk = fs.readFileSync(path.join(REPO, 'samples/ext4-jbd2-commit.blkparse.txt'), 'utf8').replaceAll('jbd2/sda1-8', TOKEN(4));
  const offcpu = fs.readFileSync(SEED_OFFCPU, 'utf8').replaceAll('_xfs_buf_find', TOKEN(5));
  return [
    write('ext4.trace-cmd-report.txt', ftrace),
    write(`${TEXT(6)}.blkparse.txt`, blk),
    write('open.offcputime.txt', offcpu),
  ];
}

/** Records every element a payload would create (an img, a script or frame, any on* handler), from page load on. */
function watchForInjection() {
  const found: string[] = [];
  (window as unknown as { __injected: string[] }).__injected = found;
  const bad = (el: Element) =>
    ['IMG', 'SCRIPT', 'IFRAME', 'OBJECT', 'EMBED'].includes(el.tagName) || Array.from(el.attributes).some((a) => a.name.startsWith('on'));
  const check = (node: Node) => {
    if (!(node instanceof Element)) return;
    for (const el of [node, ...Array.from(node.querySelectorAll('*'))]) if (bad(el)) found.push(el.outerHTML.slice(0, 200));
  };
  new MutationObserver((records) => {
    for (const r of records) r.addedNodes.forEach(check);
  }).observe(document, { childList: true, subtree: true });
}

async function injected(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const scripts = new Set(Array.from(document.querySelectorAll('script[src]')).map((s) => s.outerHTML.slice(0, 200)));
    return (window as unknown as { __injected: string[] }).__injected.filter((h) => !scripts.has(h));
  });
}

/** Points (CSS pixels, relative to the canvas) over a chart's painted items: the canvas is cut in 6x6 cells, the cells
 * holding a coloured pixel are joined into blobs, and each blob gives its first cell and one in every 12 more, so
 * that a tiny item (a heatmap cell of one call) is hovered as surely as a large one. */
async function paintedPoints(page: Page, canvasIndex: number): Promise<{ x: number; y: number }[]> {
  return page.locator('[role="img"] canvas').nth(canvasIndex).evaluate((el) => {
    const c = el as HTMLCanvasElement;
    const ctx = c.getContext('2d');
    if (!ctx || !c.width || !c.height) return [];
    const scale = c.width / c.getBoundingClientRect().width;
    const data = ctx.getImageData(0, 0, c.width, c.height).data;
    const size = Math.max(1, Math.round(6 * scale));
    const cols = Math.ceil(c.width / size);
    const rows = Math.ceil(c.height / size);
    const hit = new Map<number, { x: number; y: number }>();
    for (let cy = 0; cy < rows; cy++)
      for (let cx = 0; cx < cols; cx++) {
        search: for (let y = cy * size; y < Math.min((cy + 1) * size, c.height); y++)
          for (let x = cx * size; x < Math.min((cx + 1) * size, c.width); x++) {
            const i = (y * c.width + x) * 4;
            if (data[i + 3] > 200 && Math.max(data[i], data[i + 1], data[i + 2]) - Math.min(data[i], data[i + 1], data[i + 2]) > 60) {
              hit.set(cy * cols + cx, { x: x / scale, y: y / scale });
              break search;
            }
          }
      }
    const points: { x: number; y: number }[] = [];
    const seen = new Set<number>();
    for (const start of hit.keys()) {
      if (seen.has(start)) continue;
      const todo = [start];
      seen.add(start);
      for (let k = 0; k < todo.length; k++) {
        const at = todo[k];
        if (k % 12 === 0) points.push(hit.get(at)!);
        const [cx, cy] = [at % cols, Math.floor(at / cols)];
        for (const [nx, ny] of [[cx + 1, cy], [cx - 1, cy], [cx, cy + 1], [cx, cy - 1]]) {
          const n = ny * cols + nx;
          if (nx >= 0 && nx < cols && ny >= 0 && ny < rows && hit.has(n) && !seen.has(n)) {
            seen.add(n);
            todo.push(n);
          }
        }
      }
    }
    return points.slice(0, 150);
  });
}

/** Moves the pointer over the painted items of every chart in view; returns how many points it hovered. */
async function hoverCharts(page: Page): Promise<number> {
  const containers = page.locator('[role="img"]:has(canvas)');
  for (let i = 0; i < (await containers.count()); i++)
    if (await containers.nth(i).isVisible()) await expect(containers.nth(i)).toHaveAttribute('data-ready', '1', { timeout: 20_000 });
  const charts = page.locator('[role="img"] canvas');
  let hovered = 0;
  for (let i = 0; i < (await charts.count()); i++) {
    const chart = charts.nth(i);
    if (!(await chart.isVisible())) continue;
    await chart.scrollIntoViewIfNeeded();
    const box = await chart.boundingBox();
    if (!box) continue;
    for (const p of await paintedPoints(page, i)) {
      await page.mouse.move(box.x + p.x, box.y + p.y);
      hovered++;
    }
    expect(await injected(page)).toEqual([]);
  }
  return hovered;
}

test('hostile names in every field never become markup or script', async ({ page }) => {
  test.setTimeout(240_000);
  await page.addInitScript(watchForInjection);
  const dialogs: string[] = [];
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  const name = `${TEXT(7)} analysis`;
  await upload(page, hostileFiles(), name);
  const analysis = new URL(page.url()).pathname;

  const tabs = await page.getByRole('tablist').getByRole('tab').allTextContents();
  expect(tabs.length).toBeGreaterThanOrEqual(4);
  for (const tab of tabs) {
    await page.getByRole('tablist').getByRole('tab', { name: tab }).click();
    await page.waitForLoadState('networkidle');
    await hoverCharts(page);
  }
  // The heatmap of the hostile function (its name is the tooltip's title), and the first chain opened.
  await page.goto(`${analysis}?tab=stalls&shm=func&shf=${encodeURIComponent(TOKEN(2))}`);
  await page.waitForLoadState('networkidle');
  expect(await hoverCharts(page)).toBeGreaterThan(0);
  await page.goto(`${analysis}?tab=stalls&chain=1`);
  await page.waitForLoadState('networkidle');
  await hoverCharts(page);

  // The names are shown, as text.
  await page.goto('/');
  await expect(page.getByText(name).first()).toBeVisible();
  expect(await injected(page)).toEqual([]);
  expect(dialogs).toEqual([]);
});
