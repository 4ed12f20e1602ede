// Sign-in with the identity provider in headless Chromium (playwright-core of
// tests/web): the sign-in page offers "Sign in with Test IdP", the provider
// signs the configured account in, and the browser lands signed in on the
// page it asked for.
//
//   node tests/service/oidc/browser.mjs <seclake-url> <artifact-dir> <issuer>
//
// Then, in a new browser context, the provider signs in carol, whose groups
// map to no role: the browser shows seclake's refusal page, with the way back.
//
// Prints "ok - ..." per step; exits 0 only when every step passed.

import { join } from 'node:path';
import { chromium } from '../../web/node_modules/playwright-core/index.mjs';

const [base, artifacts, issuer] = process.argv.slice(2);
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

function check(condition, message) {
  if (!condition) throw new Error(message);
}

const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
const page = await browser.newPage();
const errors = [];
page.on('pageerror', (err) => errors.push(String(err)));
try {
  // A page that needs a session sends the browser to sign-in, remembering where it was.
  await page.goto(`${base}/rules`);
  await page.waitForURL(/\/login\?next=/);
  const button = page.locator('a.sso-provider');
  await button.waitFor();
  check((await button.textContent()) === 'Sign in with Test IdP', `button says ${await button.textContent()}`);
  await page.screenshot({ path: join(artifacts, 'sso-login.png') });
  console.log('ok - the sign-in page offers "Sign in with Test IdP"');

  await button.click();
  // Through the provider and back: the page trades the one-time code and opens /rules.
  await page.waitForURL(`${base}/rules`, { timeout: 30000 });
  check(!page.url().includes('sso='), `the one-time code stayed in the address bar: ${page.url()}`);
  const session = JSON.parse(await page.evaluate(() => sessionStorage.getItem('seclake.session')));
  check(session && session.userName === 'alice', `session: ${JSON.stringify(session)}`);
  check(session.roles.includes('admin'), `roles: ${session.roles}`);
  await page.locator('#main').waitFor();
  await page.screenshot({ path: join(artifacts, 'sso-signed-in.png') });
  console.log('ok - signed in as alice, landed on /rules');

  check(errors.length === 0, `page errors: ${errors.join('; ')}`);
  console.log('ok - no page errors');

  // carol: no role for her groups. A new context: the provider's session for alice is not there.
  await fetch(`${issuer}/test/login-as/carol`);
  const other = await browser.newContext();
  const second = await other.newPage();
  await second.goto(`${base}/login`);
  await second.locator('a.sso-provider').click();
  const refusal = second.locator('#sso-error');
  await refusal.waitFor({ timeout: 30000 });
  const text = await refusal.textContent();
  check(/no group of 'carol'/.test(text), `refusal says: ${text}`);
  check(await second.evaluate(() => sessionStorage.getItem('seclake.session')) === null, 'carol got a session');
  await second.screenshot({ path: join(artifacts, 'sso-refused.png') });
  await second.locator('a[href="/login"]').click();
  await second.locator('a.sso-provider').waitFor();
  console.log('ok - a user whose groups map to no role sees why, and the way back to sign-in');
} catch (err) {
  console.log(`not ok - ${String(err && err.stack || err).split('\n').slice(0, 4).join('\n  ')}`);
  await page.screenshot({ path: join(artifacts, 'sso-failed.png') }).catch(() => {});
  process.exitCode = 1;
} finally {
  await browser.close();
}
