// otelprof report renderer: reads the JSON block the CLI embedded and draws everything.
// No dependencies and nothing from the network. The flamegraph is a canvas drawn from the
// call tree in preorder; a subtree narrower than a third of a pixel is skipped whole, so the
// cost of a redraw follows what is visible, not the size of the profile.
(function () {
  'use strict';
  const D = JSON.parse(document.getElementById('otelprof-data').textContent);
  const S = D.strings;
  const DIFF = D.mode === 'diff';
  const NP = DIFF ? 2 : 1;
  const $ = (id) => document.getElementById(id);

  // ---------------------------------------------------------------- the tree
  const N = D.nodes.depth.length;
  const depth = Int32Array.from(D.nodes.depth);
  const nframe = Int32Array.from(D.nodes.frame);
  const parent = new Int32Array(N);
  const send = new Int32Array(N); // index after the node's subtree
  let maxDepth = 0;
  {
    const stack = [];
    for (let i = 0; i < N; i++) {
      while (stack.length && depth[stack[stack.length - 1]] >= depth[i]) send[stack.pop()] = i;
      parent[i] = stack.length ? stack[stack.length - 1] : 0;
      stack.push(i);
      if (depth[i] > maxDepth) maxDepth = depth[i];
    }
    while (stack.length) send[stack.pop()] = N;
  }
  const F = D.frames;
  const NF = F.name.length;
  const fname = (f) => S[F.name[f]] || '';
  const kindName = (f) => D.kinds[F.kind[f]] || 'native';
  const binPath = (b) => S[D.bins.path[b]] || '';
  const baseName = (p) => p.slice(p.lastIndexOf('/') + 1);

  // samples
  const smpNode = Int32Array.from(D.samples.node);
  const smpThread = Int32Array.from(D.samples.thread);
  const smpProf = Int32Array.from(D.samples.profile);
  const smpVals = D.samples.values.map((a) => Float64Array.from(a));
  const thProc = D.threads.proc;

  // ---------------------------------------------------------------- state
  const st = {
    type: 0,
    proc: -1, // filter: a process, or
    thread: -1, // a thread
    zoom: 0,
    search: '',
    absolute: !!D.absolute,
    widthOf: DIFF ? 1 : 0,
  };
  let self = [], total = [], grand = [];

  function compute() {
    self = []; total = []; grand = [];
    for (let p = 0; p < NP; p++) {
      self.push(new Float64Array(N));
      total.push(new Float64Array(N));
    }
    const vals = smpVals[st.type];
    for (let i = 0; i < smpNode.length; i++) {
      const th = smpThread[i];
      if (st.thread >= 0 && th !== st.thread) continue;
      if (st.proc >= 0 && thProc[th] !== st.proc) continue;
      self[smpProf[i]][smpNode[i]] += vals[i];
    }
    for (let p = 0; p < NP; p++) {
      const s = self[p], t = total[p];
      t.set(s);
      for (let i = N - 1; i > 0; i--) t[parent[i]] += t[i];
      grand.push(t[0]);
    }
  }

  // ---------------------------------------------------------------- formatting
  const typeName = () => D.types[st.type] || '';
  function fmtValue(v) {
    const t = typeName();
    if (t.endsWith('/nanoseconds')) {
      if (v >= 1e9) return (v / 1e9).toFixed(2) + ' s';
      if (v >= 1e6) return (v / 1e6).toFixed(2) + ' ms';
      if (v >= 1e3) return (v / 1e3).toFixed(1) + ' µs';
      return v + ' ns';
    }
    if (t.endsWith('/bytes')) {
      const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
      let i = 0;
      while (Math.abs(v) >= 1024 && i < u.length - 1) { v /= 1024; i++; }
      return (i ? v.toFixed(1) : v) + ' ' + u[i];
    }
    return Math.round(v).toLocaleString('en-US');
  }
  const pct = (x) => (x * 100).toFixed(2) + '%';
  const signed = (x, f) => (x > 0 ? '+' : x < 0 ? '\u2212' : '\u00b1') + f(Math.abs(x));
  const pp = (x) => signed(x * 100, (v) => v.toFixed(2) + ' pp');
  function esc(s) {
    return String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
  }
  // a value of profile p as compared: a share of its total, or absolute
  function norm(p, v) {
    if (!DIFF || !st.absolute) return grand[p] > 0 ? v / grand[p] : 0;
    return v;
  }
  const fmtNorm = (x) => (DIFF && st.absolute ? fmtValue(x) : pct(x));
  const fmtDelta = (x) => (DIFF && st.absolute ? signed(x, fmtValue) : pp(x));

  // ---------------------------------------------------------------- header
  function header() {
    $('title').textContent = D.title || 'otelprof report';
    const parts = [];
    D.profiles.forEach((p, i) => {
      const bits = [];
      if (DIFF) bits.push('<b>' + (i ? 'new' : 'base') + '</b>');
      bits.push(esc(p.name));
      if (p.format) bits.push(esc(p.format));
      if (p.timeMs > 0) bits.push(new Date(p.timeMs).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC'));
      if (p.durationMs > 0) bits.push((p.durationMs / 1000).toFixed(1) + ' s');
      parts.push(bits.join(' \u00b7 '));
    });
    $('meta').innerHTML = parts.join('<br>');
    const sel = $('type');
    D.types.forEach((t, i) => {
      const o = document.createElement('option');
      o.value = i; o.textContent = t;
      sel.appendChild(o);
    });
    if (D.types.length < 2) $('type-box').hidden = true;
    sel.onchange = () => { st.type = +sel.value; update(); };
    if (DIFF) {
      $('diff-controls').hidden = false;
      $('norm').value = st.absolute ? 'absolute' : 'share';
      $('norm').onchange = () => { st.absolute = $('norm').value === 'absolute'; update(); };
      $('widthof').onchange = () => { st.widthOf = +$('widthof').value; st.zoom = 0; update(); };
    }
    $('filter-reset').onclick = () => { st.proc = st.thread = -1; st.zoom = 0; update(); };
  }

  function filterText() {
    const f = $('filter');
    if (st.proc < 0 && st.thread < 0) { f.hidden = true; return; }
    f.hidden = false;
    $('filter-what').textContent = st.thread >= 0 ? threadLabel(st.thread) : procLabel(st.proc);
  }

  // ---------------------------------------------------------------- search
  let match = new Uint8Array(NF);
  function setSearch(q) {
    st.search = q;
    match = new Uint8Array(NF);
    if (!q) return;
    let test;
    const m = /^\/(.*)\/([a-z]*)$/.exec(q);
    if (m) {
      let re;
      try { re = new RegExp(m[1], m[2].includes('i') ? 'i' : ''); } catch (e) { re = null; }
      test = re ? (s) => re.test(s) : () => false;
    } else {
      const lq = q.toLowerCase();
      test = (s) => s.toLowerCase().includes(lq);
    }
    for (let f = 1; f < NF; f++) if (F.kind[f] !== 4 && test(fname(f))) match[f] = 1;
  }
  // the share of the samples with a matching frame on their stack (each sample once)
  function searchShare(p) {
    let sum = 0;
    const t = total[p];
    for (let i = 1; i < N;) {
      if (match[nframe[i]]) { sum += t[i]; i = send[i]; } else i++;
    }
    return sum;
  }
  function searchResult() {
    const out = $('search-result');
    if (!st.search) { out.textContent = ''; return; }
    let nm = 0;
    for (let f = 1; f < NF; f++) nm += match[f];
    if (!nm) { out.textContent = 'no match'; return; }
    const what = nm + (nm === 1 ? ' function' : ' functions') + ' matched: ';
    if (DIFF) {
      const b = norm(0, searchShare(0)), n = norm(1, searchShare(1));
      out.textContent = what + fmtNorm(b) + ' \u2192 ' + fmtNorm(n) + ' (' + fmtDelta(n - b) + ')';
    } else {
      out.textContent = what + pct(grand[0] > 0 ? searchShare(0) / grand[0] : 0) + ' of samples';
    }
  }

  // ---------------------------------------------------------------- flamegraph
  const ROW = 18;
  const canvas = $('flame');
  const ctx = canvas.getContext('2d');
  let drawn = []; // [x, w, depth, node] of every rectangle of the last paint
  const HUES = { native: [28, 86], kernel: [8, 70], go: [190, 60], marker: [0, 0], process: [220, 30], other: [140, 55] };
  function hash(s) {
    let h = 2166136261;
    for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
    return (h >>> 0) / 4294967296;
  }
  const colorCache = new Map();
  function color(n) {
    const f = nframe[n];
    if (st.search && match[f]) return '#d36df0';
    if (DIFF) {
      const b = norm(0, total[0][n]), a = norm(1, total[1][n]);
      const m = Math.max(Math.abs(a), Math.abs(b));
      const r = m > 0 ? (a - b) / m : 0; // -1 (gone) .. +1 (new)
      if (Math.abs(r) < 0.02) return 'hsl(40,6%,90%)';
      const l = 94 - Math.abs(r) * 38;
      return r >= 0 ? 'hsl(0,80%,' + l + '%)' : 'hsl(215,80%,' + l + '%)';
    }
    let c = colorCache.get(f);
    if (!c) {
      const [h, sat] = HUES[kindName(f)] || HUES.native;
      const k = hash(fname(f));
      c = 'hsl(' + (h + k * 24).toFixed(0) + ',' + sat + '%,' + (58 + k * 14).toFixed(0) + '%)';
      colorCache.set(f, c);
    }
    return c;
  }
  function legend() {
    if (DIFF) {
      $('legend').innerHTML = '<i style="background:hsl(0,80%,60%)"></i>grew<i style="background:hsl(215,80%,60%)"></i>shrank<i style="background:hsl(40,6%,90%)"></i>unchanged' +
        ' (color: change of the frame\u2019s total between base and new, relative to its size)';
      return;
    }
    const seen = new Set();
    for (let f = 1; f < NF; f++) seen.add(kindName(f));
    const labels = { native: 'native', kernel: 'kernel', go: 'Go', marker: 'marker ([truncated] \u2026)', process: 'process', other: 'interpreted / JIT' };
    let h = '';
    for (const k of Object.keys(labels)) {
      if (!seen.has(k)) continue;
      const [hu, sa] = HUES[k];
      h += '<i style="background:hsl(' + hu + ',' + sa + '%,62%)"></i>' + labels[k];
    }
    $('legend').innerHTML = h + '<i style="background:#d36df0"></i>search match';
  }

  function draw() {
    const W = canvas.parentElement.clientWidth || 1000;
    const dpr = window.devicePixelRatio || 1;
    const t = total[st.widthOf];
    const z = st.zoom;
    // depth of the deepest visible row below the zoomed node
    let deepest = depth[z];
    const minw = 0.33;
    const scale = t[z] > 0 ? W / t[z] : 0;
    for (let i = z; i < send[z];) {
      const w = t[i] * scale;
      if (w < minw) { i = send[i]; continue; }
      if (depth[i] > deepest) deepest = depth[i];
      i++;
    }
    const H = (deepest + 1) * ROW + 2;
    canvas.width = Math.round(W * dpr);
    canvas.height = Math.round(H * dpr);
    canvas.style.height = H + 'px';
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    ctx.font = '12px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace';
    ctx.textBaseline = 'middle';
    const cw = ctx.measureText('m').width || 7;
    drawn = [];
    const rect = (x, w, d, n, dim) => {
      const y = d * ROW;
      ctx.fillStyle = color(n);
      ctx.globalAlpha = dim ? 0.55 : 1;
      ctx.fillRect(x, y, Math.max(w - 0.5, 0.5), ROW - 1);
      ctx.globalAlpha = 1;
      drawn.push([x, w, d, n]);
      if (w > cw * 3) {
        const name = n === 0 ? 'all' : fname(nframe[n]);
        const fit = Math.floor((w - 6) / cw);
        ctx.fillStyle = '#111';
        ctx.fillText(name.length > fit ? name.slice(0, Math.max(fit - 1, 1)) + '\u2026' : name, x + 3, y + ROW / 2);
      }
    };
    // the zoomed node's ancestors, full width
    const anc = [];
    for (let a = z; a !== 0; a = parent[a]) anc.push(parent[a]);
    for (const a of anc) rect(0, W, depth[a], a, true);
    // the zoomed subtree
    const xs = new Float64Array(N);
    const cursor = new Float64Array(N);
    xs[z] = 0; cursor[z] = 0;
    rect(0, t[z] > 0 ? W : 0, depth[z], z, false);
    for (let i = z + 1; i < send[z];) {
      const w = t[i] * scale;
      const p = parent[i];
      if (w < minw) { cursor[p] += w; i = send[i]; continue; }
      const x = cursor[p];
      cursor[p] += w;
      xs[i] = x; cursor[i] = x;
      rect(x, w, depth[i], i, false);
      i++;
    }
    $('zoom-reset').disabled = z === 0;
  }

  function nodeAt(x, y) {
    const d = Math.floor(y / ROW);
    for (let k = drawn.length - 1; k >= 0; k--) {
      const r = drawn[k];
      if (r[2] === d && x >= r[0] && x < r[0] + r[1]) return r[3];
    }
    return -1;
  }

  function tipText(n) {
    const f = nframe[n];
    const lines = [];
    lines.push('<b>' + esc(n === 0 ? 'all samples' : fname(f)) + '</b>');
    if (n && F.bin[f]) lines.push('<span style="opacity:.8">' + esc(binPath(F.bin[f])) + '</span>');
    if (n && F.file[f]) lines.push('<span style="opacity:.8">' + esc(S[F.file[f]]) + '</span>');
    if (DIFF) {
      const b = norm(0, total[0][n]), a = norm(1, total[1][n]);
      const sb = norm(0, self[0][n]), sa = norm(1, self[1][n]);
      lines.push('total: ' + fmtNorm(b) + ' \u2192 ' + fmtNorm(a) + ' (' + fmtDelta(a - b) + ')');
      lines.push('self: ' + fmtNorm(sb) + ' \u2192 ' + fmtNorm(sa) + ' (' + fmtDelta(sa - sb) + ')');
    } else {
      const g = grand[0] || 1;
      lines.push('total: ' + fmtValue(total[0][n]) + ' (' + pct(total[0][n] / g) + ')');
      lines.push('self: ' + fmtValue(self[0][n]) + ' (' + pct(self[0][n] / g) + ')');
    }
    return lines.join('<br>');
  }

  canvas.addEventListener('mousemove', (e) => {
    const r = canvas.getBoundingClientRect();
    const n = nodeAt(e.clientX - r.left, e.clientY - r.top);
    const tip = $('tip');
    if (n < 0) { tip.hidden = true; return; }
    tip.innerHTML = tipText(n);
    tip.hidden = false;
    const x = e.clientX - r.left + 14, y = e.clientY - r.top + 14;
    tip.style.left = Math.min(x, r.width - tip.offsetWidth - 4) + 'px';
    tip.style.top = y + 'px';
  });
  canvas.addEventListener('mouseleave', () => { $('tip').hidden = true; });
  canvas.addEventListener('click', (e) => {
    const r = canvas.getBoundingClientRect();
    const n = nodeAt(e.clientX - r.left, e.clientY - r.top);
    if (n < 0) return;
    st.zoom = n;
    draw();
  });
  $('zoom-reset').onclick = () => { st.zoom = 0; draw(); };
  let searchTimer = 0;
  $('search').addEventListener('input', () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => { setSearch($('search').value.trim()); searchResult(); draw(); }, 80);
  });
  window.addEventListener('resize', () => draw());

  // ---------------------------------------------------------------- tables
  // per frame: self, and total counted once per stack under recursion; per binary likewise
  function aggregate(keyOf, nkeys, p) {
    const s = new Float64Array(nkeys), t = new Float64Array(nkeys), open = new Int32Array(nkeys);
    const stack = [];
    const sf = self[p], tf = total[p];
    for (let i = 1; i < N; i++) {
      while (stack.length && depth[stack[stack.length - 1]] >= depth[i]) open[keyOf(stack.pop())]--;
      const k = keyOf(i);
      if (k < 0) { stack.push(i); open[0]++; continue; }
      s[k] += sf[i];
      if (open[k] === 0) t[k] += tf[i];
      open[k]++;
      stack.push(i);
    }
    return [s, t];
  }
  const keyOfNode = (i) => (F.kind[nframe[i]] === 4 ? 0 : nframe[i]);
  const binOfNode = (i) => F.bin[nframe[i]];

  // a sortable table: cols = [{h, cls, v(row) number|string, f(row) html}]
  function table(el, cols, rows, sortCol, limit, moreBtn, onRow) {
    let sc = sortCol, shown = limit;
    function render() {
      const c = cols[sc];
      rows.sort((a, b) => {
        const x = c.v(a), y = c.v(b);
        if (typeof x === 'string') return x.localeCompare(y);
        return c.abs ? Math.abs(y) - Math.abs(x) : y - x;
      });
      let h = '<thead><tr>' + cols.map((c, i) => '<th class="' + (c.cls || '') + (i === sc ? ' sorted' : '') + '" data-i="' + i + '">' + c.h + '</th>').join('') + '</tr></thead><tbody>';
      const n = Math.min(rows.length, shown);
      for (let r = 0; r < n; r++) {
        const row = rows[r];
        h += '<tr class="row ' + (row.cls || '') + '" data-r="' + r + '">' + cols.map((c) => '<td class="' + (c.cls || '') + '">' + c.f(row) + '</td>').join('') + '</tr>';
      }
      el.innerHTML = h + '</tbody>';
      el.querySelectorAll('th').forEach((th) => { th.onclick = () => { sc = +th.dataset.i; render(); }; });
      if (onRow) el.querySelectorAll('tbody tr').forEach((tr) => { tr.onclick = () => onRow(rows[+tr.dataset.r]); });
      if (moreBtn) {
        moreBtn.hidden = rows.length <= shown;
        moreBtn.textContent = 'show all ' + rows.length.toLocaleString('en-US') + ' rows';
        moreBtn.onclick = () => { shown = rows.length; render(); };
      }
    }
    render();
  }
  const barCell = (share, text) => '<span class="b" style="width:' + Math.min(100, Math.max(0, share * 100)).toFixed(1) + '%"></span><span class="t">' + text + '</span>';
  const deltaCell = (x) => '<span class="' + (x > 0 ? 'pos' : x < 0 ? 'neg' : '') + '">' + fmtDelta(x) + '</span>';

  function functionsTable() {
    // merge frames of one name and binary (kinds aside)
    const agg = [];
    for (let p = 0; p < NP; p++) agg.push(aggregate(keyOfNode, NF, p));
    const byKey = new Map();
    const rows = [];
    for (let f = 1; f < NF; f++) {
      if (F.kind[f] === 4) continue;
      let any = false;
      for (let p = 0; p < NP; p++) any = any || agg[p][1][f] > 0;
      if (!any) continue;
      const key = fname(f) + '\u0000' + (DIFF ? '' : F.bin[f]);
      let row = byKey.get(key);
      if (!row) {
        row = { f, s: new Float64Array(NP), t: new Float64Array(NP) };
        byKey.set(key, row);
        rows.push(row);
      }
      for (let p = 0; p < NP; p++) { row.s[p] += agg[p][0][f]; row.t[p] += agg[p][1][f]; }
    }
    const name = (r) => esc(fname(r.f)) + (F.bin[r.f] ? ' <span class="bin">' + esc(baseName(binPath(F.bin[r.f]))) + '</span>' : '');
    let cols;
    if (DIFF) {
      for (const r of rows) {
        r.ns = [norm(0, r.s[0]), norm(1, r.s[1])];
        r.nt = [norm(0, r.t[0]), norm(1, r.t[1])];
      }
      cols = [
        { h: 'total \u0394', v: (r) => r.nt[1] - r.nt[0], f: (r) => deltaCell(r.nt[1] - r.nt[0]), abs: true },
        { h: 'total base', v: (r) => r.nt[0], f: (r) => fmtNorm(r.nt[0]) },
        { h: 'total new', v: (r) => r.nt[1], f: (r) => fmtNorm(r.nt[1]) },
        { h: 'self \u0394', v: (r) => r.ns[1] - r.ns[0], f: (r) => deltaCell(r.ns[1] - r.ns[0]), abs: true },
        { h: 'self base', v: (r) => r.ns[0], f: (r) => fmtNorm(r.ns[0]) },
        { h: 'self new', v: (r) => r.ns[1], f: (r) => fmtNorm(r.ns[1]) },
        { h: 'function', cls: 'name', v: (r) => fname(r.f), f: name },
      ];
    } else {
      const g = grand[0] || 1;
      cols = [
        { h: 'self', cls: 'barcell', v: (r) => r.s[0], f: (r) => barCell(r.s[0] / g, pct(r.s[0] / g)) },
        { h: 'self value', v: (r) => r.s[0], f: (r) => fmtValue(r.s[0]) },
        { h: 'total', cls: 'barcell', v: (r) => r.t[0], f: (r) => barCell(r.t[0] / g, pct(r.t[0] / g)) },
        { h: 'total value', v: (r) => r.t[0], f: (r) => fmtValue(r.t[0]) },
        { h: 'function', cls: 'name', v: (r) => fname(r.f), f: name },
      ];
    }
    table($('functions'), cols, rows, 0, 100, $('functions-more'), (r) => {
      const q = '/^' + fname(r.f).replace(/[.*+?^${}()|[\]\\/]/g, '\\$&') + '$/';
      $('search').value = q;
      setSearch(q); searchResult(); draw();
      $('flame-section').scrollIntoView({ behavior: 'smooth' });
    });
  }

  function binariesTable() {
    const NB = D.bins.path.length;
    const agg = [];
    for (let p = 0; p < NP; p++) agg.push(aggregate((i) => binOfNode(i) || -1, NB, p));
    const rows = [];
    for (let b = 1; b < NB; b++) {
      const r = { b, s: [], t: [] };
      let any = false;
      for (let p = 0; p < NP; p++) { r.s.push(norm(p, agg[p][0][b])); r.t.push(norm(p, agg[p][1][b])); any = any || agg[p][1][b] > 0; }
      if (any) rows.push(r);
    }
    const sym = (r) => {
      const n = D.bins.named[r.b], l = D.bins.locs[r.b];
      if (!l) return 'no frames';
      if (n === l) return 'yes';
      if (n === 0) return 'no';
      return 'partly (' + Math.round(100 * n / l) + '% of ' + l.toLocaleString('en-US') + ' frames named)';
    };
    const bid = (r) => S[D.bins.buildId[r.b]] ? '<code>' + esc(S[D.bins.buildId[r.b]]) + '</code>' : '<span class="bin">none</span>';
    const path = (r) => esc(binPath(r.b));
    let cols;
    if (DIFF) {
      cols = [
        { h: 'total \u0394', v: (r) => r.t[1] - r.t[0], f: (r) => deltaCell(r.t[1] - r.t[0]), abs: true },
        { h: 'total base', v: (r) => r.t[0], f: (r) => fmtNorm(r.t[0]) },
        { h: 'total new', v: (r) => r.t[1], f: (r) => fmtNorm(r.t[1]) },
        { h: 'self \u0394', v: (r) => r.s[1] - r.s[0], f: (r) => deltaCell(r.s[1] - r.s[0]), abs: true },
        { h: 'executable', cls: 'name', v: (r) => binPath(r.b), f: path },
        { h: 'build id', cls: 'name', v: (r) => S[D.bins.buildId[r.b]] || '', f: bid },
        { h: 'symbolized', v: (r) => D.bins.named[r.b] / (D.bins.locs[r.b] || 1), f: sym },
      ];
    } else {
      cols = [
        { h: 'self', cls: 'barcell', v: (r) => r.s[0], f: (r) => barCell(r.s[0], pct(r.s[0])) },
        { h: 'total', cls: 'barcell', v: (r) => r.t[0], f: (r) => barCell(r.t[0], pct(r.t[0])) },
        { h: 'executable', cls: 'name', v: (r) => binPath(r.b), f: path },
        { h: 'build id', cls: 'name', v: (r) => S[D.bins.buildId[r.b]] || '', f: bid },
        { h: 'symbolized', v: (r) => D.bins.named[r.b] / (D.bins.locs[r.b] || 1), f: sym },
      ];
    }
    table($('binaries'), cols, rows, DIFF ? 0 : 1, 1e9, null, null);
  }

  function procLabel(p) {
    const bits = [];
    if (D.procs.pid[p] >= 0) bits.push('pid ' + D.procs.pid[p]);
    if (S[D.procs.exe[p]]) bits.push(S[D.procs.exe[p]]);
    if (S[D.procs.service[p]]) bits.push('service ' + S[D.procs.service[p]]);
    return bits.join(' ') || 'all samples';
  }
  function threadLabel(t) {
    const bits = [];
    if (D.threads.tid[t] >= 0) bits.push('tid ' + D.threads.tid[t]);
    if (S[D.threads.name[t]]) bits.push(S[D.threads.name[t]]);
    return (bits.join(' ') || 'thread') + ' (' + procLabel(thProc[t]) + ')';
  }

  let procRows = null;
  function procsTable() {
    // shares without any filter, so the table stays a map of the whole profile
    const NT = D.threads.proc.length, NPR = D.procs.pid.length;
    const vals = smpVals[st.type];
    const tv = [], pv = [], g = [];
    for (let p = 0; p < NP; p++) { tv.push(new Float64Array(NT)); pv.push(new Float64Array(NPR)); g.push(0); }
    for (let i = 0; i < smpNode.length; i++) {
      const p = smpProf[i];
      tv[p][smpThread[i]] += vals[i];
      pv[p][thProc[smpThread[i]]] += vals[i];
      g[p] += vals[i];
    }
    const share = (p, v) => (DIFF && st.absolute ? v : g[p] > 0 ? v / g[p] : 0);
    const procs = [];
    for (let pr = 1; pr < NPR; pr++) {
      const r = { kind: 'proc', id: pr, v: [], threads: [] };
      for (let p = 0; p < NP; p++) r.v.push(share(p, pv[p][pr]));
      procs.push(r);
    }
    for (let t = 1; t < NT; t++) {
      const r = { kind: 'thread', id: t, v: [], cls: 'thread' };
      for (let p = 0; p < NP; p++) r.v.push(share(p, tv[p][t]));
      const pr = procs[thProc[t] - 1];
      if (pr) pr.threads.push(r);
    }
    const key = (r) => (DIFF ? Math.max(r.v[0], r.v[1]) : r.v[0]);
    procs.sort((a, b) => key(b) - key(a));
    const rows = [];
    for (const p of procs) {
      p.cls = (st.proc === p.id ? 'sel' : '');
      rows.push(p);
      p.threads.sort((a, b) => key(b) - key(a));
      for (const t of p.threads) { t.cls = 'thread' + (st.thread === t.id ? ' sel' : ''); rows.push(t); }
    }
    procRows = rows;
    const label = (r) => (r.kind === 'proc' ? '<b>' + esc(procLabel(r.id)) + '</b>' : esc(threadLabel(r.id).replace(/ \(.*\)$/, '')));
    let cols;
    if (DIFF) {
      cols = [
        { h: 'base', v: () => 0, f: (r) => fmtNorm(r.v[0]) },
        { h: 'new', v: () => 0, f: (r) => fmtNorm(r.v[1]) },
        { h: '\u0394', v: () => 0, f: (r) => deltaCell(r.v[1] - r.v[0]) },
        { h: 'process / thread', cls: 'name', v: () => 0, f: label },
      ];
    } else {
      cols = [
        { h: 'share', cls: 'barcell', v: () => 0, f: (r) => barCell(r.v[0], pct(r.v[0])) },
        { h: 'process / thread', cls: 'name', v: () => 0, f: label },
      ];
    }
    // already ordered (processes by share, their threads under them): the sort is stable
    table($('procs'), cols, rows, 0, 300, $('procs-more'), (r) => {
      if (r.kind === 'proc') { st.proc = st.proc === r.id ? -1 : r.id; st.thread = -1; } else { st.thread = st.thread === r.id ? -1 : r.id; st.proc = -1; }
      st.zoom = 0;
      update();
    });
  }

  function update() {
    compute();
    filterText();
    searchResult();
    draw();
    functionsTable();
    binariesTable();
    procsTable();
  }

  // what the last paint drew, for tests and for the curious: name, share, x, width, depth
  window.otelprof = {
    drawn: () => drawn.map(([x, w, d, n]) => ({
      name: n === 0 ? 'all' : fname(nframe[n]), x, w, depth: d, node: n,
      share: norm(st.widthOf, total[st.widthOf][n]),
    })),
    data: D,
  };

  header();
  legend();
  setSearch('');
  update();
  const ready = performance.now();
  requestAnimationFrame(() => {
    document.body.dataset.readyMs = ready.toFixed(1);
    document.body.dataset.paintMs = performance.now().toFixed(1);
  });
})();
