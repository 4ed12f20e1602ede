// Piped queries on the search page (seclake/web/analytics.js) in headless
// Chromium, driven by playwright-core:
//
//   node tests/web/analytics.mjs <base-url> <admin-password> <artifact-dir>
//
// The server holds the records tests/web/test_analytics.py stores (users
// root x3, alice x2, bob x1 in the last hours). Each step prints "ok - ..." or
// "not ok - ..."; the last line is "analytics: N passed, N failed".

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { check, scenario } from './harness.mjs';

const { base, artifacts, page, pageErrors, step, finish, signIn } = await scenario('analytics', {
  contextOptions: { acceptDownloads: true },
});

const COUNTS = '| STATS n = COUNT(*) BY user.name | SORT n DESC';
const TIMECHART = '| STATS n = COUNT(*) BY BUCKET(@timestamp, 1 hour), user.name';
const search = (q) => `${base}/search?${new URLSearchParams({ q, from: 'now-24h', to: 'now' })}`;
const cells = (column) => page.locator(`#analytics-table tbody tr td:nth-child(${column})`).allInnerTexts();
const shown = () => page.waitForSelector('#analytics-table, .results .empty-results, .query-error:not([hidden])');

await step('sign in', signIn);

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

await finish();
