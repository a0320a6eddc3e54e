// The inline output of %%scry (a notebook cell's text/html: scry's page in a sandboxed iframe's
// srcdoc) in headless Chromium, driven by tests/e2e/test_jupyter.py:
//   node jupyter.test.mjs --node-modules DIR --chromium PATH --screenshot PNG HOST.html
// HOST.html holds the output as a notebook front end would put it in its page. Every request
// other than HOST.html's own file:// URL is recorded and refused (about: and data: URLs are no
// requests); the frame's page must finish rendering (body[data-ready="1"]). Prints one JSON
// report: {"requests", "errors", "ready", "frame_text", "screenshot"}.
import {resolve, join} from 'node:path';
import {pathToFileURL} from 'node:url';

function arg(name, dflt) {
    const i = process.argv.indexOf('--' + name);
    return i >= 0 ? process.argv[i + 1] : dflt;
}

const nodeModules = resolve(arg('node-modules', 'build/node_modules'));
const chromiumPath = arg('chromium', '/usr/bin/chromium');
const screenshot = resolve(arg('screenshot', 'jupyter-cell.png'));
const host = resolve(process.argv[process.argv.length - 1]);
const {chromium} = await import(pathToFileURL(join(nodeModules, 'playwright-core', 'index.mjs')).href);

const report = {requests: [], errors: [], ready: false, frame_text: '', screenshot};
const browser = await chromium.launch({executablePath: chromiumPath, headless: true,
                                       args: ['--no-sandbox', '--disable-gpu']});
try {
    const context = await browser.newContext({viewport: {width: 1300, height: 760}});
    const url = pathToFileURL(host).href;
    await context.route('**/*', (route) => {
        if (route.request().url() === url)
            return route.continue();
        report.requests.push(route.request().method() + ' ' + route.request().url());
        return route.abort();
    });
    const page = await context.newPage();
    page.on('request', (r) => {
        const u = r.url();
        if (u !== url && !report.requests.includes(r.method() + ' ' + u))
            report.requests.push(r.method() + ' ' + u);
    });
    page.on('console', (m) => { if (m.type() === 'error') report.errors.push(m.text()); });
    page.on('pageerror', (e) => report.errors.push(String(e)));
    page.setDefaultTimeout(30000);
    await page.goto(url, {waitUntil: 'load'});
    const frame = await (await page.waitForSelector('iframe')).contentFrame();
    await frame.waitForSelector('body[data-ready="1"]');
    report.ready = true;
    report.frame_text = await frame.evaluate(() => document.body.innerText);
    await page.waitForTimeout(300); // the page's bars settle
    await page.screenshot({path: screenshot, fullPage: true});
} catch (e) {
    report.errors.push('driver: ' + String(e));
} finally {
    await browser.close();
}
console.log(JSON.stringify(report));
