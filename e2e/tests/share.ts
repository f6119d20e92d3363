import { expect, type Browser, type Page } from '@playwright/test';

/** Presses "Copy link", checks the clipboard holds the address bar, and opens that link in a fresh
 * browser context (no shared state): returns the new page; close it with page.context().close(). */
export async function copyLinkAndOpenElsewhere(page: Page, browser: Browser): Promise<{ link: string; other: Page }> {
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
  await page.getByTestId('copy-link').click();
  await expect(page.getByTestId('copy-link')).toHaveText(/copied/i);
  const link = await page.evaluate(() => navigator.clipboard.readText());
  expect(link).toBe(page.url());
  const other = await (await browser.newContext()).newPage();
  await other.goto(link);
  return { link, other };
}
