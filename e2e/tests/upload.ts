import { expect, type Page } from '@playwright/test';

/** Uploads files from the home page as one named analysis and opens it. */
export async function upload(page: Page, files: string[], name: string) {
  await page.goto('/');
  await page.getByTestId('file-input').setInputFiles(files);
  await page.getByLabel('Name (optional)').fill(name);
  await page.getByRole('button', { name: /^Analyse/ }).click();
  const result = page.getByTestId('upload-result');
  await expect(result).toBeVisible({ timeout: 30_000 });
  await result.getByRole('link', { name: /Open analysis/ }).click();
  await expect(page.getByRole('heading', { level: 1 })).toHaveText(name);
}
