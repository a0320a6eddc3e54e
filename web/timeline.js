/* scry's browser view: the per-thread timeline of a profile recorded with --timeline (its
 * "sample_stream", docs/json-schema.md; docs/viewer.md). One lane per thread, each sample a
 * segment [t - weight, t] coloured by its kind (Python, native, system), cut where the thread's
 * previous sample ended: a CPU sample's weight is CPU time, which a thread sharing the CPU (or
 * the GIL) spreads over more wall time, so segments taken as they are would overlap and hide each
 * other; cut, the lane shows what each sample says of the time since the one before. Drawn on a
 * canvas so that the 100,000 samples a process may keep draw in one pass. Wheel or drag zooms,
 * hovering names the sample's line and time. Used by web/viewer.js, joined after this file. */
const ScryTimeline = (function () {
    'use strict';

    const LANE_H = 18;   /* px per thread */
    const AXIS_H = 20;   /* the time axis above the lanes */
    const LABEL_W = 180; /* the threads' names, left of the lanes */
    const KIND_NAMES = ['Python', 'native', 'system'];

    function num(v) {
        return typeof v === 'number' && isFinite(v) ? v : 0;
    }

    /* The lanes: per thread, typed arrays of its samples' start and end (µs since the program
     * started), kind and stack, in time order; null when the profile has no stream. */
    function buildModel(P) {
        const ss = P && P.sample_stream;
        if (!ss || typeof ss !== 'object' || !Array.isArray(ss.threads) || !Array.isArray(ss.samples) ||
            !ss.threads.length) return null;
        const nt = ss.threads.length;
        const pids = new Set(ss.threads.map((t) => (t && typeof t === 'object' ? num(t.pid) : 0)));
        const lanes = ss.threads.map((t, i) => {
            t = t && typeof t === 'object' ? t : {};
            const name = typeof t.name === 'string' && t.name ? t.name : 'thread ' + i;
            return {pid: num(t.pid), tid: num(t.tid), name: name, n: 0,
                    label: name + ' ' + num(t.tid) + (pids.size > 1 ? ' (pid ' + num(t.pid) + ')' : '')};
        });
        const ok = (s) => Array.isArray(s) && s.length >= 5 && Number.isInteger(s[1]) && s[1] >= 0 && s[1] < nt;
        for (const s of ss.samples) if (ok(s)) lanes[s[1]].n++;
        for (const l of lanes) {
            l.start = new Float64Array(l.n);
            l.end = new Float64Array(l.n);
            l.kind = new Uint8Array(l.n);
            l.stack = new Int32Array(l.n);
            l.n = 0;
        }
        let tEnd = num(P.elapsed_time_sec) * 1e6;
        for (const s of ss.samples) {
            if (!ok(s)) continue;
            const l = lanes[s[1]], i = l.n++;
            const t = Math.max(0, num(s[0]));
            l.end[i] = t;
            l.start[i] = Math.max(0, t - Math.max(0, num(s[3])));
            l.kind[i] = s[2] === 1 || s[2] === 2 ? s[2] : 0;
            l.stack[i] = Number.isInteger(s[4]) ? s[4] : -1;
            tEnd = Math.max(tEnd, t);
        }
        /* Each lane in time order (the stream is; a merged one may not be), for the binary search,
         * then each segment cut at the end of the one before it. */
        for (const l of lanes) {
            let sorted = true;
            for (let i = 1; i < l.n && sorted; i++) sorted = l.end[i - 1] <= l.end[i];
            if (sorted) continue;
            const idx = Array.from({length: l.n}, (_, i) => i).sort((a, b) => l.end[a] - l.end[b]);
            for (const k of ['start', 'end', 'kind', 'stack']) {
                const old = l[k].slice();
                idx.forEach((j, i) => { l[k][i] = old[j]; });
            }
        }
        for (const l of lanes) for (let i = 1; i < l.n; i++) l.start[i] = Math.max(l.start[i], l.end[i - 1]);
        const stacks = Array.isArray(ss.stacks) ? ss.stacks : [];
        return {lanes: lanes, stacks: stacks, tEnd: tEnd || 1, samples: ss.samples.length};
    }

    /* The first sample of a lane whose end is at or after t. */
    function firstEndingAfter(l, t) {
        let lo = 0, hi = l.n;
        while (lo < hi) {
            const mid = (lo + hi) >> 1;
            if (l.end[mid] < t) lo = mid + 1;
            else hi = mid;
        }
        return lo;
    }

    function fmtT(us, span) {
        const s = us / 1e6;
        if (span >= 10e6) return s.toFixed(1) + ' s';
        if (span >= 1e6) return s.toFixed(2) + ' s';
        if (span >= 1e4) return (us / 1e3).toFixed(1) + ' ms';
        return (us / 1e3).toFixed(3) + ' ms';
    }

    /* A tick step of 1, 2 or 5 times a power of ten giving about n ticks over span. */
    function tickStep(span, n) {
        const raw = span / Math.max(1, n), p = Math.pow(10, Math.floor(Math.log10(raw)));
        const m = raw / p;
        return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
    }

    function create(P, util) {
        const M = buildModel(P);
        if (!M) return null;
        const esc = util.esc;
        const section = document.createElement('section');
        section.id = 'timeline-section';
        section.innerHTML = '<h2>Timeline <span class="muted" style="font-weight:normal;font-size:13px">(' +
            M.lanes.length + ' thread' + (M.lanes.length === 1 ? '' : 's') + ', ' + M.samples.toLocaleString() +
            ' samples)</span></h2><div class="tlbox"><div class="toolbar" style="position:static;border:0;padding:0 0 6px">' +
            '<button id="timeline-reset">Reset zoom</button><span class="legend"><span><i class="sw sw-py"></i>Python</span>' +
            '<span><i class="sw sw-nat"></i>native</span><span><i class="sw sw-sys"></i>system</span></span>' +
            '<span class="muted" id="timeline-info"></span></div><canvas id="timeline"></canvas></div>' +
            '<div class="tooltip" id="timeline-tip"></div>';
        const view = {t0: 0, t1: M.tEnd, drag: null};
        let canvas = null, tip = null, colors = null;

        function geometry() {
            const w = Math.max(300, section.querySelector('.tlbox').clientWidth - 14);
            return {w: w, h: AXIS_H + M.lanes.length * LANE_H, x0: LABEL_W, pw: w - LABEL_W};
        }

        function draw() {
            if (!canvas) {
                canvas = section.querySelector('#timeline');
                tip = section.querySelector('#timeline-tip');
                const cs = getComputedStyle(document.documentElement);
                colors = ['--py', '--nat', '--sys'].map((v) => cs.getPropertyValue(v).trim() || '#888');
                wire();
            }
            const g = geometry(), dpr = window.devicePixelRatio || 1;
            canvas.width = Math.round(g.w * dpr);
            canvas.height = Math.round(g.h * dpr);
            canvas.style.width = g.w + 'px';
            canvas.style.height = g.h + 'px';
            const c = canvas.getContext('2d');
            c.setTransform(dpr, 0, 0, dpr, 0, 0);
            c.clearRect(0, 0, g.w, g.h);
            const span = view.t1 - view.t0, scale = g.pw / span, minW = 1 / dpr;
            /* axis */
            c.font = '11px system-ui, sans-serif';
            c.fillStyle = '#67707a';
            c.strokeStyle = '#e4e7eb';
            c.textBaseline = 'middle';
            const step = tickStep(span, Math.max(2, Math.floor(g.pw / 110)));
            for (let t = Math.ceil(view.t0 / step) * step; t <= view.t1; t += step) {
                const x = g.x0 + (t - view.t0) * scale;
                c.fillRect(x, AXIS_H - 5, 1, 5);
                c.fillText(fmtT(t, span), x + 3, AXIS_H / 2 - 1);
            }
            /* lanes: names, a faint band, then the samples one kind at a time (fewer colour changes) */
            M.lanes.forEach((l, li) => {
                const y = AXIS_H + li * LANE_H;
                c.fillStyle = li % 2 ? '#f7f8fa' : '#fdfdfe';
                c.fillRect(g.x0, y, g.pw, LANE_H);
                c.fillStyle = '#1d2228';
                c.fillText(l.label.length > 26 ? l.label.slice(0, 25) + '\u2026' : l.label, 4, y + LANE_H / 2);
                const from = firstEndingAfter(l, view.t0);
                for (let k = 0; k < 3; k++) {
                    c.fillStyle = colors[k];
                    for (let i = from; i < l.n && l.start[i] <= view.t1; i++) {
                        if (l.kind[i] !== k) continue;
                        const a = Math.max(l.start[i], view.t0), b = Math.min(l.end[i], view.t1);
                        c.fillRect(g.x0 + (a - view.t0) * scale, y + 2, Math.max(minW, (b - a) * scale), LANE_H - 4);
                    }
                }
            });
            if (view.drag && Math.abs(view.drag.x1 - view.drag.x0) > 1) {
                c.fillStyle = 'rgba(59,111,212,0.18)';
                c.fillRect(Math.min(view.drag.x0, view.drag.x1), AXIS_H, Math.abs(view.drag.x1 - view.drag.x0), g.h - AXIS_H);
            }
            section.querySelector('#timeline-info').textContent = 'showing ' + fmtT(view.t0, span) + ' to ' +
                fmtT(view.t1, span) + ' of ' + util.fmtSec(M.tEnd / 1e6) +
                '; drag across the lanes or turn the wheel to zoom, hover a segment for its line';
        }

        function setView(t0, t1) {
            const minSpan = Math.min(M.tEnd, 100); /* 100 µs: the samples are 10 ms apart by default */
            if (t1 - t0 < minSpan) { const m = (t0 + t1) / 2; t0 = m - minSpan / 2; t1 = m + minSpan / 2; }
            view.t0 = Math.max(0, t0);
            view.t1 = Math.min(M.tEnd, t1);
            if (view.t1 <= view.t0) { view.t0 = 0; view.t1 = M.tEnd; }
            draw();
        }

        /* The sample under a point of the canvas, or null. */
        function hit(x, y) {
            const g = geometry(), li = Math.floor((y - AXIS_H) / LANE_H);
            if (li < 0 || li >= M.lanes.length || x < g.x0) return null;
            const l = M.lanes[li], span = view.t1 - view.t0;
            const t = view.t0 + ((x - g.x0) / g.pw) * span;
            /* The segment under the point, else one within 2 px (a narrow one is hard to hit). */
            for (const slop of [0, (2 / g.pw) * span]) {
                for (let i = firstEndingAfter(l, t - slop); i < l.n && l.start[i] <= t + slop; i++) {
                    if (l.start[i] - slop <= t && t <= l.end[i] + slop) return {lane: l, i: i};
                }
            }
            return null;
        }

        function tipHTML(h) {
            const l = h.lane, i = h.i, st = M.stacks[l.stack[i]];
            const frames = Array.isArray(st) ? st.filter(Array.isArray) : [];
            const where = (f) => String(f[1]) + ' (' + util.basename(String(f[0])) + ':' + num(f[3]) + ')';
            let t = '<b>' + esc(frames.length ? where(frames[frames.length - 1]) : '(no line)') + '</b><br>' +
                esc(l.label) + ', ' + KIND_NAMES[l.kind[i]] + ', ' + esc(fmtT(l.end[i] - l.start[i], 1e4)) +
                ' ending at ' + esc(util.fmtSec(l.end[i] / 1e6));
            if (frames.length) t += '<br><span class="muted">' + esc(String(frames[frames.length - 1][0])) + '</span>';
            if (frames.length > 1) {
                t += '<br>called from ' + frames.slice(0, -1).reverse().slice(0, 6).map((f) => esc(where(f))).join(' \u2190 ') +
                    (frames.length > 7 ? ' \u2026' : '');
            }
            return t;
        }

        function wire() {
            const pos = (ev) => {
                const r = canvas.getBoundingClientRect();
                return [ev.clientX - r.left, ev.clientY - r.top];
            };
            canvas.addEventListener('wheel', (ev) => {
                const g = geometry(), p = pos(ev);
                if (p[0] < g.x0) return;
                ev.preventDefault();
                const span = view.t1 - view.t0, at = view.t0 + ((p[0] - g.x0) / g.pw) * span;
                const f = ev.deltaY < 0 ? 1 / 1.5 : 1.5;
                setView(at - (at - view.t0) * f, at + (view.t1 - at) * f);
            }, {passive: false});
            canvas.addEventListener('mousedown', (ev) => {
                const p = pos(ev);
                if (p[0] >= LABEL_W) view.drag = {x0: p[0], x1: p[0]};
            });
            window.addEventListener('mouseup', (ev) => {
                const d = view.drag;
                if (!d) return;
                view.drag = null;
                d.x1 = pos(ev)[0];
                const g = geometry();
                if (Math.abs(d.x1 - d.x0) < 4) { draw(); return; }
                const span = view.t1 - view.t0;
                const at = (x) => view.t0 + ((Math.min(g.w, Math.max(g.x0, x)) - g.x0) / g.pw) * span;
                setView(at(Math.min(d.x0, d.x1)), at(Math.max(d.x0, d.x1)));
            });
            canvas.addEventListener('mousemove', (ev) => {
                const p = pos(ev);
                if (view.drag) { view.drag.x1 = p[0]; draw(); }
                const h = hit(p[0], p[1]);
                if (!h) { tip.style.display = 'none'; return; }
                tip.innerHTML = tipHTML(h);
                tip.style.display = 'block';
                tip.style.left = Math.min(ev.clientX + 12, window.innerWidth - 380) + 'px';
                tip.style.top = ev.clientY + 14 + 'px';
            });
            canvas.addEventListener('mouseleave', () => { tip.style.display = 'none'; });
            section.querySelector('#timeline-reset').addEventListener('click', () => setView(0, M.tEnd));
            let pending = 0;
            window.addEventListener('resize', () => {
                cancelAnimationFrame(pending);
                pending = requestAnimationFrame(draw);
            });
        }

        /* model: for tests and the console (window.scry.timeline); view: the time shown, in µs. */
        M.view = view;
        M.setView = setView;
        M.hit = hit;
        return {section: section, draw: draw, model: M};
    }

    return {create: create};
})();
