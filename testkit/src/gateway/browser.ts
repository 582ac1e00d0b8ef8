/**
 * Headless Chromium (Debian package `chromium`, installed by scripts/test.sh) driven by
 * playwright-core, for the `browser` vitest project. Screenshots go to the ignored
 * .local/test-artifacts/screenshots.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '@ingest/platform';
import { type Browser, chromium, type Page } from 'playwright-core';

export const CHROMIUM_PATH = '/usr/bin/chromium';
export const SCREENSHOT_DIR = join(REPO_ROOT, '.local/test-artifacts/screenshots');

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) throw new Error(`browser tests need ${CHROMIUM_PATH}: apt-get install chromium (scripts/test.sh installs it)`);
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}

/**
 * A page of `browser` signed in to the dashboard at `baseUrl` as an owner, through the sign-in
 * form as a person does it, once the first page (API keys) shows.
 */
export async function signedInDashboardPage(
  browser: Browser,
  baseUrl: string,
  owner: { email: string; password: string },
  viewport = { width: 1280, height: 900 },
): Promise<Page> {
  const page = await browser.newPage({ viewport });
  await page.goto(`${baseUrl}/dashboard/`);
  await page.getByLabel('Email').fill(owner.email);
  await page.getByLabel('Password').fill(owner.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'API keys' }).waitFor();
  return page;
}

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const path = join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}
