// The inline output of %%scry (a notebook cell's text/html: scry's page in a sandboxed iframe's
// srcdoc) in headless Chromium, driven by tests/e2e/test_jupyter.py:
//   node jupyter.test.mjs NODE_MODULES_DIR CHROMIUM PNG HOST.html
// HOST.html holds the output as a notebook front end would put it in its page. Every request
// other than HOST.html's own file:// URL is recorded and refused (about: and data: URLs are no
// requests); the frame's page must finish rendering (body[data-ready="1"]). Prints one JSON
// report: {"requests", "errors", "ready", "frame_text", "screenshot"}.
import {resolve, join} from 'node:path';
import {pathToFileURL} from 'node:url';

const [nodeModules, chromiumPath, screenshot, host] = process.argv.slice(2).map((a) => resolve(a));
const {chromium} = await import(pathToFileURL(join(nodeModules, 'playwright-core', 'index.mjs')).href);

const report = {requests: [], errors: [], ready: false, frame_text: '', screenshot};
const browser = await chromium.launch({executablePath: chromiumPath, headless: true,
                                       args: ['--no-sandbox', '--disable-gpu']});
try {
    const context = await browser.newContext({viewport: {width: 1300, height: 850}});
    const url = pathToFileURL(host).href;
    // Recorded as the page (or its frame) makes them; refused, so that nothing leaves.
    await context.route('**/*', (route) => (route.request().url() === url ? route.continue()
                                                                           : route.abort()));
    const page = await context.newPage();
    page.on('request', (r) => { if (r.url() !== url) report.requests.push(r.method() + ' ' + r.url()); });
    page.on('console', (m) => { if (m.type() === 'error') report.errors.push(m.text()); });
    page.on('pageerror', (e) => report.errors.push(String(e)));
    page.setDefaultTimeout(30000);
    await page.goto(url, {waitUntil: 'load'});
    const frame = await (await page.waitForSelector('iframe')).contentFrame();
    await frame.waitForSelector('body[data-ready="1"]');
    report.ready = true;
    report.frame_text = await frame.evaluate(() => document.body.innerText);
    // The whole output fits the viewport: a full-page shot would resize it, and the rows
    // (content-visibility: auto) would be painted a frame late, blank.
    await page.waitForTimeout(300);
    await page.screenshot({path: screenshot});
} catch (e) {
    report.errors.push('driver: ' + String(e));
} finally {
    await browser.close();
}
console.log(JSON.stringify(report));
