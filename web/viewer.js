/* scry's browser view (docs/viewer.md): renders the profile embedded in the page (Scalene's JSON
 * schema plus scry's fields, docs/json-schema.md) without any framework, build step or network
 * request. Files are collapsed except the top few and a file's rows are built only when it is
 * opened, each table in one innerHTML assignment, so that profiles of 10,000 lines open quickly. */
(function () {
    'use strict';

    const START = performance.now();
    const cfg = readJSON('scry-config') || {};
    const P = readJSON('scry-profile') || {};
    /* `scry compare --html` embeds a comparison, not a profile: its page is web/compare.js's. */
    if (cfg.page === 'compare') {
        ScryCompare.main(P, cfg, START);
        return;
    }
    const THRESHOLD_DEFAULT = isFinite(cfg.threshold) ? cfg.threshold : 1;
    const HOT_PERCENT = 33; /* Scalene's hot threshold, as in the terminal view */
    const OPEN_FILES = 3;   /* files open at load; the others are built when opened */
    const FRAME_H = 18;
    /* Rows go into tables of CHUNK rows, each in a box with content-visibility: auto, so that the
     * browser lays out only the chunks on screen; ROW_H (as in viewer.css) sizes the others. */
    const CHUNK = 200;
    const ROW_H = 19;

    function readJSON(id) {
        const el = document.getElementById(id);
        if (!el) return null;
        const t = el.textContent.trim();
        return t ? JSON.parse(t) : null;
    }

    function num(v) {
        return typeof v === 'number' && isFinite(v) ? v : 0;
    }

    const ESC = {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'};
    function esc(s) {
        return String(s).replace(/[&<>"']/g, (c) => ESC[c]);
    }

    /* Scalene writes &, <, > in source lines as the six-character strings \u0026 \u003c \u003e. */
    function sourceText(s) {
        if (typeof s !== 'string') return '';
        return s.replace(/\\u0026/g, '&').replace(/\\u003c/g, '<').replace(/\\u003e/g, '>')
            .replace(/\r?\n$/, '');
    }

    function fmtPct(v) {
        if (!(v > 0)) return '';
        if (v < 0.05) return '<0.1%';
        return (v >= 10 ? v.toFixed(0) : v.toFixed(1)) + '%';
    }
    function fmtNum(v) {
        if (!(v > 0)) return '';
        if (v >= 100) return v.toFixed(0);
        if (v >= 1) return v.toFixed(1);
        if (v >= 0.01) return v.toFixed(2);
        return '<0.01';
    }
    function fmtInt(v) {
        return v > 0 ? String(Math.round(v)) : '';
    }
    function fmtSec(s) {
        s = num(s);
        if (s >= 120) return (s / 60).toFixed(1) + ' min';
        if (s >= 10) return s.toFixed(1) + ' s';
        return s.toFixed(3) + ' s';
    }
    function basename(p) {
        const i = String(p).lastIndexOf('/');
        return i >= 0 ? p.slice(i + 1) : String(p);
    }

    /* ---- the model: per file, rows of plain numbers ------------------------------------------ */

    function row(e, isLine, leaks) {
        const py = num(e.n_cpu_percent_python), nat = num(e.n_cpu_percent_c),
            sys = num(e.n_sys_percent);
        const ms = Array.isArray(e.memory_samples) ? e.memory_samples : [];
        let sparkMax = 0;
        for (const s of ms) if (Array.isArray(s)) sparkMax = Math.max(sparkMax, num(s[1]));
        const lineno = Number.isInteger(e.lineno) ? e.lineno : 0;
        const leak = isLine && leaks ? leaks[String(lineno)] : undefined;
        return {
            lineno: lineno,
            text: isLine ? sourceText(e.line) : String(e.line == null ? '' : e.line),
            py: py, nat: nat, sys: sys, time: py + nat + sys,
            samples: num(e.n_samples),
            malloc: num(e.n_malloc_mb), peak: num(e.n_peak_mb), growth: num(e.n_growth_mb),
            held: num(e.n_max_held_mb), /* absent from profiles of older agents: 0, no column */
            usage: num(e.n_usage_fraction) * 100,
            pyfrac: num(e.n_python_fraction), copy: num(e.n_copy_mb_s),
            timeline: sparkMax, spark: ms,
            gpu: num(e.n_gpu_percent), gpuavg: num(e.n_gpu_avg_memory_mb),
            gpupeak: num(e.n_gpu_peak_memory_mb),
            leak: leak && typeof leak === 'object' ? leak : null,
        };
    }

    const files = [];
    const filesObj = P.files && typeof P.files === 'object' ? P.files : {};
    for (const name of Object.keys(filesObj)) {
        const d = filesObj[name] || {};
        const leaks = d.leaks && typeof d.leaks === 'object' ? d.leaks : null;
        const lines = (Array.isArray(d.lines) ? d.lines : []).map((e) => row(e || {}, true, leaks));
        lines.sort((a, b) => a.lineno - b.lineno);
        const funcs = (Array.isArray(d.functions) ? d.functions : []).map((e) => row(e || {}, false));
        funcs.sort((a, b) => a.lineno - b.lineno);
        files.push({
            name: name, pct: num(d.percent_cpu_time), samples: num(d.n_samples), lines: lines,
            funcs: funcs, nleaks: leaks ? Object.keys(leaks).length : 0,
            open: false, built: false, view: 'lines', sort: null, el: null,
        });
    }
    /* "first_file" (a notebook cell's own file): first, whatever its share. */
    const firstFile = typeof P.first_file === 'string' ? P.first_file : null;
    files.sort((a, b) => (b.name === firstFile) - (a.name === firstFile) || b.pct - a.pct ||
        (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));

    /* Time axis of the sparklines: the whole run, so that they line up from row to row. */
    let tEnd = num(P.elapsed_time_sec) * 1e9;
    for (const s of Array.isArray(P.samples) ? P.samples : []) if (Array.isArray(s)) tEnd = Math.max(tEnd, num(s[0]));

    /* Columns. The optional ones appear only when some line or function has a non-zero value. */
    const COLS = [
        {id: 'lineno', label: 'Line', w: 52, always: true, title: 'line number (function: first line)'},
        {id: 'time', label: 'Time', w: 124, always: true, title: 'Python + native + system, % of the sampled time'},
        {id: 'py', label: 'Python', w: 60, always: true, cls: 'c-py', fmt: fmtPct, title: 'running Python bytecode'},
        {id: 'nat', label: 'native', w: 60, always: true, cls: 'c-nat', fmt: fmtPct, title: 'inside a call into C (builtins, extensions)'},
        {id: 'sys', label: 'system', w: 60, always: true, cls: 'c-sys', fmt: fmtPct, title: 'off the CPU: sleep, I/O, locks, and waiting for a CPU (see oversubscribed)'},
        {id: 'samples', label: 'Samples', w: 66, fmt: fmtInt, title: 'samples behind the numbers'},
        {id: 'malloc', label: 'Alloc MB', w: 80, bar: 'mbar', fmt: fmtNum, title: 'memory allocated (n_malloc_mb)'},
        {id: 'peak', label: 'Peak MB', w: 80, bar: 'mbar', fmt: fmtNum, title: 'the most held during one execution (n_peak_mb)'},
        {id: 'held', label: 'Held MB', w: 76, bar: 'mbar', fmt: fmtNum, title: 'the most it held at once, a cache before each trim (n_max_held_mb); peak is one execution\'s'},
        {id: 'growth', label: 'Net MB', w: 72, fmt: fmtNum, title: 'allocated and not freed (n_growth_mb)'},
        {id: 'usage', label: 'Mem %', w: 64, fmt: fmtPct, title: 'share of all bytes allocated (n_usage_fraction)'},
        {id: 'pyfrac', label: 'Py mem', w: 72, fmt: (v) => fmtPct(v * 100), title: 'share allocated by Python (n_python_fraction)'},
        {id: 'timeline', label: 'Timeline', w: 72, spark: true, title: 'memory over the run (memory_samples); sorts by its peak'},
        {id: 'copy', label: 'Copy MB/s', w: 74, fmt: fmtNum, title: 'copy volume (n_copy_mb_s)'},
        {id: 'gpu', label: 'GPU %', w: 80, bar: 'gbar', fmt: fmtPct, title: 'GPU utilisation (n_gpu_percent)'},
        {id: 'gpuavg', label: 'GPU avg', w: 80, fmt: fmtNum, title: 'GPU memory, average'},
        {id: 'gpupeak', label: 'GPU peak', w: 84, fmt: fmtNum, title: 'GPU memory, peak'},
        {id: 'src', label: 'Source', src: true, always: true},
    ];
    const colMax = {};
    for (const c of COLS) colMax[c.id] = 0;
    for (const f of files) {
        for (const list of [f.lines, f.funcs]) {
            for (const r of list) {
                for (const c of COLS) if (!c.src && r[c.id] > colMax[c.id]) colMax[c.id] = r[c.id];
            }
        }
    }
    const cols = COLS.filter((c) => c.always || colMax[c.id] > 0);
    /* Fixed column widths (table-layout: fixed) keep the chunks' columns aligned; the source
     * column takes the rest, at least 320 px. */
    const COLGROUP = '<colgroup>' + cols.map((c) => (c.w ? '<col style="width:' + c.w + 'px">' : '<col>')).join('') + '</colgroup>';
    const TABLE_MIN_W = cols.reduce((s, c) => s + (c.w || 320), 0);
    const hasMemory = ['malloc', 'peak', 'held', 'growth', 'timeline', 'copy'].some((k) => colMax[k] > 0);
    /* Row sparklines share the program's scale (Scalene's [0, max footprint]) so that heights
     * compare between rows; a profile without it scales each row to its own peak. */
    const FOOTPRINT_MAX = num(P.max_footprint_mb);
    const hasGPU = ['gpu', 'gpuavg', 'gpupeak'].some((k) => colMax[k] > 0);

    const state = {hideQuiet: false, threshold: THRESHOLD_DEFAULT};

    function isQuiet(r) {
        return r.time < state.threshold && r.gpu < state.threshold && !(r.malloc > 0) &&
            !(r.peak > 0) && !(r.copy > 0) && !r.leak;
    }

    /* ---- cells and rows ------------------------------------------------------------------------ */

    function sparkSVG(ms, max) {
        if (!ms.length || !(max > 0)) return '';
        const W = 64, H = 16, span = tEnd > 0 ? tEnd : 1;
        let pts = '';
        for (const s of ms) {
            if (!Array.isArray(s)) continue;
            const x = Math.min(W, (num(s[0]) / span) * W), y = H - 1 - (num(s[1]) / max) * (H - 2);
            pts += x.toFixed(1) + ',' + y.toFixed(1) + ' ';
        }
        return '<svg class="spark" width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + ' ' + H +
            '"><polyline points="' + pts + '"/></svg>';
    }

    function cell(c, r, isLine) {
        const v = r[c.id];
        switch (c.id) {
        case 'lineno':
            return '<td class="ln">' + (r.lineno || '') + '</td>';
        case 'time': {
            if (!(v > 0)) return '<td></td>';
            const w = (x) => Math.max(x > 0 ? 1 : 0, x * 0.6).toFixed(2); /* 60 px: 100% */
            return '<td><span class="tbar"><i class="b-py" style="width:' + w(r.py) +
                'px"></i><i class="b-nat" style="width:' + w(r.nat) + 'px"></i><i class="b-sys" style="width:' +
                w(r.sys) + 'px"></i></span>' + '<span class="tnum">' + fmtPct(v) + '</span></td>';
        }
        case 'timeline':
            return '<td>' + sparkSVG(r.spark, FOOTPRINT_MAX > 0 ? FOOTPRINT_MAX : r.timeline) + '</td>';
        case 'src': {
            let t = '';
            if (r.leak) {
                const lk = r.leak;
                t = '<span class="leakmark" title="possible leak: likelihood ' +
                    esc(fmtPct(num(lk.likelihood) * 100) || '0%') + ', ' + esc(fmtNum(num(lk.velocity_mb_s)) || '0') +
                    ' MB/s">leak</span>';
            }
            const pb = SERVE && (!isLine || r.text.trim()) ? '<button class="prop" title="propose a faster version of this ' +
                (isLine ? 'line (or of the selected lines)' : 'function') + '">propose</button>' : '';
            return '<td class="src">' + pb + t + esc(r.text) + '</td>';
        }
        }
        if (!(v > 0)) return '<td></td>';
        let bar = '';
        if (c.bar) bar = '<span class="' + c.bar + '" style="width:' + Math.max(1, (v / colMax[c.id]) * 30).toFixed(1) + 'px"></span>';
        return '<td' + (c.cls ? ' class="' + c.cls + '"' : '') + '>' + bar + c.fmt(v) + '</td>';
    }

    function rowsHTML(f) {
        const isLine = f.view === 'lines';
        let list = isLine ? f.lines : f.funcs;
        const out = [];
        if (f.sort) {
            const id = f.sort.col, dir = f.sort.dir;
            list = list.slice();
            if (id === 'src') {
                list.sort((a, b) => (a.text < b.text ? -dir : a.text > b.text ? dir : a.lineno - b.lineno));
            } else {
                list.sort((a, b) => (a[id] - b[id]) * dir || a.lineno - b.lineno);
            }
        }
        const ncols = cols.length;
        let gap = 0;
        const flushGap = () => {
            if (gap > 0 && !f.sort) {
                out.push('<tr class="gap"><td colspan="' + ncols + '">\u22ef ' + gap + ' quiet ' +
                    (gap === 1 ? (isLine ? 'line' : 'function') : (isLine ? 'lines' : 'functions')) + '</td></tr>');
            }
            gap = 0;
        };
        for (const r of list) {
            if (state.hideQuiet && isQuiet(r)) {
                gap++;
                continue;
            }
            flushGap();
            let cls = isLine ? 'line' : 'func';
            if (r.time >= HOT_PERCENT) cls += ' hot';
            if (r.leak) cls += ' leak';
            if (isLine && inSelection(f, r.lineno)) cls += ' sel';
            let h = '<tr class="' + cls + '" data-l="' + r.lineno + '">';
            for (const c of cols) h += cell(c, r, isLine);
            out.push(h + '</tr>');
        }
        flushGap();
        if (!list.length) {
            out.push('<tr class="gap"><td colspan="' + ncols + '">no ' + (isLine ? 'lines' : 'functions') +
                ' in the profile</td></tr>');
        }
        let html = '';
        for (let i = 0; i < out.length; i += CHUNK) {
            const n = Math.min(CHUNK, out.length - i);
            html += '<div class="chunk" style="contain-intrinsic-size:auto ' + n * ROW_H + 'px"><table class="prof" style="min-width:' +
                TABLE_MIN_W + 'px">' + COLGROUP + '<tbody>' + out.slice(i, i + n).join('') + '</tbody></table></div>';
        }
        return html;
    }

    function headHTML(f) {
        let h = '<tr>';
        for (const c of cols) {
            let label = c.label;
            if (c.id === 'src') label = f.view === 'lines' ? 'Source' : 'Function';
            let arrow = '';
            if (f.sort && f.sort.col === c.id) arrow = '<span class="arrow">' + (f.sort.dir < 0 ? '\u25bc' : '\u25b2') + '</span>';
            h += '<th data-col="' + c.id + '"' + (c.src ? ' class="src"' : '') +
                ' title="' + esc((c.title ? c.title + '; ' : '') + 'click to sort, again to reverse, a third time for source order') + '">' +
                esc(label) + arrow + '</th>';
        }
        return h + '</tr>';
    }

    function renderTable(f) {
        f.el.querySelector('table.phead thead').innerHTML = headHTML(f);
        f.el.querySelector('.rows').innerHTML = rowsHTML(f);
        for (const b of f.el.querySelectorAll('.views button')) b.classList.toggle('on', b.dataset.view === f.view);
    }

    /* Click cycle on a header: largest first (text: A to Z), reversed, then source order. */
    function onSort(f, col) {
        const first = col === 'src' ? 1 : -1;
        if (!f.sort || f.sort.col !== col) f.sort = {col: col, dir: first};
        else if (f.sort.dir === first) f.sort.dir = -first;
        else f.sort = null;
        renderTable(f);
    }

    function buildFile(f) {
        const body = f.el.querySelector('.body');
        body.innerHTML = '<div class="views"><button data-view="lines">Lines (' + f.lines.length +
            ')</button><button data-view="functions">Functions (' + f.funcs.length + ')</button>' +
            (f.nleaks ? ' <span class="leakmark">' + f.nleaks + ' possible leak' + (f.nleaks > 1 ? 's' : '') + '</span>' : '') +
            '</div><div class="tablewrap"><table class="prof phead" style="min-width:' + TABLE_MIN_W + 'px">' + COLGROUP +
            '<thead></thead></table><div class="rows"></div></div>';
        body.querySelector('.views').addEventListener('click', (ev) => {
            const b = ev.target.closest('button');
            if (!b || b.dataset.view === f.view) return;
            f.view = b.dataset.view;
            f.sort = null;
            renderTable(f);
        });
        body.querySelector('thead').addEventListener('click', (ev) => {
            const th = ev.target.closest('th');
            if (th && th.dataset.col) onSort(f, th.dataset.col);
        });
        body.querySelector('.rows').addEventListener('click', (ev) => {
            const pb = ev.target.closest('button.prop');
            const tr = ev.target.closest('tr.func, tr.line');
            if (!tr) return;
            const l = Number(tr.dataset.l);
            if (pb) {
                if (tr.classList.contains('func')) {
                    const fn = f.funcs.find((r) => r.lineno === l);
                    propose({file: f.name, function: fn ? fn.text : ''});
                } else {
                    const s = sel && sel.f === f && inSelection(f, l) ? sel : {first: l, last: l};
                    propose({file: f.name, first_line: s.first, last_line: s.last});
                }
            } else if (tr.classList.contains('func')) {
                showLine(f, l);
            } else if (SERVE && ev.target.closest('td.ln')) {
                select(f, l, ev.shiftKey);
            }
        });
        f.built = true;
        renderTable(f);
    }

    /* From the function view to the function's first line in the source. */
    function showLine(f, lineno) {
        f.view = 'lines';
        f.sort = null;
        renderTable(f);
        const tr = f.el.querySelector('tbody tr[data-l="' + lineno + '"]');
        if (tr) {
            tr.scrollIntoView({block: 'center'});
            tr.style.outline = '2px solid var(--py)';
        }
    }

    function setOpen(f, open) {
        f.open = open;
        f.el.classList.toggle('open', open);
        f.el.querySelector('.tw').textContent = open ? '\u25be' : '\u25b8';
        if (open && !f.built) buildFile(f);
    }

    function fileSection(f, i) {
        const el = document.createElement('section');
        el.className = 'file';
        el.dataset.file = f.name;
        el.dataset.index = i;
        let bar = '';
        let tp = 0, tn = 0, ts = 0;
        for (const r of f.lines) { tp += r.py; tn += r.nat; ts += r.sys; }
        bar = '<span class="fbar"><i class="b-py" style="width:' + Math.min(100, tp).toFixed(2) + '%"></i><i class="b-nat" style="width:' +
            Math.min(100, tn).toFixed(2) + '%"></i><i class="b-sys" style="width:' + Math.min(100, ts).toFixed(2) + '%"></i></span>';
        el.innerHTML = '<header><span class="tw"></span><span class="fname">' + esc(f.name) + '</span>' + bar +
            '<span class="fpct">' + (fmtPct(f.pct) || '0%') + '</span><span class="muted">' + f.lines.length +
            ' lines' + (f.samples ? ', ' + f.samples + ' samples' : '') + '</span></header><div class="body"></div>';
        el.querySelector('header').addEventListener('click', () => setOpen(f, !f.open));
        f.el = el;
        return el;
    }

    /* ---- proposals (scry view --serve only) ---------------------------------------------------
     * The page served by scry may POST a region to the server that served it (its token in a
     * header); scry builds the prompt from the profile itself, asks the provider and returns the
     * code, the diff and the reasons, which are shown as text only. A typed key lives in this
     * page's memory only: never stored, never in a URL. The static page has none of this. */

    const SERVE = cfg.serve === true && typeof cfg.token === 'string';
    let sel = null; /* {f, first, last}: the selected lines of one file */

    function inSelection(f, l) {
        return !!sel && sel.f === f && l >= sel.first && l <= sel.last;
    }

    /* A click on a line number selects it; a shift-click extends the selection in its file. */
    function select(f, l, extend) {
        const old = sel && sel.f;
        if (extend && sel && sel.f === f) sel = {f: f, first: Math.min(sel.anchor, l), last: Math.max(sel.anchor, l), anchor: sel.anchor};
        else sel = inSelection(f, l) && sel.first === sel.last ? null : {f: f, first: l, last: l, anchor: l};
        if (old && old !== f) renderTable(old);
        renderTable(f);
        const b = document.getElementById('propose-selection');
        b.disabled = !sel;
        b.textContent = sel ? 'Propose for ' + basename(f.name) + ':' + sel.first + (sel.last > sel.first ? '-' + sel.last : '') : 'Propose for the selected lines';
    }

    const PROVIDERS = ['openai', 'anthropic', 'azure', 'gemini', 'bedrock'];

    function proposePanel() {
        const el = document.createElement('section');
        el.id = 'propose';
        el.innerHTML = '<h2>Optimisation proposals</h2><div class="muted">Click a line number to select it ' +
            '(shift-click: a region), then propose; or use a row\'s \u201cpropose\u201d button. scry sends the lines with ' +
            'their figures, the lines around them and the file\'s imports to the provider (docs/optimize.md).</div>' +
            '<div class="psettings"><label>provider <select id="p-provider">' +
            PROVIDERS.map((p) => '<option>' + p + '</option>').join('') + '</select></label>' +
            '<label>model <input id="p-model" size="18" placeholder="default"></label>' +
            '<label>base URL <input id="p-base" size="28" placeholder="the provider\'s"></label>' +
            '<label class="p-azure">deployment <input id="p-deployment" size="12"></label>' +
            '<label class="p-bedrock">region <input id="p-region" size="10"></label>' +
            '<label class="p-key">key <input id="p-key" type="password" size="20" autocomplete="off" ' +
            'placeholder="from scry\'s environment"></label>' +
            '<button id="propose-selection" disabled>Propose for the selected lines</button></div>' +
            '<div id="p-keynote" class="muted"></div>' +
            '<div id="propose-status" class="muted"></div><pre id="propose-diff" class="pdiff"></pre>' +
            '<div id="propose-reasons" class="preasons"></div>';
        const prov = el.querySelector('#p-provider');
        const base = el.querySelector('#p-base');
        const cfgProvider = typeof cfg.provider === 'string' && PROVIDERS.includes(cfg.provider) ? cfg.provider : '';
        const cfgBase = typeof cfg.base_url === 'string' ? cfg.base_url : '';
        if (cfgProvider) prov.value = cfgProvider;
        /* scry sends the key of its environment only where its command line says (docs/SECURITY.md):
         * the page says where that is, and that any other base URL gets only a key typed here. */
        const show = () => {
            el.querySelector('.p-azure').style.display = prov.value === 'azure' ? '' : 'none';
            el.querySelector('.p-bedrock').style.display = prov.value === 'bedrock' ? '' : 'none';
            el.querySelector('.p-key').style.display = prov.value === 'bedrock' ? 'none' : '';
            const mine = !cfgProvider || prov.value === cfgProvider;
            base.placeholder = mine && cfgBase ? cfgBase : 'the provider\'s';
            el.querySelector('#p-keynote').textContent = (cfgProvider
                ? 'scry\'s environment key goes only to ' + cfgProvider + ' at ' + (cfgBase || 'its own endpoint')
                : 'scry\'s environment key goes only to each provider\'s own endpoint') +
                ' (scry\'s command line); another base URL gets only a key typed here.';
        };
        prov.addEventListener('change', show);
        show();
        el.querySelector('#propose-selection').addEventListener('click', () => {
            if (sel) propose({file: sel.f.name, first_line: sel.first, last_line: sel.last});
        });
        return el;
    }

    function setResult(status, diff, reasons) {
        document.getElementById('propose-status').textContent = status;
        const pre = document.getElementById('propose-diff');
        pre.textContent = '';
        for (const line of (diff || '').split('\n')) {
            if (!line) continue;
            const span = document.createElement('span');
            span.className = line[0] === '+' && !line.startsWith('+++') ? 'd-add' : line[0] === '-' && !line.startsWith('---') ? 'd-del' : line[0] === '@' ? 'd-hunk' : '';
            span.textContent = line + '\n';
            pre.appendChild(span);
        }
        document.getElementById('propose-reasons').textContent = reasons || '';
    }

    let inFlight = false;
    async function propose(region) {
        if (inFlight) return;
        const v = (id) => document.getElementById(id).value.trim();
        const req = Object.assign({}, region, {provider: v('p-provider')});
        for (const [k, id] of [['model', 'p-model'], ['base_url', 'p-base'], ['deployment', 'p-deployment'], ['region', 'p-region']]) {
            if (v(id)) req[k] = v(id);
        }
        if (req.provider !== 'bedrock' && v('p-key')) req.key = v('p-key');
        const what = basename(region.file) + (region.first_line ? ':' + region.first_line + (region.last_line > region.first_line ? '-' + region.last_line : '') : region.function ? ' ' + region.function : '');
        inFlight = true;
        setResult('asking ' + req.provider + ' about ' + what + '\u2026', '', '');
        document.getElementById('propose').scrollIntoView({block: 'start'});
        try {
            const r = await fetch('propose', {method: 'POST', cache: 'no-store', credentials: 'omit', referrerPolicy: 'no-referrer',
                headers: {'Content-Type': 'application/json', 'X-Scry-Token': cfg.token}, body: JSON.stringify(req)});
            const doc = await r.json();
            if (r.ok) {
                setResult('proposal of ' + doc.provider + ' (' + doc.model + ') for ' + basename(doc.file) + ':' + doc.first_line + '-' + doc.last_line +
                    (doc.function ? ' (in ' + doc.function + ')' : '') + ' \u2014 nothing was changed on disk', doc.diff, doc.reasons);
            } else {
                const e = doc.error || {};
                setResult('error [' + (e.code || r.status) + ']: ' + (e.message || '') + (e.hint ? ' \u2014 ' + e.hint : ''), '', '');
            }
        } catch (err) {
            setResult('the request failed: ' + err, '', '');
        } finally {
            inFlight = false;
        }
    }

    /* ---- header and global charts ------------------------------------------------------------ */

    /* The footprint of the whole run: a step function (each point's value holds until the next
     * one), drawn on a time axis from the start to the end of the program (tEnd), not to the
     * last memory sample: memory sampled only early in a long run stays at the left. */
    function footprintSVG(samples) {
        const pts = samples.filter((s) => Array.isArray(s) && s.length >= 2).map((s) => [num(s[0]), num(s[1])]);
        if (!pts.length) return '';
        const W = 640, H = 110, L = 48, B = 18;
        let tmax = tEnd, mmax = 0;
        for (const p of pts) { tmax = Math.max(tmax, p[0]); mmax = Math.max(mmax, p[1]); }
        tmax = tmax || 1; mmax = mmax || 1;
        const X = (t) => (L + (t / tmax) * (W - L - 6)).toFixed(1);
        const Y = (m) => (H - B - (m / mmax) * (H - B - 8)).toFixed(1);
        let d = '';
        pts.forEach((p, i) => {
            d += i ? 'H' + X(p[0]) + 'V' + Y(p[1]) : 'M' + X(p[0]) + ',' + Y(p[1]);
        });
        d += 'H' + X(tmax);
        return '<svg class="chart" id="footprint" width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + ' ' + H + '" role="img" aria-label="memory footprint over time">' +
            '<line x1="' + L + '" y1="' + (H - B) + '" x2="' + (W - 6) + '" y2="' + (H - B) + '" stroke="#ccd"/>' +
            '<line x1="' + L + '" y1="6" x2="' + L + '" y2="' + (H - B) + '" stroke="#ccd"/>' +
            '<path d="' + d + '" fill="none" stroke="var(--mem)" stroke-width="1.6"/>' +
            '<text x="' + (L - 4) + '" y="14" text-anchor="end">' + esc(fmtNum(mmax) || '0') + ' MB</text>' +
            '<text x="' + (L - 4) + '" y="' + (H - B) + '" text-anchor="end">0</text>' +
            '<text id="footprint-end" x="' + (W - 6) + '" y="' + (H - 4) + '" text-anchor="end">' + esc(fmtSec(tmax / 1e9)) + '</text>' +
            '<text x="' + L + '" y="' + (H - 4) + '">0 s</text></svg>';
    }

    function headerHTML() {
        const prog = typeof P.program === 'string' && P.program ? P.program : '(unknown program)';
        const args = Array.isArray(P.args) ? ' ' + P.args.map(String).join(' ') : '';
        const items = [];
        const add = (k, v) => items.push('<span>' + esc(k) + ' <b>' + esc(v) + '</b></span>');
        if (P.python_version) add('Python', P.python_version);
        if ('elapsed_time_sec' in P) add('elapsed', fmtSec(P.elapsed_time_sec));
        if ('sampled_time_sec' in P) add('sampled', fmtSec(P.sampled_time_sec));
        if ('n_samples' in P) add('samples', String(num(P.n_samples)));
        if (num(P.n_dropped_samples) > 0) add('dropped', String(num(P.n_dropped_samples)));
        if ('processes' in P) add('processes', String(num(P.processes)));
        if (num(P.cpu_sampling_rate) > 0) add('every', (num(P.cpu_sampling_rate) * 1000).toFixed(1) + ' ms' + (P.use_virtual_time ? ' (CPU time)' : ' (wall clock)'));
        if (num(P.max_footprint_mb) > 0) add('max footprint', fmtNum(num(P.max_footprint_mb)) + ' MB');
        if (num(P.growth_rate) > 0) add('growth', fmtPct(num(P.growth_rate)));
        if (num(P.native_allocations_mb) > 0) add('native threads', fmtNum(num(P.native_allocations_mb)) + ' MB');
        if (P.gpu && P.gpu_device) add('accelerator', P.gpu_device);
        add('files', String(files.length));
        let h = '<h1 id="program">' + esc(prog + args) + '</h1><div class="summary">' + items.join('') + '</div>';
        if (num(P.sampled_time_sec) > 0 && files.length) {
            /* What every share is of: a share of a total that left time out would mislead. */
            h += '<div class="muted" id="shares">Shares of the time are of ' + esc(fmtSec(P.sampled_time_sec)) +
                ' sampled (every thread of every process, ' + (P.use_virtual_time ? 'CPU time only' : 'on and off the CPU') + ')' +
                ('elapsed_time_sec' in P ? '; the program ran ' + esc(fmtSec(P.elapsed_time_sec)) : '') + '.</div>';
        }
        if (P.oversubscribed === true) {
            const delay = num(P.run_queue_delay_sec), ran = num(P.run_queue_cpu_sec);
            h += '<div class="note warn" id="oversubscribed">The machine was oversubscribed: the program\'s threads waited ' +
                esc(fmtSec(delay)) + ' for a CPU' + (ran > 0 ? ' (' + esc(fmtPct(100 * delay / ran)) + ' of the ' + esc(fmtSec(ran)) + ' they ran)' : '') +
                '. A thread waiting for a CPU is off it, so that wait counts as system time: system shares may be no I/O or sleep at all.</div>';
        }
        if (typeof P.note === 'string' && P.note) h += '<div class="note" id="note">' + esc(P.note) + '</div>';
        if (typeof P.gpu_note === 'string' && P.gpu_note) h += '<div class="note" id="gpu-note">' + esc(P.gpu_note) + '</div>';
        if (!files.length && !P.note) h += '<div class="note" id="note">This profile holds no files.</div>';
        h += '<div class="legend"><span><i class="sw sw-py"></i>Python</span><span><i class="sw sw-nat"></i>native</span>' +
            '<span><i class="sw sw-sys"></i>system</span>' + (hasMemory ? '<span><i class="sw sw-mem"></i>memory</span>' : '') +
            (hasGPU ? '<span><i class="sw sw-gpu"></i>GPU</span>' : '') + '</div>';
        if (Array.isArray(P.samples) && P.samples.length) {
            h += '<h2>Memory footprint</h2>' + footprintSVG(P.samples);
        }
        if (Array.isArray(P.excluded) && P.excluded.length) {
            h += '<details><summary class="muted">time in files outside the profile (' + P.excluded.length + ')</summary><ul>';
            for (const x of P.excluded.slice(0, 50)) {
                if (x && typeof x === 'object') {
                    h += '<li><code>' + esc(x.file) + '</code> ' + esc(fmtSec(x.seconds)) + ' <span class="muted">(' + esc(x.rule) + ')</span></li>';
                }
            }
            h += '</ul></details>';
        }
        return h;
    }

    /* ---- flame graphs: icicles of the CPU stacks and of the memory stacks, root on top -------- */

    function frameLabel(key) {
        /* Scalene's frame "<file> <qualname>:<line>": the name and line, the file in the tooltip. */
        const sp = key.lastIndexOf(' ');
        return sp > 0 ? key.slice(sp + 1) + ' (' + basename(key.slice(0, sp)) + ')' : key;
    }

    /* kind 'cpu': from stacks (else combined_stacks), weighted by samples; kind 'memory': from
     * memory_stacks (scry run --stacks with memory on), weighted by the MB allocated. */
    function buildFlame(kind) {
        const nodes = [];
        const mk = (name, parent, native) => {
            const n = {id: nodes.length, name: name, parent: parent, kids: new Map(), value: 0,
                       py: 0, c: 0, sys: 0, depth: parent ? parent.depth + 1 : 0, native: !!native, x: 0};
            nodes.push(n);
            return n;
        };
        const root = mk('all', null);
        const add = (keys, natives, v, m) => {
            if (!(v > 0)) return;
            let n = root;
            const addTo = (x) => {
                x.value += v;
                if (m) { x.py += num(m.python_time); x.c += num(m.c_time); x.sys += num(m.sys_time); }
            };
            addTo(root);
            for (let i = 0; i < keys.length; i++) {
                let k = n.kids.get(keys[i]);
                if (!k) { k = mk(keys[i], n, natives[i]); n.kids.set(keys[i], k); }
                addTo(k);
                n = k;
            }
        };
        let source = '';
        const pyKey = (x) => String(x.filename_or_module || '') + ' ' + String(x.display_name || '?') +
            (x.line != null ? ':' + x.line : '');
        if (kind === 'memory') {
            if (Array.isArray(P.memory_stacks) && P.memory_stacks.length) source = 'memory_stacks';
            for (const st of source ? P.memory_stacks : []) {
                if (!Array.isArray(st) || !Array.isArray(st[0])) continue;
                const fr = st[0].filter((x) => x && typeof x === 'object');
                add(fr.map(pyKey), fr.map((x) => x.kind === 'native'), num(st[1]), null);
            }
        } else if (Array.isArray(P.stacks) && P.stacks.length) {
            source = 'stacks';
            for (const st of P.stacks) {
                if (!Array.isArray(st) || !Array.isArray(st[0])) continue;
                const m = st[1];
                const v = typeof m === 'number' ? m : m && typeof m === 'object' ? num(m.count) || num(m.cpu_samples) : 0;
                const keys = st[0].map((s) => String(s).replace(/;$/, ''));
                add(keys, keys.map(() => false), v, typeof m === 'object' ? m : null);
            }
        } else if (Array.isArray(P.combined_stacks) && P.combined_stacks.length) {
            source = 'combined_stacks';
            for (const st of P.combined_stacks) {
                if (!Array.isArray(st) || !Array.isArray(st[0])) continue;
                const fr = st[0].filter((x) => x && typeof x === 'object');
                add(fr.map(pyKey), fr.map((x) => x.kind === 'native'), num(st[1]), null);
            }
        }
        if (!(root.value > 0)) return null;
        /* x: each node's start as a fraction of the root, children by weight, largest first. */
        let maxDepth = 0;
        const stack = [root];
        root.w = 1;
        while (stack.length) {
            const n = stack.pop();
            maxDepth = Math.max(maxDepth, n.depth);
            let x = n.x;
            const kids = Array.from(n.kids.values()).sort((a, b) => b.value - a.value);
            n.kidList = kids;
            for (const k of kids) {
                k.x = x;
                k.w = k.value / root.value;
                x += k.w;
                stack.push(k);
            }
        }
        const unit = kind === 'memory' ? 'MB' : 'samples';
        return {kind: kind, unit: unit, root: root, nodes: nodes, maxDepth: maxDepth, source: source, zoom: root,
                query: '', amount: (v) => (kind === 'memory' ? fmtNum(v) || '0' : v.toLocaleString()) + ' ' + unit};
    }

    function hue(s) {
        let h = 0;
        for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0;
        return Math.abs(h);
    }

    function frameColor(n) {
        const h = hue(n.name);
        if (n.depth === 0) return 'hsl(210,12%,82%)';
        if (n.native) return 'hsl(' + (45 + (h % 15)) + ',80%,' + (62 + (h % 10)) + '%)';
        const share = n.value > 0 ? (n.c / Math.max(1e-12, n.py + n.c + n.sys)) : 0;
        /* Python-heavy frames red to orange, native-heavy ones toward yellow. */
        return 'hsl(' + (5 + share * 40 + (h % 12)) + ',75%,' + (63 + (h % 9)) + '%)';
    }

    function renderFlame(F) {
        const box = document.getElementById('flame');
        const width = box.clientWidth || 1000;
        const Z = F.zoom;
        const q = F.query.toLowerCase();
        let html = '';
        let depthShown = 0;
        let matchedValue = 0, matchedFrames = 0;
        /* ancestors of the zoomed frame: full width */
        for (let a = Z.parent; a; a = a.parent) {
            html += '<div class="frame ancestor" data-id="' + a.id + '" style="left:0;width:100%;top:' + a.depth * FRAME_H +
                'px;background:' + frameColor(a) + '">' + esc(a.depth ? frameLabel(a.name) : 'all') + '</div>';
        }
        const stack = [[Z, false]];
        while (stack.length) {
            const item = stack.pop();
            const n = item[0];
            const rx = (n.x - Z.x) / Z.w, rw = n.w / Z.w;
            if (rw * width < 0.5) continue;
            const m = q && n.depth > 0 && n.name.toLowerCase().includes(q);
            if (m) {
                matchedFrames++;
                if (!item[1]) matchedValue += n.value;
            }
            depthShown = Math.max(depthShown, n.depth);
            const label = n.depth ? frameLabel(n.name) : 'all';
            html += '<div class="frame' + (m ? ' match' : '') + '" data-id="' + n.id + '" style="left:' + (rx * 100).toFixed(4) +
                '%;width:' + (rw * 100).toFixed(4) + '%;top:' + n.depth * FRAME_H + 'px;background:' + frameColor(n) + '">' +
                (rw * width > 28 ? esc(label) : '') + '</div>';
            for (let i = n.kidList.length - 1; i >= 0; i--) stack.push([n.kidList[i], item[1] || m]);
        }
        box.style.height = (depthShown + 1) * FRAME_H + 'px';
        box.innerHTML = html;
        const info = document.getElementById('flame-info');
        let t = F.zoom !== F.root ? 'zoomed on ' + frameLabel(F.zoom.name) + ' (' + pctOf(F.zoom.value, F.root.value) + '); click "all" or Reset to zoom out. ' : 'Click a frame to zoom. ';
        if (q) t += matchedFrames + ' frame' + (matchedFrames === 1 ? '' : 's') + ' match "' + F.query + '": ' + pctOf(matchedValue, F.root.value) +
            (F.kind === 'memory' ? ' of the bytes allocated.' : ' of the samples.');
        info.textContent = t;
    }

    function pctOf(v, total) {
        return total > 0 ? ((v * 100) / total).toFixed(1) + '%' : '0%';
    }

    /* FL: {cpu, memory, shown}: the graphs the profile has and the one on screen; search and
     * zoom act on the one shown, and each keeps its own zoom and query when switched away. */
    function setupFlame(FL) {
        const box = document.getElementById('flame');
        const tip = document.getElementById('tooltip');
        const search = document.getElementById('flame-search');
        box.addEventListener('click', (ev) => {
            const el = ev.target.closest('.frame');
            if (!el) return;
            FL.shown.zoom = FL.shown.nodes[Number(el.dataset.id)];
            renderFlame(FL.shown);
        });
        box.addEventListener('mousemove', (ev) => {
            const F = FL.shown;
            const el = ev.target.closest('.frame');
            if (!el) { tip.style.display = 'none'; return; }
            const n = F.nodes[Number(el.dataset.id)];
            let t = '<b>' + esc(n.depth ? n.name : 'all') + '</b><br>' + esc(F.amount(n.value)) + ', ' +
                pctOf(n.value, F.root.value) + ' of all';
            if (F.zoom !== F.root) t += ', ' + pctOf(n.value, F.zoom.value) + ' of the zoomed frame';
            const tot = n.py + n.c + n.sys;
            if (tot > 0) t += '<br>Python ' + pctOf(n.py, tot) + ', native ' + pctOf(n.c, tot) + ', system ' + pctOf(n.sys, tot);
            tip.innerHTML = t;
            tip.style.display = 'block';
            tip.style.left = Math.min(ev.clientX + 12, window.innerWidth - 380) + 'px';
            tip.style.top = ev.clientY + 14 + 'px';
        });
        box.addEventListener('mouseleave', () => { tip.style.display = 'none'; });
        search.addEventListener('input', (ev) => {
            FL.shown.query = ev.target.value.trim();
            renderFlame(FL.shown);
        });
        document.getElementById('flame-reset').addEventListener('click', () => {
            FL.shown.zoom = FL.shown.root;
            renderFlame(FL.shown);
        });
        const kinds = document.getElementById('flame-kinds');
        const title = document.getElementById('flame-title');
        const show = (F) => {
            FL.shown = F;
            search.value = F.query;
            title.textContent = (F.kind === 'memory' ? 'Memory flame graph' : 'CPU flame graph');
            document.getElementById('flame-source').textContent = '(from ' + F.source + ', ' + F.amount(F.root.value) +
                (F.kind === 'memory' ? ' allocated)' : ')');
            if (kinds) for (const b of kinds.querySelectorAll('button')) b.classList.toggle('on', b.dataset.kind === F.kind);
            renderFlame(F);
        };
        if (kinds) {
            kinds.addEventListener('click', (ev) => {
                const b = ev.target.closest('button');
                if (b && FL[b.dataset.kind] && FL[b.dataset.kind] !== FL.shown) show(FL[b.dataset.kind]);
            });
        }
        let pending = 0;
        window.addEventListener('resize', () => {
            cancelAnimationFrame(pending);
            pending = requestAnimationFrame(() => renderFlame(FL.shown));
        });
        show(FL.shown);
    }

    /* ---- the page ------------------------------------------------------------------------------ */

    function main() {
        const app = document.getElementById('app');
        app.innerHTML = '';
        const head = document.createElement('div');
        head.id = 'head';
        head.innerHTML = headerHTML();
        app.appendChild(head);

        const FL = {cpu: buildFlame('cpu'), memory: buildFlame('memory'), shown: null};
        FL.shown = FL.cpu || FL.memory;
        if (FL.shown) {
            const s = document.createElement('section');
            s.id = 'flame-section';
            /* Both graphs: a switch between them (the CPU one first). */
            const kinds = FL.cpu && FL.memory ? '<span class="kinds" id="flame-kinds"><button data-kind="cpu">CPU</button>' +
                '<button data-kind="memory">Memory</button></span>' : '';
            s.innerHTML = '<h2><span id="flame-title"></span> <span class="muted" id="flame-source" style="font-weight:normal;font-size:13px">' +
                '</span></h2><div class="flamebox">' +
                '<div class="toolbar" style="position:static;border:0;padding:0 0 6px">' + kinds +
                '<input type="search" id="flame-search" placeholder="search frames" aria-label="search frames">' +
                '<button id="flame-reset">Reset zoom</button></div><div class="flameinfo" id="flame-info"></div>' +
                '<div class="flame" id="flame"></div></div><div class="tooltip" id="tooltip"></div>';
            app.appendChild(s);
        }
        const TL = ScryTimeline.create(P, {esc: esc, fmtSec: fmtSec, basename: basename});
        if (TL) app.appendChild(TL.section);

        const tb = document.createElement('div');
        tb.className = 'toolbar';
        tb.innerHTML = '<label><input type="checkbox" id="hide-quiet"> hide quiet lines</label>' +
            '<label title="a line is quiet below this share of the time, with no memory, GPU or leak">threshold ' +
            '<input type="number" id="threshold" min="0" max="100" step="0.1" value="' + esc(state.threshold) + '"> %</label>' +
            '<button id="expand-all">Expand all</button><button id="collapse-all">Collapse all</button>' +
            '<span class="muted">click a column header to sort</span>' +
            (SERVE ? '' : '<span class="muted" id="propose-hint">optimisation proposals: scry view --serve</span>');
        app.appendChild(tb);
        if (SERVE) app.appendChild(proposePanel());

        const list = document.createElement('div');
        list.id = 'files';
        const frag = document.createDocumentFragment();
        files.forEach((f, i) => frag.appendChild(fileSection(f, i)));
        list.appendChild(frag);
        app.appendChild(list);

        const foot = document.createElement('footer');
        foot.textContent = 'scry ' + (P.tool === 'scry' && P.version ? P.version : cfg.scry_version || '') +
            (P.tool === 'scry' ? '' : ' (profile written by another tool)') + (SERVE
            ? ' \u2014 served by scry on 127.0.0.1; proposals go to scry, which asks the provider.'
            : ' \u2014 this page is self-contained and makes no network requests.');
        app.appendChild(foot);

        const rerender = () => { for (const f of files) if (f.built) renderTable(f); };
        document.getElementById('hide-quiet').addEventListener('change', (ev) => {
            state.hideQuiet = ev.target.checked;
            rerender();
        });
        document.getElementById('threshold').addEventListener('change', (ev) => {
            const v = Number(ev.target.value);
            if (isFinite(v) && v >= 0) { state.threshold = v; rerender(); }
        });
        document.getElementById('expand-all').addEventListener('click', () => { for (const f of files) setOpen(f, true); });
        document.getElementById('collapse-all').addEventListener('click', () => { for (const f of files) setOpen(f, false); });

        files.forEach((f, i) => setOpen(f, i < OPEN_FILES && f.lines.length > 0));
        if (FL.shown) setupFlame(FL);
        if (TL) TL.draw();

        /* flame: the graph on screen (CPU unless switched); flames: both, null when absent. */
        window.scry = {files: files, flames: {cpu: FL.cpu, memory: FL.memory}, timeline: TL ? TL.model : null,
                       renderMs: performance.now() - START};
        Object.defineProperty(window.scry, 'flame', {get: () => FL.shown, enumerable: true});
        document.body.dataset.ready = '1';
    }

    main();
})();
