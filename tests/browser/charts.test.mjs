// Browser checks of the pictures of scry's page (docs/viewer.md) in headless Chromium, driven by
// tests/e2e/test_view_charts.py:
//   node charts.test.mjs --node-modules DIR --chromium PATH --artifacts DIR CASE.json
// CASE.json: {"name", "html": the page, "profile": the document it embeds (a profile, or the
// compare page itself), and what to expect: "lanes", "memory_total_mb", "max_render_ms";
// "compare": true with "first_line", "significant_lines", "all_lines"}. Checks the memory flame
// graph (switch, root, zoom, search, tooltip), the per-thread timeline (a lane per thread, each
// painted, colours by kind, hover, wheel and drag zoom) and the compare page (order, escaping),
// recording console errors and requests. Prints one JSON report on stdout (as view.test.mjs)
// and exits 0 when the browser ran, whatever the checks say.
import {readFileSync} from 'node:fs';

import {runPage, setup} from './harness.mjs';

const h = await setup();
const {tc, report, check} = h;
const num = (v) => (typeof v === 'number' && isFinite(v) ? v : 0);

/* A frame of the shown flame graph narrower than the box, to zoom on: its id and width. */
async function narrowFrame(page, boxWidth) {
    return page.evaluate((w) => {
        const c = Array.from(document.querySelectorAll('#flame .frame'))
            .map((e) => ({id: e.dataset.id, w: e.getBoundingClientRect().width}))
            .filter((x) => x.id !== '0' && x.w > 20 && x.w < w * 0.9);
        c.sort((a, b) => b.w - a.w);
        return c.length ? c[0] : null;
    }, boxWidth);
}

async function memoryFlame(page, profile, shot) {
    const mem = Array.isArray(profile.memory_stacks) ? profile.memory_stacks : [];
    if (!mem.length) {
        check('no memory switch without memory_stacks', (await page.locator('#flame-kinds').count()) === 0 &&
              (await page.evaluate(() => window.scry.flames.memory)) === null);
        return;
    }
    const hasCpu = Array.isArray(profile.stacks) && profile.stacks.length > 0;
    if (hasCpu) {
        const switches = await page.locator('#flame-kinds button').count();
        check('a CPU / Memory switch with memory stacks', switches === 2, `${switches} buttons`);
        if (switches !== 2) return;
        check('the CPU flame graph is shown first', (await page.evaluate(() => window.scry.flame.kind)) === 'cpu');
        await page.click('#flame-kinds button[data-kind="memory"]');
    }
    await page.locator('#flame-section').scrollIntoViewIfNeeded();
    const title = await page.textContent('#flame-title');
    check('switched to the memory flame graph', title === 'Memory flame graph' &&
          (await page.evaluate(() => window.scry.flame.kind)) === 'memory', title);
    const sum = mem.reduce((s, st) => s + num(st[1]), 0);
    const root = await page.evaluate(() => window.scry.flame.root.value);
    check('memory flame graph root holds every memory stack', Math.abs(root - sum) <= 1e-6 * Math.max(1, sum), `${root} vs ${sum}`);
    if (tc.memory_total_mb !== undefined) {
        /* The lines' n_malloc_mb are rounded as the stacks' MB are: a hundredth per entry at most. */
        const tol = 0.01 * Math.max(1, mem.length) + 1e-6;
        check('memory flame graph root is the total sampled allocation', Math.abs(root - tc.memory_total_mb) <= tol,
              `${root} MB vs ${tc.memory_total_mb} MB of the lines`);
    }
    const src = await page.textContent('#flame-source');
    check('memory graph says what it counts', /memory_stacks/.test(src) && /MB allocated/.test(src), src);
    const box = await page.locator('#flame').boundingBox();
    const target = await narrowFrame(page, box.width);
    if (target) {
        await page.click(`#flame .frame[data-id="${target.id}"]`);
        const after = await page.locator(`#flame .frame[data-id="${target.id}"]`).boundingBox();
        check('memory zoom: the clicked frame fills the width', after && Math.abs(after.width - box.width) <= 2,
              `${target.w.toFixed(1)} px before, ${after && after.width.toFixed(1)} px after, box ${box.width.toFixed(1)} px`);
        const name = await page.evaluate((id) => window.scry.flame.nodes[Number(id)].name, target.id);
        const term = name.slice(name.lastIndexOf(' ') + 1).split(':')[0];
        await page.click('#flame-reset');
        await page.fill('#flame-search', term);
        const res = await page.evaluate((t) => {
            const els = Array.from(document.querySelectorAll('#flame .frame'));
            const nm = (e) => window.scry.flame.nodes[Number(e.dataset.id)].name.toLowerCase();
            return {hi: els.filter((e) => e.classList.contains('match')).length,
                    wrong: els.filter((e) => e.classList.contains('match') && !nm(e).includes(t)).length,
                    want: els.filter((e) => e.dataset.id !== '0' && nm(e).includes(t)).length};
        }, term.toLowerCase());
        check('memory search highlights the matching frames', res.hi > 0 && res.wrong === 0 && res.hi === res.want,
              `"${term}": ${JSON.stringify(res)}`);
        const info = await page.textContent('#flame-info');
        check('memory search says its share of the bytes', /of the bytes allocated/.test(info), info);
        await page.locator('#flame .frame.match').first().hover();
        const tip = await page.textContent('#tooltip');
        check('memory tooltip gives MB and share', tip.includes(term) && /MB/.test(tip) && /%/.test(tip), tip.slice(0, 160));
        await shot('memory-flame');
        await page.fill('#flame-search', '');
    } else {
        check('memory flame graph has a frame narrower than the root', false, 'none');
    }
    if (hasCpu) {
        await page.click('#flame-kinds button[data-kind="cpu"]');
        const cpuSum = profile.stacks.reduce((s, st) => s + num(st[1] && st[1].count), 0);
        const r = await page.evaluate(() => [window.scry.flame.kind, window.scry.flame.root.value]);
        check('switching back shows the CPU graph', r[0] === 'cpu' && r[1] === cpuSum, `${r} vs ${cpuSum}`);
    }
}

async function timeline(page, profile, shot) {
    const ss = profile.sample_stream;
    if (!ss || !Array.isArray(ss.threads) || !ss.threads.length) {
        check('no timeline without a sample stream', (await page.locator('#timeline').count()) === 0);
        return;
    }
    const drawn = await page.locator('#timeline').count();
    check('a timeline with a sample stream', drawn === 1 && (await page.evaluate(() => !!window.scry.timeline)), `${drawn} canvases`);
    if (drawn !== 1) return;
    await page.locator('#timeline-section').scrollIntoViewIfNeeded();
    const m = await page.evaluate(() => {
        const M = window.scry.timeline;
        return {lanes: M.lanes.length, counts: M.lanes.map((l) => l.n), tEnd: M.tEnd, view: [M.view.t0, M.view.t1]};
    });
    const want = ss.threads.map((_, i) => ss.samples.filter((s) => s[1] === i).length);
    check('one lane per thread', m.lanes === ss.threads.length && (tc.lanes === undefined || m.lanes === tc.lanes),
          `${m.lanes} lanes, ${ss.threads.length} threads, expected ${tc.lanes}`);
    check('each lane holds its thread\'s samples', JSON.stringify(m.counts) === JSON.stringify(want), `${m.counts} vs ${want}`);
    // Pixels: every lane with samples has painted pixels in the colours of the kinds. The canvas
    // is read through a copy made for reading (the page's own is drawn, never read).
    const painted = await page.evaluate(() => {
        const cv = document.getElementById('timeline'), c = readable(cv);
        const dpr = cv.width / cv.clientWidth, M = window.scry.timeline;
        const cs = getComputedStyle(document.documentElement);
        const rgb = ['--py', '--nat', '--sys'].map((v) => {
            const h = cs.getPropertyValue(v).trim();
            return [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16));
        });
        return M.lanes.map((l, i) => {
            const y = Math.round((20 + i * 18 + 9) * dpr);
            const d = c.getImageData(0, y, cv.width, 1).data;
            let n = 0;
            for (let x = Math.round(180 * dpr); x < cv.width; x++) {
                const p = [d[4 * x], d[4 * x + 1], d[4 * x + 2]];
                if (rgb.some((q) => Math.abs(q[0] - p[0]) + Math.abs(q[1] - p[1]) + Math.abs(q[2] - p[2]) < 12)) n++;
            }
            return n;
        });
    });
    check('every thread\'s lane is painted', painted.every((n, i) => (want[i] > 0) === (n > 0)), painted.join(','));
    // The longest Python segment, zoomed to an eighth of the width: its pixel has Python's colour
    // and hovering it names its line.
    const seg = await page.evaluate(() => {
        const M = window.scry.timeline;
        let best = null;
        M.lanes.forEach((l, li) => {
            for (let i = 0; i < l.n; i++) {
                if (l.kind[i] === 0 && (!best || l.end[i] - l.start[i] > best.len)) best = {li: li, i: i, len: l.end[i] - l.start[i]};
            }
        });
        if (!best) return null;
        const l = M.lanes[best.li], cv = document.getElementById('timeline'), r = cv.getBoundingClientRect();
        const pw = cv.clientWidth - 180, mid = (l.start[best.i] + l.end[best.i]) / 2;
        M.setView(mid - 4 * best.len, mid + 4 * best.len);
        const x = 180 + ((mid - M.view.t0) / (M.view.t1 - M.view.t0)) * pw, y = 20 + best.li * 18 + 9;
        const px = readable(cv).getImageData(Math.round(x * cv.width / cv.clientWidth), Math.round(y * cv.width / cv.clientWidth), 1, 1).data;
        const st = M.stacks[l.stack[best.i]];
        const f = st[st.length - 1];
        return {x: r.left + x, y: r.top + y, px: Array.from(px).slice(0, 3), want: String(f[1]) + ' (' + String(f[0]).split('/').pop() + ':' + f[3] + ')',
                py: getComputedStyle(document.documentElement).getPropertyValue('--py').trim(), wpx: (l.end[best.i] - l.start[best.i]) / (M.view.t1 - M.view.t0) * pw};
    });
    if (seg) {
        const hex = '#' + seg.px.map((v) => v.toString(16).padStart(2, '0')).join('');
        check('a Python segment is drawn in Python\'s colour', hex === seg.py.toLowerCase(), `${hex} vs ${seg.py} (${seg.wpx.toFixed(1)} px wide)`);
        await page.mouse.move(seg.x, seg.y);
        const tip = await page.textContent('#timeline-tip');
        const shown = await page.evaluate(() => getComputedStyle(document.getElementById('timeline-tip')).display);
        check('hovering a Python segment names its line', shown === 'block' && tip.includes(seg.want) && /Python/.test(tip),
              `"${tip.slice(0, 160)}" wants "${seg.want}"`);
        await shot('timeline-hover');
        await page.click('#timeline-reset');
        // Wheel over the lanes: zooms in around the cursor.
        const box = await page.locator('#timeline').boundingBox();
        const pw = box.width - 180, y = box.y + 20 + 9;
        await page.mouse.move(box.x + 180 + pw / 2, y);
        await page.mouse.wheel(0, -300);
        await page.waitForFunction((t) => window.scry.timeline.view.t1 - window.scry.timeline.view.t0 < t, m.tEnd * 0.9,
                                   {timeout: 10000}).catch(() => null);
        const v = await page.evaluate(() => [window.scry.timeline.view.t0, window.scry.timeline.view.t1]);
        check('wheel zooms in', v[1] - v[0] < m.tEnd * 0.9 && v[0] >= 0 && v[1] <= m.tEnd, `${v} of ${m.tEnd}`);
        await page.click('#timeline-reset');
        const r = await page.evaluate(() => [window.scry.timeline.view.t0, window.scry.timeline.view.t1]);
        check('reset shows the whole run', r[0] === 0 && r[1] === m.tEnd, `${r}`);
        // Drag across the middle half of the lanes: the view becomes that half.
        await page.mouse.move(box.x + 180 + pw * 0.25, y);
        await page.mouse.down();
        await page.mouse.move(box.x + 180 + pw * 0.5, y, {steps: 4});
        await page.mouse.move(box.x + 180 + pw * 0.75, y, {steps: 4});
        await page.mouse.up();
        const d = await page.evaluate(() => [window.scry.timeline.view.t0, window.scry.timeline.view.t1]);
        const near = (a, b) => Math.abs(a - b) <= m.tEnd * 0.01;
        check('dragging zooms to the dragged range', near(d[0], m.tEnd * 0.25) && near(d[1], m.tEnd * 0.75), `${d} of ${m.tEnd}`);
        await shot('timeline-zoomed');
        await page.click('#timeline-reset');
    } else {
        check('the stream has a Python sample', false, 'none');
    }
}

async function comparePage(page, shot) {
    check('compare page titled', (await page.textContent('#program')) === 'scry compare');
    const rows = await page.evaluate(() => Array.from(document.querySelectorAll('#cmp-lines tbody tr')).map((tr) => tr.dataset.where));
    check('the changed line first', rows.length > 0 && rows[0].startsWith(tc.first_line), `${rows[0]} vs ${tc.first_line}`);
    check('only the significant lines at first', rows.length === tc.significant_lines, `${rows.length} rows, ${tc.significant_lines} significant`);
    const cell = await page.textContent('#cmp-lines tbody tr .where');
    check('the file name shown as text', cell.includes('<img src=x onerror='), cell.slice(0, 120));
    const injected = await page.evaluate(() => ({img: document.querySelectorAll('img, iframe, script[src]').length, pwned: window.__pwned === 1,
        scripts: document.querySelectorAll('script').length}));
    check('no script injected by a file name', injected.img === 0 && !injected.pwned && injected.scripts === 3, JSON.stringify(injected));
    const first = await page.textContent('#cmp-lines tbody tr .pct');
    check('the change is a percentage or new', /^(\+|-)?[0-9]+%$|^new$/.test(first), first);
    await shot('compare');
    await page.check('#show-all');
    const all = await page.locator('#cmp-lines tbody tr').count();
    check('showing every entry', all === tc.all_lines, `${all} rows, ${tc.all_lines} lines`);
    await shot('compare-all');
}

await runPage(h, async (page, shot, url) => {
    /* readable(canvas): a 2D context of a copy of it, made for reading back. */
    await page.addInitScript(() => {
        window.readable = (cv) => {
            const c = document.createElement('canvas');
            c.width = cv.width;
            c.height = cv.height;
            const x = c.getContext('2d', {willReadFrequently: true});
            x.drawImage(cv, 0, 0);
            return x;
        };
    });
    const t0 = Date.now();
    await page.goto(url, {waitUntil: 'load'});
    await page.waitForSelector('body[data-ready="1"]');
    report.load_ms = Date.now() - t0;
    report.render_ms = await page.evaluate(() => window.scry.renderMs);
    if (tc.max_render_ms !== undefined) {
        /* The page's own clock (performance.now from the script's start to the page ready):
         * parsing, the flame graphs, the timeline and the open files, without the file's load. */
        check('interactive within the limit (renderMs)', report.render_ms <= tc.max_render_ms,
              `${report.render_ms.toFixed(0)} ms, limit ${tc.max_render_ms} ms (load ${report.load_ms} ms)`);
    }
    await shot('loaded');
    if (tc.compare) {
        await comparePage(page, shot);
    } else {
        const profile = JSON.parse(readFileSync(tc.profile, 'utf8'));
        await memoryFlame(page, profile, shot);
        await timeline(page, profile, shot);
    }
});
