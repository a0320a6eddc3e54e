/* scry's browser view of a comparison (`scry compare --html`, docs/viewer.md): the document of
 * `scry compare --json` (docs/json-schema.md), its names already cleaned by scry's one sanitizer,
 * shown as the text report shows it: the functions, then the lines, that changed significantly,
 * most significant first, each with before, after and the change with its 95% interval. Every
 * text is HTML-escaped here too. Used by web/viewer.js (joined after this file), which hands the
 * page over when the config says "page": "compare". */
const ScryCompare = (function () {
    'use strict';

    const ESC = {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'};
    function esc(s) {
        return String(s).replace(/[&<>"']/g, (c) => ESC[c]);
    }
    function num(v) {
        return typeof v === 'number' && isFinite(v) ? v : 0;
    }
    const isMem = (k) => k === 'alloc' || k === 'kept';
    function amount(k, v, sign) {
        const s = sign && v > 0 ? '+' : '';
        return isMem(k) ? s + (v / 1048576).toFixed(1) + ' MB' : s + v.toFixed(3) + ' s';
    }
    function change(row, k) {
        return row[k + (isMem(k) ? '_bytes' : '_sec')] || {};
    }
    function pctText(c) {
        if (c.pct === null && num(c.before) === 0 && num(c.after) !== 0) return 'new';
        const p = num(c.pct);
        return (p > 0 ? '+' : '') + p.toFixed(0) + '%';
    }
    function where(row, isFunc) {
        const file = String(row.file || '?'), fn = String(row.function || '?');
        return isFunc ? fn + ' (' + file + ':' + num(row.first_line) + ')' : file + ':' + num(row.line) + ' (in ' + fn + ')';
    }

    function rowHTML(row, isFunc) {
        const k = typeof row.main === 'string' ? row.main : 'time';
        const c = change(row, k);
        const grew = num(c.delta) > 0;
        let split = '';
        if (!isMem(k)) {
            split = ['python', 'native', 'system'].map((j) => j + ' ' + amount(j, num(change(row, j).delta), true)).join(', ');
        }
        return '<tr class="' + (grew ? 'worse' : 'better') + (row.regressed ? ' regressed' : '') + '" data-where="' +
            esc(where(row, isFunc)) + '"><td class="pct">' + esc(pctText(c)) + '</td><td>' + esc(k) + '</td><td>' +
            esc(amount(k, num(c.before))) + '</td><td>' + esc(amount(k, num(c.after))) + '</td><td class="delta">' +
            esc(amount(k, num(c.delta), true)) + ' <span class="muted">\u00b1 ' + esc(amount(k, 1.959964 * num(c.sigma))) +
            '</span></td><td>' + esc(num(c.z).toFixed(1)) + '</td><td class="where">' + esc(where(row, isFunc)) +
            (split ? ' <span class="muted">[' + esc(split) + ']</span>' : '') + '</td></tr>';
    }

    function tableHTML(id, title, rows, isFunc, all) {
        const shown = rows.filter((r) => r && typeof r === 'object' && (all || r.significant === true));
        let h = '<section id="' + id + '"><h2>' + esc(title) + ' <span class="muted" style="font-weight:normal;font-size:13px">(' +
            shown.length + (all ? ' in all' : ' changed significantly, most significant first') + ')</span></h2>';
        if (!shown.length) return h + '<div class="muted">no significant change</div></section>';
        h += '<table class="cmp"><thead><tr><th>Change</th><th>Kind</th><th>Before</th><th>After</th>' +
            '<th>Delta \u00b1 95%</th><th>z</th><th>' + (isFunc ? 'Function' : 'Line') + '</th></tr></thead><tbody>';
        for (const r of shown) h += rowHTML(r, isFunc);
        return h + '</tbody></table></section>';
    }

    function sideHTML(label, s) {
        s = s && typeof s === 'object' ? s : {};
        return '<div class="cmpside"><b>' + esc(label) + '</b> <code>' + esc(s.path || '?') + '</code>: ' +
            esc(num(s.elapsed_time_sec).toFixed(3)) + ' s elapsed, ' + esc(num(s.sampled_time_sec).toFixed(3)) +
            ' s sampled in ' + esc(num(s.n_samples).toFixed(0)) + ' samples</div>';
    }

    function main(C, cfg, start) {
        const app = document.getElementById('app');
        document.body.classList.add('compare');
        const funcs = Array.isArray(C.functions) ? C.functions : [];
        const lines = Array.isArray(C.lines) ? C.lines : [];
        let h = '<h1 id="program">scry compare</h1>' + sideHTML('before', C.before) + sideHTML('after', C.after);
        if (C.normalized === true) {
            h += '<div class="note">normalized: after\'s times divided by ' + esc(num(C.scale).toFixed(4)) + ' (\u00b1 ' +
                esc((100 * num(C.scale_rel_sigma)).toFixed(1)) + '%), the median function\'s speed ratio</div>';
        }
        h += '<div class="muted" id="rule">significant: |z| \u2265 ' + esc(num(C.z_significant) || 3) +
            ' for time or memory; intervals are 95% (\u00b11.96 \u03c3) of the sampling error. ' +
            esc(num(C.significant)) + ' entr' + (num(C.significant) === 1 ? 'y' : 'ies') + ' changed significantly.</div>';
        if (C.fail_above_pct !== null && C.fail_above_pct !== undefined) {
            h += '<div class="note' + (C.failed ? ' warn' : '') + '" id="regressed">' + esc(num(C.regressed)) +
                ' entr' + (num(C.regressed) === 1 ? 'y' : 'ies') + ' regressed by more than ' + esc(num(C.fail_above_pct)) +
                '% (--fail-above): marked in red.</div>';
        }
        h += '<div class="toolbar"><label><input type="checkbox" id="show-all"> show every entry, changed or not</label></div>' +
            '<div id="tables"></div>';
        app.innerHTML = h;
        const tables = document.getElementById('tables');
        const render = (all) => {
            tables.innerHTML = tableHTML('cmp-functions', 'Functions', funcs, true, all) +
                tableHTML('cmp-lines', 'Lines', lines, false, all);
        };
        render(false);
        document.getElementById('show-all').addEventListener('change', (ev) => render(ev.target.checked));
        const foot = document.createElement('footer');
        foot.textContent = 'scry ' + (cfg.scry_version || '') + ' \u2014 this page is self-contained and makes no network requests.';
        app.appendChild(foot);
        window.scry = {compare: C, renderMs: performance.now() - start};
        document.body.dataset.ready = '1';
    }

    return {main: main};
})();
