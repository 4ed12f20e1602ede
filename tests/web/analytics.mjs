// Piped queries on the search page (seclake/web/analytics.js) in headless
// Chromium, driven by playwright-core:
//
//   node tests/web/analytics.mjs <base-url> <admin-password> <artifact-dir>
//
// The server holds the records tests/web/test_analytics.py stores (users
// root x3, alice x2, bob x1 in the last hours). Each step prints "ok - ..." or
// "not ok - ..."; the last line is "analytics: N passed, N failed".

import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const [base, password, artifacts] = process.argv.slice(2);
mkdirSync(artifacts, { recursive: true });
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

let passed = 0;
let failed = 0;
const pageErrors = [];

function check(condition, message) {
  if (!condition) throw new Error(message);
}

async function step(name, fn) {
  const started = Date.now();
  try {
    await fn();
    passed++;
    console.log(`ok - ${name} (${Date.now() - started} ms)`);
  } catch (err) {
    failed++;
    console.log(`not ok - ${name}\n  ${String((err && err.stack) || err).split('\n').slice(0, 4).join('\n  ')}`);
    await page.screenshot({ path: join(artifacts, `failed-${name.replace(/\W+/g, '-')}.png`) }).catch(() => {});
  }
}

const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, timezoneId: 'UTC', acceptDownloads: true });
const page = await context.newPage();
page.setDefaultTimeout(15000);
page.on('pageerror', (err) => pageErrors.push(String(err)));
page.on('console', (msg) => {
  if (msg.type() === 'error' && !/status of 4\d\d/.test(msg.text())) pageErrors.push(`console: ${msg.text()}`);
});

const COUNTS = '| STATS n = COUNT(*) BY user.name | SORT n DESC';
const TIMECHART = '| STATS n = COUNT(*) BY BUCKET(@timestamp, 1 hour), user.name';
const search = (q) => `${base}/search?${new URLSearchParams({ q, from: 'now-24h', to: 'now' })}`;
const cells = (column) => page.locator(`#analytics-table tbody tr td:nth-child(${column})`).allInnerTexts();
const shown = () => page.waitForSelector('#analytics-table, .results .empty-results, .query-error:not([hidden])');

await step('sign in', async () => {
  await page.goto(`${base}/login`);
  await page.fill('#username', 'admin');
  await page.fill('#password', password);
  await page.click('#sign-in');
  await page.waitForURL(/\/search/);
});

await step('counts by one field: a table and bars', async () => {
  await page.goto(search(COUNTS));
  await shown();
  const heads = await page.locator('#analytics-table thead th').allInnerTexts();
  check(heads.map((t) => t.trim()).join('|') === 'n|user.name', `columns ${heads}`);
  check((await cells(1)).join(',') === '3,2,1', `counts ${await cells(1)}`);
  check((await cells(2)).join(',') === 'root,alice,bob', `users ${await cells(2)}`);
  check(await page.locator('figure[data-chart="bars"] rect.bar').count() === 3, 'not three bars');
  check(await page.locator('figure[data-chart="bars"] rect.bar[data-key="root"]').count() === 1, 'no bar for root');
  await page.screenshot({ path: join(artifacts, 'analytics-bars.png') });
});

await step('the URL keeps the query', async () => {
  check(new URL(page.url()).searchParams.get('q') === COUNTS, `q is ${new URL(page.url()).searchParams.get('q')}`);
  await page.reload();
  await shown();
  check((await cells(2)).join(',') === 'root,alice,bob', 'not the same table after a reload');
});

await step('columns sort by a click, and back', async () => {
  await page.click('#analytics-table th button[data-column="user.name"]');
  check((await cells(2)).join(',') === 'alice,bob,root', `sorted ${await cells(2)}`);
  check(await page.locator('#analytics-table th[aria-sort="ascending"]').count() === 1, 'aria-sort not set');
  await page.click('#analytics-table th button[data-column="user.name"]');
  check((await cells(2)).join(',') === 'root,bob,alice', `reversed ${await cells(2)}`);
  await page.click('#analytics-table th button[data-column="n"]');
  check((await cells(1)).join(',') === '3,2,1', `numbers sort descending first: ${await cells(1)}`);
});

await step('the result downloads as CSV', async () => {
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#csv-download')]);
  const text = readFileSync(await download.path(), 'utf8');
  check(text === 'n,user.name\r\n3,root\r\n2,alice\r\n1,bob\r\n', `csv ${JSON.stringify(text)}`);
});

await step('a timechart: one line per group', async () => {
  await page.fill('#query', TIMECHART);
  await page.press('#query', 'Enter');
  await page.waitForSelector('figure[data-chart="lines"]');
  const series = await page.locator('figure[data-chart="lines"] path.series').evaluateAll((ps) => ps.map((p) => p.getAttribute('data-series')).sort());
  check(series.join(',') === 'alice,bob,root', `series ${series}`);
  check(new URL(page.url()).searchParams.get('q') === TIMECHART, 'the submitted query is not in the URL');
  const heads = await page.locator('#analytics-table thead th').allInnerTexts();
  check(heads.map((t) => t.trim()).join('|') === 'n|BUCKET(@timestamp, 1 hour)|user.name', `columns ${heads}`);
  await page.screenshot({ path: join(artifacts, 'analytics-lines.png') });
});

await step('an error shows under the query bar at its position', async () => {
  await page.fill('#query', '| STATS n = COUNT(*) BY');
  await page.press('#query', 'Enter');
  await page.waitForSelector('.query-error:not([hidden])');
  const message = await page.locator('.query-error-message').innerText();
  check(/position \d+/.test(message), `message ${message}`);
  check(await page.locator('.query-caret').count() === 1, 'no caret under the position');
});

await step('events or flows: the switch stays, the URL keeps the choice', async () => {
  await page.goto(search(COUNTS));
  await shown();
  await page.click('.segments button[data-type="flow"]');
  await page.waitForURL(/type=flow/);
  await page.waitForSelector('.results .empty-results');
  check(new URL(page.url()).searchParams.get('q') === COUNTS, 'the query was lost');
  check(await page.locator('.segments button[data-type="flow"][aria-checked="true"]').count() === 1, 'flows not checked');
});

await step('a query without a pipe is a search again', async () => {
  await page.goto(search('user.name:bob'));
  await page.waitForSelector('table.hits tbody tr.hit');
  check(await page.locator('#analytics-table').count() === 0, 'the analytics table stayed');
  await page.goto(search(COUNTS));
  await shown();
  check(await page.locator('#analytics-table').count() === 1, 'no analytics table');
});

await step('no script errors', async () => {
  check(pageErrors.length === 0, `errors in the page: ${pageErrors.slice(0, 5).join(' | ')}`);
});

await browser.close();
console.log(`analytics: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
