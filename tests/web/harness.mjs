// What every browser scenario of the tests shares (e2e.mjs, alerts.mjs,
// analytics.mjs): the command line, headless Chromium (the Debian package,
// driven by playwright-core), and steps that print "ok - ..." or
// "not ok - ..." (with a screenshot of the failure), then "<name>: N passed,
// N failed"; the exit code is 0 only when every step passed.
//
//   node tests/web/<name>.mjs <base-url> <admin-password> <artifact-dir>

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export function check(condition, message) {
  if (!condition) throw new Error(message);
}

/**
 * A scenario named `name`: its page in a fresh browser context (`contextOptions` added to a
 * 1280x800 UTC one; `prepare(context, origin)` runs before the page opens), its `step` and `finish`.
 * `pageErrors` gathers script errors and console errors other than refused calls (4xx),
 * which the interface meets on purpose (a wrong password, an ended session).
 */
export async function scenario(name, { contextOptions = {}, prepare = null } = {}) {
  const [base, password, artifacts] = process.argv.slice(2);
  if (!base || !password || !artifacts) {
    console.error(`usage: node ${name}.mjs <base-url> <admin-password> <artifact-dir>`);
    process.exit(2);
  }
  mkdirSync(artifacts, { recursive: true });
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, timezoneId: 'UTC', ...contextOptions });
  const origin = new URL(base).origin;
  if (prepare) await prepare(context, origin);
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  const pageErrors = [];
  page.on('pageerror', (err) => pageErrors.push(String(err)));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && !/^Failed to load resource: the server responded with a status of 4\d\d/.test(msg.text())) {
      pageErrors.push(`console: ${msg.text()}`);
    }
  });
  let passed = 0;
  let failed = 0;

  async function step(title, fn) {
    const started = Date.now();
    try {
      await fn();
      passed++;
      console.log(`ok - ${title} (${Date.now() - started} ms)`);
    } catch (err) {
      failed++;
      console.log(`not ok - ${title}\n  ${String((err && err.stack) || err).split('\n').slice(0, 4).join('\n  ')}`);
      await page.screenshot({ path: join(artifacts, `failed-${title.replace(/\W+/g, '-')}.png`) }).catch(() => {});
    }
  }

  async function finish() {
    await browser.close();
    console.log(`${name}: ${passed} passed, ${failed} failed`);
    process.exit(failed ? 1 : 0);
  }

  /** Sign in as the admin through the sign-in page (the scenario's first step where it needs one). */
  async function signIn() {
    await page.goto(`${base}/login`);
    await page.fill('#username', 'admin');
    await page.fill('#password', password);
    await page.click('#sign-in');
    await page.waitForURL(/\/search/);
  }

  return { base, password, artifacts, origin, browser, context, page, pageErrors, step, finish, signIn };
}
