// The "propose" action of the page `scry view --serve` serves (docs/optimize.md), in headless
// Chromium, driven by tests/e2e/test_optimize.py:
//   node propose.test.mjs --node-modules DIR --chromium PATH CASE.json
// CASE.json: {"url": the served page, "file", "hot": the hot line, "provider", "base_url" (the
// test's fake provider, which only scry may contact), "key" (typed into the page), "del", "add"
// (the diff's lines), "reasons"}. The page is driven as a user would: the settings typed in,
// "propose" clicked on the hot line, then a region selected (click, shift-click) and proposed.
// Every request the page makes is recorded. Prints one JSON report on stdout: {"checks": [{"name",
// "ok", "detail"}], "requests": ["METHOD URL", ...]}; exits 0 when the browser ran.
import {readFileSync} from 'node:fs';
import {join, resolve} from 'node:path';
import {pathToFileURL} from 'node:url';

function arg(name, dflt) {
    const i = process.argv.indexOf('--' + name);
    return i >= 0 ? process.argv[i + 1] : dflt;
}

const nodeModules = resolve(arg('node-modules', 'build/node_modules'));
const chromiumPath = arg('chromium', '/usr/bin/chromium');
const tc = JSON.parse(readFileSync(process.argv[process.argv.length - 1], 'utf8'));
const {chromium} = await import(pathToFileURL(join(nodeModules, 'playwright-core', 'index.mjs')).href);

const report = {checks: [], requests: []};
function check(name, ok, detail = '') {
    report.checks.push({name, ok: !!ok, detail: String(detail)});
}

const browser = await chromium.launch({executablePath: chromiumPath, headless: true,
                                       args: ['--no-sandbox', '--disable-gpu']});
const errors = [];
try {
    const page = await (await browser.newContext()).newPage();
    page.setDefaultTimeout(30000);
    page.on('request', (r) => report.requests.push(r.method() + ' ' + r.url()));
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    await page.goto(tc.url, {waitUntil: 'load'});
    await page.waitForSelector('body[data-ready="1"]');
    check('the served page has the proposals panel', await page.locator('#propose').count() === 1);

    await page.selectOption('#p-provider', tc.provider);
    await page.fill('#p-base', tc.base_url);
    await page.fill('#p-key', tc.key);
    check('the key field is a password field',
          await page.getAttribute('#p-key', 'type') === 'password');

    const file = page.locator(`section.file[data-file="${tc.file}"]`);
    const row = (l) => file.locator(`tr.line[data-l="${l}"]`);
    check('the hot line has a propose button', await row(tc.hot).locator('button.prop').count() === 1);
    await row(tc.hot).locator('button.prop').click();
    await page.waitForFunction(() => document.getElementById('propose-reasons').textContent.length > 0 ||
                               /error|failed/.test(document.getElementById('propose-status').textContent));
    const diff1 = await page.textContent('#propose-diff');
    const status1 = await page.textContent('#propose-status');
    check('the diff shows the removed hot line', diff1.split('\n').includes(tc.del), diff1 + ' / ' + status1);
    check('the diff shows the proposed line', diff1.split('\n').includes(tc.add), diff1);
    check('the reasons are shown', (await page.textContent('#propose-reasons')) === tc.reasons,
          await page.textContent('#propose-reasons'));
    check('the status names the region', status1.includes(':' + tc.hot + '-' + tc.hot), status1);
    check('the model output is text, not markup',
          await page.locator('#propose-diff *:not(span)').count() === 0);

    // A region: the line above the hot line, then shift-click on the hot line.
    await row(tc.hot - 1).locator('td.ln').click();
    await row(tc.hot).locator('td.ln').click({modifiers: ['Shift']});
    const label = await page.textContent('#propose-selection');
    check('the selection is the two lines', label.endsWith(':' + (tc.hot - 1) + '-' + tc.hot), label);
    check('the selected rows are marked', await file.locator('tr.line.sel').count() === 2);
    await page.evaluate(() => { document.getElementById('propose-reasons').textContent = ''; });
    await page.click('#propose-selection');
    await page.waitForFunction(() => document.getElementById('propose-reasons').textContent.length > 0 ||
                               /error|failed/.test(document.getElementById('propose-status').textContent));
    const status2 = await page.textContent('#propose-status');
    check('the region was proposed', status2.includes(':' + (tc.hot - 1) + '-' + tc.hot), status2);

    const stored = await page.evaluate(() => JSON.stringify(Object.assign({}, localStorage)) +
                                       JSON.stringify(Object.assign({}, sessionStorage)) + document.cookie);
    check('the key is stored nowhere in the browser', !stored.includes(tc.key), stored);
    check('no request goes anywhere but scry', report.requests.every((r) => r.split(' ')[1].startsWith(tc.url)),
          report.requests.join(', '));
    check('the page posted two proposals', report.requests.filter((r) => r.startsWith('POST ')).length === 2,
          report.requests.join(', '));
    check('no key in a URL', report.requests.every((r) => !r.includes(tc.key)));
    check('no errors on the page', errors.length === 0, errors.join(' | '));
} catch (e) {
    check('the browser run finished', false, e.stack || String(e));
} finally {
    await browser.close();
}
console.log(JSON.stringify(report));
