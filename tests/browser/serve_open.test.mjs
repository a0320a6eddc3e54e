// What the browser scry view --serve starts is given: a private file that redirects to the served
// page (the URL itself never goes on a command line). Driven by tests/e2e/test_serve_hardening.py:
//   node serve_open.test.mjs --node-modules DIR --chromium PATH CASE.json
// CASE.json: {"opener": the file scry handed the browser, "url": the served page, "provider",
// "base_url": the provider and base URL of scry's command line}. Chromium opens the file as a
// browser would; the page must land on the served URL, show the command line's provider as the
// default and say where the environment's key goes. Prints one JSON report {"checks": [...]}.
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

const report = {checks: []};
function check(name, ok, detail = '') {
    report.checks.push({name, ok: !!ok, detail: String(detail)});
}

const browser = await chromium.launch({executablePath: chromiumPath, headless: true,
                                       args: ['--no-sandbox', '--disable-gpu']});
try {
    const page = await (await browser.newContext()).newPage();
    page.setDefaultTimeout(30000);
    await page.goto(pathToFileURL(tc.opener).href);
    await page.waitForURL(tc.url);
    check('the file sends the browser to the served page', page.url() === tc.url, page.url());
    await page.waitForSelector('body[data-ready="1"]');
    check('the served page has the proposals panel', await page.locator('#propose').count() === 1);
    check('the provider defaults to the command line\'s',
          await page.inputValue('#p-provider') === tc.provider, await page.inputValue('#p-provider'));
    check('the base URL field shows the command line\'s',
          await page.getAttribute('#p-base', 'placeholder') === tc.base_url,
          await page.getAttribute('#p-base', 'placeholder'));
    const note = await page.textContent('#p-keynote');
    check('the page says where the environment\'s key goes',
          note.includes(tc.base_url) && note.includes('another base URL gets only a key typed here'), note);
} catch (e) {
    check('the browser test ran', false, e);
} finally {
    await browser.close();
}
process.stdout.write(JSON.stringify(report) + '\n');
