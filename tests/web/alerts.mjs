// The alerts page (seclake/web/page-alerts.js) in headless Chromium, driven by
// playwright-core:
//
//   node tests/web/alerts.mjs <base-url> <admin-password> <artifact-dir>
//
// The server holds what tests/web/test_alerts.py set up: a webhook destination
// "hook" whose receiver refused the first delivery (failed, HTTP 403) and takes
// the next, "dead" whose receiver is down, and the rule "logons" sending to
// "hook". Each step prints "ok - ..." or "not ok - ..."; the last line is
// "alerts: N passed, N failed".

import { join } from 'node:path';
import { check, scenario } from './harness.mjs';

const { base, artifacts, page, pageErrors, step, finish, signIn } = await scenario('alerts');

await step('sign in', signIn);

await step('the Alerts link leads to destinations, rules and deliveries', async () => {
  await page.click('nav.main-nav a[href="/alerts"]');
  await page.waitForSelector('#destinations-table tbody tr');
  const names = await page.locator('#destinations-table tbody tr td:first-child').allInnerTexts();
  check(names.join(',') === 'dead,hook', `destinations ${names}`);
  const secrets = await page.locator('#destinations-table tr[data-name="hook"] td:nth-child(4)').innerText();
  check(secrets === 'secret', `secrets column ${secrets}`);
  check(!(await page.content()).includes('whsec-page-secret'), 'a secret is on the page');
  await page.waitForSelector('#alert-rules-table tr[data-name="logons"]');
  const when = await page.locator('#alert-rules-table tr[data-name="logons"] td:nth-child(2)').innerText();
  check(when.includes('behavior made') && when.includes('ATT&CK T1110'), `when ${when}`);
  await page.waitForSelector('#deliveries-table tr[data-status="failed"]');
  await page.screenshot({ path: join(artifacts, 'alerts.png'), fullPage: true });
});

await step('send a test: one destination answers, the other says why not', async () => {
  await page.click('#destinations-table tr[data-name="hook"] button.send-test');
  await page.waitForSelector('#destinations-table tr[data-name="hook"] .test-outcome .ok');
  await page.click('#destinations-table tr[data-name="dead"] button.send-test');
  await page.waitForSelector('#destinations-table tr[data-name="dead"] .test-outcome .error');
  const why = await page.locator('#destinations-table tr[data-name="dead"] .test-outcome').innerText();
  check(/Failed: .*Connect/.test(why), `outcome ${why}`);
});

await step('failed deliveries: shown with their error, resent from the page', async () => {
  await page.selectOption('#delivery-status', 'failed');
  await page.waitForSelector('#deliveries-table tr[data-status="failed"]');
  const error = await page.locator('#deliveries-table tr[data-status="failed"] td:nth-child(9)').first().innerText();
  check(error.includes('HTTP 403'), `last error ${error}`);
  await page.click('#deliveries-table tr[data-status="failed"] button.resend');
  await page.selectOption('#delivery-status', '');
  await page.waitForFunction(() => document.querySelector('#delivery-counts')?.textContent.includes('0 failed'));
});

await step('add a destination and a rule with the forms, then delete the rule', async () => {
  await page.selectOption('#delivery-status', '');
  await page.fill('#dest-name', 'ops-slack');
  await page.selectOption('#dest-kind', 'slack');
  await page.fill('#dest-url', 'https://hooks.slack.example/T0/B0/secretpart');
  await page.fill('#dest-channel', '#soc');
  await page.click('#destination-form button[type=submit]');
  await page.waitForSelector('#destinations-table tr[data-name="ops-slack"]');
  const secrets = await page.locator('#destinations-table tr[data-name="ops-slack"] td:nth-child(4)').innerText();
  check(secrets === 'url', `secrets ${secrets}`);
  check(!(await page.content()).includes('secretpart'), 'the Slack URL is shown');
  await page.fill('#rule-name', 'critical-to-slack');
  await page.selectOption('#rule-on', 'summary_level');
  await page.fill('#rule-level', 'critical');
  await page.check('#rule-destinations input[value="ops-slack"]');
  await page.click('#rule-form button[type=submit]');
  await page.waitForSelector('#alert-rules-table tr[data-name="critical-to-slack"]');
  const when = await page.locator('#alert-rules-table tr[data-name="critical-to-slack"] td:nth-child(2)').innerText();
  check(when.includes('summary reaches critical'), `when ${when}`);
  await page.fill('#rule-name', 'critical-to-slack');  // the same name again: said
  await page.check('#rule-destinations input[value="ops-slack"]');
  await page.click('#rule-form button[type=submit]');
  await page.waitForSelector('#rule-form [role=alert], #rule-form .notice, #rule-form .error');
  const said = await page.locator('#rule-form').innerText();
  check(said.includes('exists'), `the form says ${said}`);
  await page.click('#alert-rules-table tr[data-name="critical-to-slack"] button.delete');
  await page.click('dialog button[value="ok"]');
  await page.waitForSelector('#alert-rules-table tr[data-name="critical-to-slack"]', { state: 'detached' });
  await page.screenshot({ path: join(artifacts, 'alerts-forms.png'), fullPage: true });
});

await step('no script errors', async () => {
  check(pageErrors.length === 0, pageErrors.join('\n'));
});

await finish();
