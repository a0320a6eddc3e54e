// What the page tests driven by pytest share (view.test.mjs, charts.test.mjs): their command
// line (--node-modules DIR --chromium PATH --artifacts DIR CASE.json), the JSON report they print
// on stdout ({"name", "checks": [{"name", "ok", "detail"}], "load_ms", "render_ms",
// "screenshots"}), and a page in headless Chromium whose console errors and warnings, page errors
// and requests other than its own file:// URL are recorded and checked at the end.
import {readFileSync, mkdirSync} from 'node:fs';
import {join, resolve} from 'node:path';
import {pathToFileURL} from 'node:url';

function arg(name, dflt) {
    const i = process.argv.indexOf('--' + name);
    return i >= 0 ? process.argv[i + 1] : dflt;
}

/* The case (CASE.json, the last argument), playwright-core, and the report with its check(). */
export async function setup() {
    const nodeModules = resolve(arg('node-modules', 'build/node_modules'));
    const artifacts = resolve(arg('artifacts', 'build/test-artifacts'));
    const tc = JSON.parse(readFileSync(process.argv[process.argv.length - 1], 'utf8'));
    mkdirSync(artifacts, {recursive: true});
    const {chromium} = await import(pathToFileURL(join(nodeModules, 'playwright-core', 'index.mjs')).href);
    const report = {name: tc.name, checks: [], load_ms: null, render_ms: null, screenshots: []};
    const check = (name, ok, detail = '') => report.checks.push({name, ok: !!ok, detail: String(detail)});
    return {tc, artifacts, chromium, chromiumPath: arg('chromium', '/usr/bin/chromium'), report, check};
}

/* Opens tc.html in headless Chromium and runs body(page, shot, url) on it (shot(what) saves a
 * screenshot under the artifacts folder); then checks that the page made no console error or
 * warning, no page error and no request, and prints the report. Exits normally when the browser
 * ran, whatever the checks say. */
export async function runPage(h, body) {
    const {tc, artifacts, report, check} = h;
    const browser = await h.chromium.launch({executablePath: h.chromiumPath, headless: true,
                                             args: ['--no-sandbox', '--disable-gpu']});
    const problems = {console: [], pageerror: [], requests: []};
    try {
        const context = await browser.newContext({viewport: {width: 1400, height: 900}});
        const page = await context.newPage();
        const url = pathToFileURL(resolve(tc.html)).href;
        page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.console.push(m.type() + ': ' + m.text()); });
        page.on('pageerror', (e) => problems.pageerror.push(String(e)));
        page.on('request', (r) => { if (r.url() !== url) problems.requests.push(r.method() + ' ' + r.url()); });
        page.setDefaultTimeout(60000);
        const shot = async (what) => {
            const p = join(artifacts, `${tc.name}-${what}.png`);
            await page.screenshot({path: p});
            report.screenshots.push(p);
        };
        await body(page, shot, url);
        await page.waitForTimeout(100);
    } finally {
        await browser.close();
    }
    check('no console errors or warnings', problems.console.length === 0, problems.console.slice(0, 5).join(' | '));
    check('no page errors', problems.pageerror.length === 0, problems.pageerror.slice(0, 5).join(' | '));
    check('no network requests', problems.requests.length === 0, problems.requests.slice(0, 5).join(' | '));
    process.stdout.write(JSON.stringify(report) + '\n');
}
