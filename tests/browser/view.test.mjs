// Browser checks of scry's HTML view (docs/viewer.md) in headless Chromium, driven by
// tests/e2e/test_view_html.py:
//   node view.test.mjs --node-modules DIR --chromium PATH --artifacts DIR CASE.json
// CASE.json: {"name", "html": page path, "profile": the profile JSON the page was made from,
// "threshold": the page's quiet-line threshold, "max_load_ms"}. Expectations are computed from
// the profile itself; the page is then driven as a user would (expand, sort, hide, zoom, search)
// while every console error, page error and request other than the page's own file:// URL is
// recorded. Prints one JSON report on stdout: {"name", "checks": [{"name", "ok", "detail"}],
// "load_ms", "render_ms", "screenshots"}; exits 0 when the browser ran, whatever the checks say.
import {readFileSync} from 'node:fs';

import {runPage, setup} from './harness.mjs';

const h = await setup();
const {tc, report, check} = h;
const profile = JSON.parse(readFileSync(tc.profile, 'utf8'));

// ---- expectations from the profile alone ----
const num = (v) => (typeof v === 'number' && isFinite(v) ? v : 0);
const files = Object.entries(profile.files || {});
const threshold = num(tc.threshold ?? 1);
const total = (e) => num(e.n_cpu_percent_python) + num(e.n_cpu_percent_c) + num(e.n_sys_percent);
function quiet(e, leaks) {
    return total(e) < threshold && num(e.n_gpu_percent) < threshold && !(num(e.n_malloc_mb) > 0) &&
        !(num(e.n_peak_mb) > 0) && !(num(e.n_copy_mb_s) > 0) && !(leaks && leaks[String(e.lineno)]);
}
const expectLines = files.reduce((s, [, d]) => s + (d.lines || []).length, 0);
const expectLoud = files.reduce((s, [, d]) => s + (d.lines || []).filter((e) => !quiet(e, d.leaks)).length, 0);
const expectLeaks = files.reduce((s, [, d]) => s + Object.keys(d.leaks || {}).length, 0);
const anyNonZero = (key) => files.some(([, d]) => (d.lines || []).concat(d.functions || []).some((e) => num(e[key]) > 0));
const hasStacks = Array.isArray(profile.stacks) && profile.stacks.length > 0;
function fmtSec(x) { /* as the page writes seconds (web/viewer.js) */
    x = num(x);
    if (x >= 120) return (x / 60).toFixed(1) + ' min';
    if (x >= 10) return x.toFixed(1) + ' s';
    return x.toFixed(3) + ' s';
}

await runPage(h, async (page, shot, url) => {
    // ---- load ----
    const t0 = Date.now();
    await page.goto(url, {waitUntil: 'load'});
    await page.waitForSelector('body[data-ready="1"]');
    report.load_ms = Date.now() - t0;
    report.render_ms = await page.evaluate(() => window.scry.renderMs);
    check('page loads within the limit', report.load_ms <= num(tc.max_load_ms || 10000),
          `${report.load_ms} ms (render ${report.render_ms.toFixed(0)} ms), limit ${tc.max_load_ms} ms`);
    await shot('loaded');

    const program = await page.textContent('#program');
    check('header names the program', typeof profile.program !== 'string' || program.includes(profile.program), program);
    if (profile.note) check('note shown', (await page.textContent('#note')).includes(profile.note.slice(0, 40)));
    check('one section per file', (await page.locator('section.file').count()) === files.length,
          `${await page.locator('section.file').count()} sections, ${files.length} files`);

    // ---- every file and line, after expanding ----
    await page.click('#expand-all');
    const rows = await page.locator('tr.line').count();
    check('every line rendered after expanding', rows === expectLines, `${rows} rows, ${expectLines} lines`);
    const perFile = await page.evaluate(() => Array.from(document.querySelectorAll('section.file')).map(
        (s) => [s.dataset.file, Array.from(s.querySelectorAll('tr.line')).map((tr) => Number(tr.dataset.l))]));
    let fileDetail = 'ok';
    for (const [name, nums] of perFile) {
        const want = (profile.files[name].lines || []).map((e) => e.lineno).sort((a, b) => a - b);
        if (JSON.stringify(nums) !== JSON.stringify(want)) { fileDetail = `${name}: rows ${nums.length}, lines ${want.length}`; break; }
    }
    check('each file shows its lines in source order', fileDetail === 'ok', fileDetail);
    const pcts = files.map(([n, d]) => [n, num(d.percent_cpu_time)]).sort((a, b) => b[1] - a[1]);
    check('files sorted by share of time', perFile.length === pcts.length && perFile.every(([n], i) => num(profile.files[n].percent_cpu_time) === pcts[i][1]),
          perFile.map(([n]) => n).join(', '));

    // ---- columns present only with data ----
    for (const [col, key] of [['malloc', 'n_malloc_mb'], ['peak', 'n_peak_mb'], ['held', 'n_max_held_mb'], ['growth', 'n_growth_mb'], ['copy', 'n_copy_mb_s'], ['gpu', 'n_gpu_percent']]) {
        const shown = (await page.locator('section.file').first().locator(`th[data-col="${col}"]`).count()) > 0;
        check(`column ${col} shown exactly when ${key} has values`, shown === anyNonZero(key), `shown ${shown}`);
    }
    if (anyNonZero('n_malloc_mb')) {
        check('memory sparklines drawn', (await page.locator('svg.spark').count()) > 0);
    }
    check('leaks marked', (await page.locator('tr.leak').count()) === expectLeaks,
          `${await page.locator('tr.leak').count()} marked, ${expectLeaks} leaks`);
    if (Array.isArray(profile.samples) && profile.samples.length) {
        check('footprint chart drawn', (await page.locator('#footprint path').count()) === 1);
        // Its time axis is the whole run (the end of the program, or the last sample if later),
        // and the line reaches the right end of the axis.
        const tEnd = Math.max(num(profile.elapsed_time_sec) * 1e9,
                              ...profile.samples.map((x) => num(Array.isArray(x) ? x[0] : 0)));
        const endLabel = await page.textContent('#footprint-end');
        check('footprint axis ends at the end of the run', endLabel === fmtSec(tEnd / 1e9), `${endLabel} vs ${fmtSec(tEnd / 1e9)}`);
        const d = await page.getAttribute('#footprint path', 'd');
        const axisEnd = await page.getAttribute('#footprint line', 'x2');
        const lastX = Number((d.match(/H(-?[0-9.]+)$/) || [])[1]);
        check('footprint line reaches the end of the axis', Math.abs(lastX - Number(axisEnd)) <= 0.5, `${lastX} vs ${axisEnd}`);
    }
    if (num(profile.sampled_time_sec) > 0 && files.length) {
        const shares = await page.textContent('#shares').catch(() => '');
        check('header says what the shares are of', shares.includes(fmtSec(profile.sampled_time_sec) + ' sampled'), shares);
    }
    const over = await page.locator('#oversubscribed').count();
    check('oversubscription warned exactly when marked', (over === 1) === (profile.oversubscribed === true), `${over} warnings, oversubscribed ${profile.oversubscribed}`);

    if (files.length) {
        // ---- sorting, in the first (largest) file ----
        const first = page.locator('section.file').first();
        const firstName = await first.getAttribute('data-file');
        const timeOf = new Map((profile.files[firstName].lines || []).map((e) => [e.lineno, total(e)]));
        const order = async () => first.evaluate((s) => Array.from(s.querySelectorAll('tr.line')).map((tr) => Number(tr.dataset.l)));
        const monotone = (ls, dir) => ls.every((l, i) => i === 0 || (timeOf.get(ls[i - 1]) - timeOf.get(l)) * dir >= -1e-9);
        await first.locator('th[data-col="time"]').click();
        let o = await order();
        check('sort by time: largest first', o.length === timeOf.size && monotone(o, 1), o.slice(0, 8).join(','));
        await shot('sorted');
        await first.locator('th[data-col="time"]').click();
        o = await order();
        check('sort by time again: reversed', o.length === timeOf.size && monotone(o, -1), o.slice(0, 8).join(','));
        await first.locator('th[data-col="time"]').click();
        o = await order();
        check('third click: source order', o.every((l, i) => i === 0 || o[i - 1] < l), o.slice(0, 8).join(','));
        await first.locator('th[data-col="lineno"]').click();
        o = await order();
        check('sort by line number: descending', o.every((l, i) => i === 0 || o[i - 1] > l), o.slice(0, 8).join(','));
        await first.locator('th[data-col="lineno"]').click();
        await first.locator('th[data-col="lineno"]').click();

        // ---- hiding quiet lines ----
        await page.check('#hide-quiet');
        const loud = await page.locator('tr.line').count();
        check('hide quiet lines: only the loud lines stay', loud === expectLoud && (expectLoud < expectLines ? loud < rows : true),
              `${loud} rows after hiding (expected ${expectLoud}), ${rows} before`);
        await shot('quiet-hidden');
        await page.uncheck('#hide-quiet');
        check('showing them again', (await page.locator('tr.line').count()) === expectLines);

        // ---- function view ----
        const nfuncs = (profile.files[firstName].functions || []).length;
        await first.locator('.views button[data-view="functions"]').click();
        check('function view lists every function', (await first.locator('tr.func').count()) === nfuncs,
              `${await first.locator('tr.func').count()} rows, ${nfuncs} functions`);
        await first.locator('.views button[data-view="lines"]').click();
    }

    // ---- flame graph ----
    if (hasStacks) {
        await page.locator('#flame-section').scrollIntoViewIfNeeded();
        const box = await page.locator('#flame').boundingBox();
        const frames = await page.locator('#flame .frame').count();
        check('flame graph has frames', frames > 1, `${frames} frames`);
        const sumCounts = profile.stacks.reduce((s, st) => s + num(st[1] && st[1].count), 0);
        const rootInfo = await page.evaluate(() => window.scry.flame.root.value);
        check('flame graph root holds every sample', rootInfo === sumCounts, `${rootInfo} vs ${sumCounts}`);
        // a frame below the root that does not fill the width yet
        const target = await page.evaluate((w) => {
            const els = Array.from(document.querySelectorAll('#flame .frame'));
            const cand = els.map((e) => ({id: e.dataset.id, w: e.getBoundingClientRect().width}))
                .filter((c) => c.id !== '0' && c.w > 20 && c.w < w * 0.9);
            cand.sort((a, b) => b.w - a.w);
            return cand.length ? cand[0] : null;
        }, box.width);
        check('flame graph has a frame narrower than the root', target !== null);
        if (target) {
            await page.click(`#flame .frame[data-id="${target.id}"]`);
            const after = await page.locator(`#flame .frame[data-id="${target.id}"]`).boundingBox();
            check('zoom: the clicked frame fills the width', after && Math.abs(after.width - box.width) <= 2,
                  `frame ${target.id}: ${target.w.toFixed(1)} px before, ${after && after.width.toFixed(1)} px after, box ${box.width.toFixed(1)} px`);
            await shot('flame-zoomed');
            // search: the zoomed frame's function name
            const name = await page.evaluate((id) => window.scry.flame.nodes[Number(id)].name, target.id);
            const term = name.slice(name.lastIndexOf(' ') + 1).split(':')[0];
            await page.click('#flame-reset');
            await page.fill('#flame-search', term);
            const matches = await page.evaluate(() => Array.from(document.querySelectorAll('#flame .frame.match'))
                .map((e) => window.scry.flame.nodes[Number(e.dataset.id)].name));
            const wrong = matches.filter((m) => !m.toLowerCase().includes(term.toLowerCase()));
            const visible = await page.evaluate((t) => Array.from(document.querySelectorAll('#flame .frame'))
                .filter((e) => window.scry.flame.nodes[Number(e.dataset.id)].name.toLowerCase().includes(t)).length, term.toLowerCase());
            check('search highlights the matching frames', matches.length > 0 && wrong.length === 0 && matches.length === visible,
                  `"${term}": ${matches.length} highlighted, ${visible} match, ${wrong.length} wrong`);
            await page.locator('#flame .frame.match').first().hover();
            const tip = await page.textContent('#tooltip');
            check('tooltip names the frame with its share', tip.includes(term) && /%/.test(tip), tip.slice(0, 120));
            await shot('flame-search');
            await page.fill('#flame-search', '');
            check('clearing the search clears the highlight', (await page.locator('#flame .frame.match').count()) === 0);
        }
    } else {
        check('no flame graph without stacks', (await page.locator('#flame').count()) === 0);
    }
});
