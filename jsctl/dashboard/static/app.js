// jsctl dashboard: a single page over /api (hash routes #/jobs, #/job/ADDRESS, #/clusters, #/cost).
// Plain DOM and SVG, no libraries; every text from the server goes through textContent or setAttribute.
"use strict";
(function () {
  const CSRF = document.querySelector('meta[name="jsctl-csrf"]').content;
  const ACTIONS = document.querySelector('meta[name="jsctl-actions"]').content === "1";
  const TERMINAL = new Set(["SUCCEEDED", "FAILED", "CANCELLED"]);
  const COLORS = ["#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#0891b2", "#be185d", "#4b5563"];
  const SVGNS = "http://www.w3.org/2000/svg";
  const LOG_KEEP = 5000; // log lines kept in the page

  // ---- DOM helpers ------------------------------------------------------------------------------
  function setAttrs(node, attrs) {
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
  }
  function append(node, children) {
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.appendChild(typeof child === "string" || typeof child === "number" ? document.createTextNode(String(child)) : child);
    }
    return node;
  }
  function h(tag, attrs, ...children) {
    const node = document.createElement(tag);
    setAttrs(node, attrs);
    return append(node, children);
  }
  function s(tag, attrs, ...children) {
    const node = document.createElementNS(SVGNS, tag);
    setAttrs(node, attrs);
    return append(node, children);
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
  function byId(id) { return document.getElementById(id); }
  function jobHref(address) { return "#/job/" + encodeURIComponent(address); }

  // ---- formatting -------------------------------------------------------------------------------
  const dash = "—";
  function fmtAge(sec) {
    if (sec === null || sec === undefined) return dash;
    sec = Math.max(0, Math.floor(sec));
    if (sec < 60) return sec + "s";
    if (sec < 3600) return Math.floor(sec / 60) + "m" + String(sec % 60).padStart(2, "0") + "s";
    if (sec < 86400) return Math.floor(sec / 3600) + "h" + String(Math.floor(sec % 3600 / 60)).padStart(2, "0") + "m";
    return Math.floor(sec / 86400) + "d" + String(Math.floor(sec % 86400 / 3600)).padStart(2, "0") + "h";
  }
  function fmtMoney(v) { return v === null || v === undefined ? dash : "$" + Number(v).toFixed(2); }
  function fmtNum(v) {
    if (v === null || v === undefined || !isFinite(v)) return dash;
    const a = Math.abs(v);
    for (const [unit, scale] of [["T", 1e12], ["G", 1e9], ["M", 1e6], ["k", 1e3]]) {
      if (a >= scale) return (v / scale).toPrecision(3) + unit;
    }
    if (a === 0) return "0";
    return a >= 0.01 ? String(Number(v.toPrecision(3))) : v.toExponential(2);
  }
  function fmtBytes(v) {
    if (v === null || v === undefined) return dash;
    const gib = v / 2 ** 30;
    return gib >= 1 ? gib.toFixed(gib >= 100 ? 0 : 1) + " GiB" : (v / 2 ** 20).toFixed(0) + " MiB";
  }
  function fmtSeconds(v) {
    if (v === null || v === undefined) return dash;
    if (v < 1) return (v * 1000).toPrecision(3) + " ms";
    if (v < 120) return v.toPrecision(3) + " s";
    return fmtAge(v);
  }
  function fmtClock(t) { return t ? new Date(t * 1000).toLocaleTimeString([], { hour12: false }) : dash; }
  function fmtWhen(t) {
    if (!t) return dash;
    const d = new Date(t * 1000);
    return d.toLocaleDateString([], { month: "short", day: "numeric" }) + " " + fmtClock(t);
  }
  function slug(phase) { return String(phase || "UNKNOWN").replace(/[^A-Za-z]+/g, "-"); }
  function badge(phase, title) {
    return h("span", { class: "phase phase-" + slug(phase), "data-phase": phase, title: title || null, text: phase || "UNKNOWN" });
  }
  function placementText(p, gpus) {
    if (!p || p.nodes === null || p.nodes === undefined) return dash;
    const nodes = p.nodes + " node" + (p.nodes === 1 ? "" : "s");
    if (!p.gpus_per_node) return nodes + ", CPU";
    const unit = p.emulated ? "worker" : (p.gpu_type || "GPU");
    return nodes + " × " + p.gpus_per_node + " " + unit + (p.emulated && p.gpus_per_node !== 1 ? "s" : "");
  }

  // ---- talking to the server --------------------------------------------------------------------
  async function request(path, options) {
    const response = await fetch(path, Object.assign({ credentials: "same-origin", headers: { Accept: "application/json" } }, options || {}));
    let data = null;
    try { data = await response.json(); } catch (e) { data = { error: response.statusText }; }
    if (!response.ok) {
      const error = new Error((data && data.error) || response.statusText || ("HTTP " + response.status));
      error.status = response.status;
      error.hint = data && data.hint;
      throw error;
    }
    return data;
  }
  const getJSON = (path) => request(path);
  const post = (path) => request(path, { method: "POST", headers: { Accept: "application/json", "X-Jsctl-Csrf": CSRF } });

  function setLive(ok, error) {
    const live = byId("live");
    live.className = "live " + (ok ? "ok" : "bad");
    byId("updated").textContent = ok ? "updated " + fmtClock(Date.now() / 1000) : "not updated: " + (error && error.message || "no answer");
  }
  function showWarnings(list) {
    const box = clear(byId("warnings"));
    for (const w of list || []) box.appendChild(h("div", { class: "warning", text: w }));
  }

  // ---- charts (SVG) -----------------------------------------------------------------------------
  function niceStep(span, count) {
    const raw = span / Math.max(count, 1);
    const power = Math.pow(10, Math.floor(Math.log10(raw)));
    const f = raw / power;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * power;
  }
  function ticks(min, max, count) {
    const step = niceStep(max - min, count);
    const out = [];
    for (let v = Math.ceil(min / step) * step; v <= max + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
    return out;
  }
  // series: [{name, xs, ys, color, dash}], markers: [{x, cls, title}]
  function lineChart(container, opts) {
    const W = Math.max(container.clientWidth || 0, 300);
    const H = opts.height || 170;
    const pad = { l: 58, r: 12, t: 10, b: 26 };
    const svg = s("svg", { class: "chart-svg", width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img" });
    const series = (opts.series || []).map((sr) => {
      const pts = [];
      for (let i = 0; i < sr.xs.length; i++) {
        const x = sr.xs[i], y = sr.ys[i];
        if (x !== null && y !== null && x !== undefined && y !== undefined && isFinite(x) && isFinite(y)) pts.push([x, y]);
      }
      return Object.assign({}, sr, { pts });
    });
    const first = series.length ? series[0].pts.length : 0;
    svg.setAttribute("data-points", String(first));
    const all = series.flatMap((sr) => sr.pts);
    if (!all.length) {
      svg.appendChild(s("text", { x: W / 2, y: H / 2, class: "empty", "text-anchor": "middle", text: opts.empty || "no data yet" }));
      clear(container).appendChild(svg);
      return svg;
    }
    let xmin = Math.min(...all.map((p) => p[0])), xmax = Math.max(...all.map((p) => p[0]));
    let ymin = Math.min(...all.map((p) => p[1])), ymax = Math.max(...all.map((p) => p[1]));
    if (opts.yzero) ymin = Math.min(0, ymin);
    if (xmax === xmin) { xmin -= 1; xmax += 1; }
    if (ymax === ymin) { const d = Math.abs(ymax) * 0.1 || 1; ymin -= d; ymax += d; }
    const ypad = (ymax - ymin) * 0.06;
    ymax += ypad; ymin -= ypad;
    if (opts.yzero && ymin < 0 && all.every((p) => p[1] >= 0)) ymin = 0;  // no negative axis for what cannot be negative
    const pw = W - pad.l - pad.r, ph = H - pad.t - pad.b;
    const sx = (x) => pad.l + (x - xmin) / (xmax - xmin) * pw;
    const sy = (y) => pad.t + ph - (y - ymin) / (ymax - ymin) * ph;
    const yfmt = opts.yfmt || fmtNum, xfmt = opts.xfmt || fmtNum;
    const grid = s("g", { class: "grid" });
    const unit = opts.yunit ? opts.yunit(Math.max(Math.abs(ymin), Math.abs(ymax))) : 1;  // round ticks in MiB, not bytes
    for (const v of ticks(ymin / unit, ymax / unit, 4).map((t) => t * unit)) {
      grid.appendChild(s("line", { x1: pad.l, x2: W - pad.r, y1: sy(v), y2: sy(v) }));
      grid.appendChild(s("text", { x: pad.l - 6, y: sy(v) + 4, "text-anchor": "end", text: yfmt(v) }));
    }
    for (const v of ticks(xmin, xmax, Math.max(3, Math.floor(pw / 60)))) {
      grid.appendChild(s("text", { x: sx(v), y: H - 8, "text-anchor": "middle", text: xfmt(v) }));
    }
    svg.appendChild(grid);
    svg.appendChild(s("rect", { class: "frame", x: pad.l, y: pad.t, width: pw, height: ph }));
    for (const m of opts.markers || []) {
      if (m.x < xmin || m.x > xmax) continue;
      const g = s("g", { class: "marker " + (m.cls || "") }, s("title", { text: m.title || "" }));
      g.appendChild(s("line", { x1: sx(m.x), x2: sx(m.x), y1: pad.t, y2: pad.t + ph }));
      g.appendChild(s("path", { d: `M${sx(m.x) - 4},${pad.t} l8,0 l-4,7 z` }));
      svg.appendChild(g);
    }
    series.forEach((sr, i) => {
      if (!sr.pts.length) return;
      const color = sr.color || COLORS[i % COLORS.length];
      const limit = Math.max(2 * pw, 200);
      let pts = sr.pts;
      if (pts.length > limit) {
        const k = Math.ceil(pts.length / limit);
        pts = pts.filter((_, j) => j % k === 0 || j === sr.pts.length - 1);
      }
      svg.appendChild(s("polyline", { class: "line", stroke: color, "stroke-dasharray": sr.dash || null,
        points: pts.map((p) => sx(p[0]).toFixed(1) + "," + sy(p[1]).toFixed(1)).join(" ") }));
      const last = sr.pts[sr.pts.length - 1];
      svg.appendChild(s("circle", { cx: sx(last[0]), cy: sy(last[1]), r: 2.5, fill: color },
        s("title", { text: `${sr.name}: ${yfmt(last[1])} at ${xfmt(last[0])}` })));
    });
    if (series.length > 1 || opts.legend) {
      const legend = s("g", { class: "legend" });
      let x = pad.l + 6;
      series.forEach((sr, i) => {
        const color = sr.color || COLORS[i % COLORS.length];
        legend.appendChild(s("line", { x1: x, x2: x + 14, y1: pad.t + 9, y2: pad.t + 9, stroke: color, "stroke-dasharray": sr.dash || null }));
        legend.appendChild(s("text", { x: x + 18, y: pad.t + 13, text: sr.name }));
        x += 26 + 7 * sr.name.length;
      });
      svg.appendChild(legend);
    }
    clear(container).appendChild(svg);
    return svg;
  }

  // ---- workflow DAG (SVG, layered) --------------------------------------------------------------
  function dagSvg(wf, byAddress, dimmed) {
    const NW = 170, NH = 40, GX = 56, GY = 14;
    const deps = {};
    wf.jobs.forEach((a) => { deps[a] = []; });
    wf.edges.forEach(([from, to]) => { if (deps[to]) deps[to].push(from); });
    const layer = {};
    const depth = (a, seen) => {
      if (a in layer) return layer[a];
      if (seen.has(a)) return 0;
      seen.add(a);
      let l = 0;
      for (const d of deps[a] || []) l = Math.max(l, depth(d, seen) + 1);
      return (layer[a] = l);
    };
    wf.jobs.forEach((a) => depth(a, new Set()));
    const layers = [];
    wf.jobs.forEach((a) => { (layers[layer[a]] = layers[layer[a]] || []).push(a); });
    const pos = {};
    layers.forEach((col, li) => {
      if (li > 0) {  // order by the mean row of each job's dependencies (fewer crossings)
        const mean = (a) => { const ds = deps[a].filter((d) => pos[d]); return ds.length ? ds.reduce((t, d) => t + pos[d].row, 0) / ds.length : 0; };
        col.sort((a, b) => mean(a) - mean(b) || a.localeCompare(b));
      } else col.sort();
      col.forEach((a, row) => { pos[a] = { row, x: 8 + li * (NW + GX), y: 8 + row * (NH + GY) }; });
    });
    const rows = Math.max(...layers.map((c) => c.length));
    const W = 16 + layers.length * (NW + GX) - GX, H = 16 + rows * (NH + GY) - GY;
    const svg = s("svg", { class: "dag", width: W, height: H, viewBox: `0 0 ${W} ${H}`, "data-workflow": wf.name });
    svg.appendChild(s("defs", {}, s("marker", { id: "arrow-" + slug(wf.name), viewBox: "0 0 8 8", refX: 8, refY: 4, markerWidth: 7, markerHeight: 7, orient: "auto" },
      s("path", { d: "M0,0 L8,4 L0,8 z", class: "arrow" }))));
    for (const [from, to] of wf.edges) {
      const a = pos[from], b = pos[to];
      if (!a || !b) continue;
      const x1 = a.x + NW, y1 = a.y + NH / 2, x2 = b.x, y2 = b.y + NH / 2, mx = (x1 + x2) / 2;
      svg.appendChild(s("path", { class: "edge", d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2 - 1},${y2}`, "marker-end": `url(#arrow-${slug(wf.name)})` }));
    }
    for (const a of wf.jobs) {
      const job = byAddress[a] || { name: a, phase: "UNKNOWN" };
      const p = pos[a];
      const name = job.name.length > 22 ? job.name.slice(0, 21) + "…" : job.name;
      const link = s("a", { href: jobHref(a), class: "dag-link" + (dimmed(job) ? " dim" : ""), "data-address": a, "data-phase": job.phase },
        s("title", { text: `${a}: ${job.phase}` + (job.reason ? ` (${job.reason})` : "") }),
        s("rect", { class: "dag-node phase-" + slug(job.phase), x: p.x, y: p.y, width: NW, height: NH, rx: 5 }),
        s("text", { class: "dag-name", x: p.x + 8, y: p.y + 16, text: name }),
        s("text", { class: "dag-phase", x: p.x + 8, y: p.y + 31, text: job.phase + (job.cost_so_far ? "  " + fmtMoney(job.cost_so_far) : "") }));
      svg.appendChild(link);
    }
    return svg;
  }

  // ---- pages ------------------------------------------------------------------------------------
  const filters = { workflow: "", cluster: "", phase: "" };

  function fillSelect(select, values, current, allLabel) {
    const wanted = [""].concat(values);
    const have = Array.from(select.options).map((o) => o.value);
    if (JSON.stringify(wanted) !== JSON.stringify(have)) {
      clear(select);
      for (const v of wanted) select.appendChild(h("option", { value: v, text: v || allLabel }));
    }
    select.value = wanted.includes(current) ? current : "";
  }

  function jobsPage(main) {
    const page = { alive: true, interval: 1500 };
    const pick = (key, label) => h("label", {}, label + " ", h("select", { id: "f-" + key, onchange: (e) => { filters[key] = e.target.value; page.render(); } }));
    const tbody = h("tbody");
    main.append(
      h("h1", { text: "Jobs" }),
      h("div", { class: "filters" }, pick("workflow", "Workflow"), pick("cluster", "Cluster"), pick("phase", "Phase"),
        h("span", { id: "jobs-count", class: "muted" })),
      h("table", { class: "grid", id: "jobs-table" },
        h("thead", {}, h("tr", {}, ["Job", "Workflow", "Cluster", "Placement", "Phase", "Age", "Restarts", "$ so far", "Estimate"].map((t) => h("th", { text: t })))),
        tbody),
      h("section", { id: "dags" }));
    let data = null;
    const matches = (j) => (!filters.workflow || j.workflow === filters.workflow) && (!filters.cluster || j.cluster === filters.cluster) &&
      (!filters.phase || j.phase === filters.phase);
    page.render = () => {
      if (!data) return;
      const jobs = data.jobs;
      const uniq = (key) => Array.from(new Set(jobs.map((j) => j[key]).filter(Boolean))).sort();
      fillSelect(byId("f-workflow"), uniq("workflow"), filters.workflow, "all");
      fillSelect(byId("f-cluster"), uniq("cluster"), filters.cluster, "all");
      fillSelect(byId("f-phase"), uniq("phase"), filters.phase, "all");
      const shown = jobs.filter(matches);
      byId("jobs-count").textContent = `${shown.length} of ${jobs.length} job${jobs.length === 1 ? "" : "s"}`;
      clear(tbody);
      if (!jobs.length) tbody.appendChild(h("tr", {}, h("td", { colspan: 9, class: "muted", text: "No jobs in state. Run jsctl apply -f FILE to submit one." })));
      for (const j of shown) {
        tbody.appendChild(h("tr", { "data-address": j.address, "data-phase": j.phase },
          h("td", {}, h("a", { href: jobHref(j.address), class: "job-link", text: j.name }), h("div", { class: "sub", text: j.job_id || "" })),
          h("td", { text: j.workflow || dash }),
          h("td", { text: j.cluster || dash }),
          h("td", { text: placementText(j.placement), title: j.placement && j.placement.text }),
          h("td", {}, badge(j.phase, j.reason), j.reason ? h("div", { class: "sub", text: j.reason }) : null),
          h("td", { text: fmtAge(j.age_s) }),
          h("td", { class: "num", text: String(j.restarts) }),
          h("td", { class: "num", text: fmtMoney(j.cost_so_far) }),
          h("td", { class: "num", text: fmtMoney(j.estimate) })));
      }
      const dags = clear(byId("dags"));
      const byAddress = Object.fromEntries(jobs.map((j) => [j.address, j]));
      for (const [name, wf] of Object.entries(data.workflows).sort()) {
        if (filters.workflow && filters.workflow !== name) continue;
        dags.appendChild(h("div", { class: "card" }, h("h2", { text: "workflow " + name }),
          h("div", { class: "dag-wrap" }, dagSvg(Object.assign({ name }, wf), byAddress, (j) => !matches(j)))));
      }
    };
    page.refresh = async () => {
      const got = await getJSON("/api/jobs");
      if (!page.alive) return;
      data = got;
      showWarnings(data.warnings);
      page.render();
    };
    return page;
  }

  const CURVES = [
    { key: "loss", title: "loss", fmt: fmtNum },
    { key: "samples_per_s", title: "samples/s", fmt: fmtNum, yzero: true },
    { key: "step_time_s", title: "step time", fmt: fmtSeconds, yzero: true },
    { key: "peak_mem_bytes", title: "memory (peak)", fmt: fmtBytes, yzero: true, yunit: (max) => (max >= 2 ** 31 ? 2 ** 30 : 2 ** 20) },
  ];

  function jobPage(main, address) {
    const page = { alive: true, interval: 1000 };
    const enc = encodeURIComponent(address);
    const log = { next: 0, node: "", metrics: false, follow: true, q: "", gen: 0, busy: false, again: false, loaded: false };
    let inflight = null, actionsKey = null, artifactKey = null, message = null, lastDetail = null;
    const chart = (c) => h("div", { class: "chart card", "data-metric": c.key },
      h("div", { class: "chart-head" }, h("span", { class: "chart-title", text: c.title }), h("span", { class: "chart-latest", id: "latest-" + c.key })),
      h("div", { class: "chart-body", id: "chart-" + c.key }));
    main.append(
      h("div", { class: "crumbs" }, h("a", { href: "#/jobs", text: "Jobs" }), " / ", h("span", { text: address })),
      h("div", { class: "job-top" }, h("h1", { id: "job-title", text: address }), h("span", { id: "job-phase" }),
        h("span", { class: "spacer" }), h("div", { id: "job-actions", class: "actions" })),
      h("div", { id: "job-msg", class: "msg" }),
      h("dl", { id: "job-facts", class: "facts" }),
      h("section", {}, h("h2", { text: "Where it runs" }), h("div", { id: "job-nodes", class: "nodes" })),
      h("section", {}, h("h2", {}, "Curves ", h("span", { id: "curves-note", class: "muted" })), h("div", { class: "charts" }, CURVES.map(chart))),
      h("section", { class: "log-section" }, h("h2", { text: "Log" }),
        h("div", { class: "log-bar" },
          h("label", {}, "Node ", h("select", { id: "log-node", onchange: (e) => { log.node = e.target.value; resetLog(); } }, h("option", { value: "", text: "all nodes" }))),
          h("label", {}, h("input", { type: "checkbox", id: "log-follow", checked: true, onchange: (e) => { log.follow = e.target.checked; if (log.follow) refreshLog(); } }), " follow"),
          h("input", { type: "search", id: "log-search", placeholder: "search", oninput: (e) => { log.q = e.target.value; searchLog(); } }),
          h("label", {}, h("input", { type: "checkbox", id: "log-metrics", onchange: (e) => { log.metrics = e.target.checked; resetLog(); } }), " metric lines"),
          h("span", { id: "log-info", class: "muted" })),
        h("div", { id: "job-log", class: "log", tabindex: 0 })),
      h("div", { class: "two" },
        h("section", {}, h("h2", { text: "Checkpoints" }), h("table", { class: "grid", id: "job-checkpoints" })),
        h("section", {}, h("h2", { text: "Events" }), h("table", { class: "grid", id: "job-events" }))),
      h("section", {}, h("h2", { text: "Artifact" }), h("div", { id: "job-artifact" })));

    function resetLog() { log.gen++; log.next = 0; log.loaded = false; clear(byId("job-log")); refreshLog(); }
    function paint(div, text) {
      const q = log.q.toLowerCase();
      if (!q) { div.textContent = text; div.hidden = false; return true; }
      const low = text.toLowerCase();
      let at = low.indexOf(q);
      if (at < 0) { div.textContent = text; div.hidden = true; return false; }
      clear(div);
      let from = 0;
      while (at >= 0) {
        div.appendChild(document.createTextNode(text.slice(from, at)));
        div.appendChild(h("mark", { text: text.slice(at, at + q.length) }));
        from = at + q.length;
        at = low.indexOf(q, from);
      }
      div.appendChild(document.createTextNode(text.slice(from)));
      div.hidden = false;
      return true;
    }
    function searchLog() {
      let shown = 0;
      const rows = byId("job-log").children;
      for (const div of rows) if (div.classList.contains("line") && paint(div, div.textContent)) shown++;
      logInfo(shown);
    }
    function logInfo(shown) {
      const total = byId("job-log").querySelectorAll(".line").length;
      byId("log-info").textContent = log.q ? `${shown} of ${total} lines match` : `${log.next} lines` + (log.follow ? ", following" : "");
    }
    async function refreshLog() {
      if (log.busy) { log.again = true; return; }
      if (!log.follow && log.loaded) return;
      log.busy = true;
      try {
        const gen = log.gen;
        const params = new URLSearchParams({ after: String(log.next) });
        if (log.node) params.set("node", log.node);
        if (log.metrics) params.set("metrics", "1");
        const data = await getJSON(`/api/jobs/${enc}/logs?${params}`);
        if (!page.alive || gen !== log.gen) return;
        const pane = byId("job-log");
        if (data.reset) clear(pane);
        if (data.unavailable && !pane.children.length) pane.appendChild(h("div", { class: "note", text: data.unavailable }));
        if (data.skipped > 0) pane.appendChild(h("div", { class: "note", text: `… ${data.skipped} lines not shown …` }));
        let shown = 0;
        const fragment = document.createDocumentFragment();
        data.lines.forEach((text, i) => {
          const div = h("div", { class: "line", "data-n": data.first + i + 1 });
          if (paint(div, text)) shown++;
          fragment.appendChild(div);
        });
        pane.appendChild(fragment);
        while (pane.children.length > LOG_KEEP) pane.removeChild(pane.firstChild);
        log.next = data.next;
        log.loaded = true;
        if (log.follow && data.lines.length) pane.scrollTop = pane.scrollHeight;
        if (log.q) searchLog(); else logInfo(shown);
      } finally {
        log.busy = false;
        if (log.again && page.alive) { log.again = false; refreshLog(); }
      }
    }

    function renderActions(phase) {
      const box = byId("job-actions");
      if (!ACTIONS) { if (!box.children.length) box.appendChild(h("span", { class: "muted", text: "read-only" })); return; }
      const verbs = phase === "RUNNING" ? ["pause", "stop"] : phase === "PAUSED" ? ["resume", "stop"] :
        (phase === "PENDING" || phase === "PREEMPTED") ? ["stop"] : [];
      const key = verbs.join(",") + "|" + inflight;
      if (key === actionsKey) return;
      actionsKey = key;
      clear(box);
      const label = { pause: "Pause", resume: "Resume", stop: "Stop" };
      const busy = { pause: "Pausing (checkpoint)…", resume: "Resuming…", stop: "Stopping…" };
      for (const verb of verbs) {
        box.appendChild(h("button", { type: "button", class: "btn btn-" + verb, "data-action": verb, disabled: inflight !== null,
          text: inflight === verb ? busy[verb] : label[verb], onclick: () => act(verb) }));
      }
    }
    async function act(verb) {
      if (verb === "stop" && !window.confirm(`Stop ${address}? The job is cancelled and stays in state as CANCELLED.`)) return;
      inflight = verb;
      renderActions(lastDetail && lastDetail.status.phase);
      showMessage(null);
      try {
        const done = await post(`/api/jobs/${enc}/${verb}`);
        const what = { stop: "Stopped", pause: "Paused", resume: "Resumed" }[verb];
        showMessage(`${what} ${done.address}` + (done.step !== undefined && done.step !== null ? ` at checkpoint step ${done.step}` : "") +
          (done.how ? `: ${done.how}` : "") + ".", false);
      } catch (e) {
        showMessage(`Could not ${verb}: ${e.message}` + (e.hint ? ` (${e.hint})` : ""), true);
      } finally {
        inflight = null;
        actionsKey = null;
        if (page.alive) kick();
      }
    }
    function showMessage(text, bad) {
      message = text;
      const box = byId("job-msg");
      box.className = "msg" + (bad ? " bad" : "");
      box.textContent = text || "";
    }

    function renderDetail(d) {
      lastDetail = d;
      const st = d.status;
      byId("job-title").textContent = st.name || address;
      clear(byId("job-phase")).appendChild(badge(st.phase, st.reason));
      renderActions(st.phase);
      const now = d.now;
      const facts = [
        ["Address", address], ["Job id", d.job_id || st.job_id], ["Handle", d.handle || st.handle],
        ["Where", d.placement && d.placement.text || d.cluster], ["Placement", placementText(d.placement)],
        ["Engine state", st.engine_state], ["Reason", st.reason],
        ["Age", st.submitted_at ? fmtAge(now - st.submitted_at) : null],
        ["Running for", st.started_at ? fmtAge((st.ended_at || now) - st.started_at) : null],
        ["Restarts", String(st.restarts)],
        ["Cost", `${fmtMoney(st.cost_so_far)} so far · estimate ${fmtMoney(d.estimate)}` + (d.bound ? ` · bound ${fmtMoney(d.bound)}` : "") +
          (d.price_per_hour !== null && d.price_per_hour !== undefined ? ` · ${fmtMoney(d.price_per_hour)}/h` : "")],
        ["Strategy", d.strategy && Object.keys(d.strategy).length ? [d.strategy.parallelism, (d.strategy.config || {}).sharding_strategy].filter(Boolean).join(" ") : null],
        ["Depends on", (d.depends_on || []).join(", ") || null],
        ["Tuning", d.recommendation],
      ];
      const dl = clear(byId("job-facts"));
      for (const [k, v] of facts) if (v) dl.append(h("dt", { text: k }), h("dd", { text: v }));
      for (const [name, path] of Object.entries(d.outputs || {})) dl.append(h("dt", { text: "Output " + name }), h("dd", { text: path }));

      const nodes = clear(byId("job-nodes"));
      if (!(d.nodes || []).length) nodes.appendChild(h("span", { class: "muted", text: d.not_submitted ? "not submitted: " + d.not_submitted.reason : "not placed" }));
      for (const n of d.nodes || []) {
        const unit = n.emulated ? "worker" : (n.gpu_type || (n.gpus ? "GPU" : "CPU"));
        nodes.appendChild(h("div", { class: "node", "data-node": n.name },
          h("div", { class: "node-name", text: n.name }),
          h("div", { class: "gpus" }, n.ranks.map((r, i) => h("div", { class: "gpu", title: `${unit} ${i} on ${n.name}: rank ${r}` },
            h("span", { class: "gpu-unit", text: (n.gpus ? unit + " " + i : "tasks") }), h("span", { class: "gpu-rank", text: "rank " + r }))))));
      }
      const select = byId("log-node");
      const names = (d.nodes || []).map((n) => n.name).filter((n) => !n.startsWith("node "));
      const have = Array.from(select.options).slice(1).map((o) => o.value);
      if (names.join("\u0000") !== have.join("\u0000")) {
        while (select.options.length > 1) select.remove(1);
        for (const n of names) select.appendChild(h("option", { value: n, text: n }));
        select.value = names.includes(log.node) ? log.node : "";
      }

      const events = [];
      for (const e of d.events || []) events.push({ time: e.time, source: "jsctl", text: e.event });
      for (const e of d.engine_events || []) events.push({ time: e.time, source: "engine", text: `${e.type ? e.type + " " : ""}${e.reason}${e.object ? " " + e.object : ""}: ${e.message}${e.count > 1 ? ` (×${e.count})` : ""}` });
      for (const e of (page.runtimeEvents || [])) events.push({ time: e.time, source: "runtime", text: e.event + (e.step !== null && e.step !== undefined ? ` at step ${e.step}` : "") });
      events.sort((a, b) => (b.time || 0) - (a.time || 0));
      const table = clear(byId("job-events"));
      table.appendChild(h("thead", {}, h("tr", {}, ["When", "From", "What"].map((t) => h("th", { text: t })))));
      const body = table.appendChild(h("tbody"));
      if (d.engine_events_error) body.appendChild(h("tr", {}, h("td", { colspan: 3, class: "muted", text: "engine events not read: " + d.engine_events_error })));
      for (const e of events.slice(0, 100)) body.appendChild(h("tr", {}, h("td", { text: fmtWhen(e.time) }), h("td", { text: e.source }), h("td", { text: e.text })));

      const art = d.artifact;
      const key = art ? art.digest + "|" + (art.files || []).length : "none";
      if (key !== artifactKey) {
        artifactKey = key;
        const box = clear(byId("job-artifact"));
        if (!art) box.appendChild(h("span", { class: "muted", text: "none" }));
        else {
          box.appendChild(h("div", { class: "muted", text: `${art.summary || "artifact"}, sha256 ${art.digest || dash}` }));
          for (const [name, content] of art.files || []) {
            box.appendChild(h("details", { class: "artifact" }, h("summary", { text: name }), h("pre", { text: content })));
          }
        }
      }
    }

    function renderMetrics(m) {
      page.runtimeEvents = m.events || [];
      const note = byId("curves-note");
      const ranks = m.series.map((sr) => sr.rank);
      note.textContent = m.unavailable ? m.unavailable :
        ranks.length ? `(${ranks.length === 1 ? "rank " + ranks[0] : "ranks " + ranks.join(", ")}; ▼ checkpoint: training blocked while saving; ▲ restore)` : "(no metric lines yet)";
      const markers = [];
      for (const c of m.checkpoints || []) {
        markers.push({ x: c.step, cls: "ckpt", title: `checkpoint at step ${c.step}: training blocked ${fmtSeconds(c.blocking_s)}, written in ${fmtSeconds(c.write_s)}` + (c.mode ? ` (${c.mode})` : "") });
      }
      for (const e of m.events || []) {
        if (e.event === "restore" && e.step !== null) markers.push({ x: e.step, cls: "restore", title: `restored from step ${e.step}` });
      }
      for (const c of CURVES) {
        // a rank without this figure (throughput is the job's, on rank 0's line) draws no line and no legend entry
        const series = m.series.filter((sr, i) => i === 0 || (sr[c.key] || []).some((v) => v !== null))
          .map((sr) => ({ name: "rank " + sr.rank, xs: sr.step, ys: sr[c.key] }));
        const svg = lineChart(byId("chart-" + c.key), { series, markers, yfmt: c.fmt, yzero: c.yzero, yunit: c.yunit, xlabel: "step" });
        svg.setAttribute("data-metric", c.key);
        const sr = m.series[0];
        let latest = null;
        if (sr) for (let i = sr[c.key].length - 1; i >= 0; i--) if (sr[c.key][i] !== null) { latest = sr[c.key][i]; break; }
        byId("latest-" + c.key).textContent = latest === null ? "" : c.fmt(latest) + (sr ? ` · step ${sr.step[sr.step.length - 1]}` : "");
      }
      const table = clear(byId("job-checkpoints"));
      table.appendChild(h("thead", {}, h("tr", {}, ["Step", "Mode", "Training blocked", "Written in", "When", "Path"].map((t) => h("th", { text: t })))));
      const body = table.appendChild(h("tbody"));
      const cks = (m.checkpoints || []).slice().reverse().slice(0, 50);
      if (!cks.length) body.appendChild(h("tr", {}, h("td", { colspan: 6, class: "muted", text: "none yet" })));
      for (const c of cks) {
        body.appendChild(h("tr", {}, h("td", { class: "num", text: String(c.step) }), h("td", { text: c.mode || dash }),
          h("td", { class: "num", text: fmtSeconds(c.blocking_s) }), h("td", { class: "num", text: fmtSeconds(c.write_s) }),
          h("td", { text: fmtClock(c.time) }), h("td", { class: "path", text: c.path || dash })));
      }
    }

    page.refresh = async () => {
      const [detail, metrics] = await Promise.all([getJSON(`/api/jobs/${enc}`), getJSON(`/api/jobs/${enc}/metrics`), refreshLog()]);
      if (!page.alive) return;
      showWarnings(detail.warnings);
      renderMetrics(metrics);
      renderDetail(detail);
      if (message === null && TERMINAL.has(detail.status.phase)) byId("job-msg").textContent = "";
    };
    return page;
  }

  function capacityBar(c) {
    const W = 320, H = 16;
    const svg = s("svg", { class: "capacity", width: W, height: H, viewBox: `0 0 ${W} ${H}` });
    const total = c.gpus_total;
    if (!total) {
      svg.appendChild(s("text", { x: 0, y: 12, class: "muted-svg", text: c.elastic ? "elastic: grows on demand" : "capacity unknown" }));
      return svg;
    }
    const free = c.gpus_free === null || c.gpus_free === undefined ? null : Math.max(0, Math.min(total, c.gpus_free));
    const used = free === null ? 0 : total - free;
    svg.appendChild(s("rect", { class: "cap-free", x: 0, y: 0, width: W, height: H, rx: 3 }));
    svg.appendChild(s("rect", { class: "cap-used", x: 0, y: 0, width: W * used / total, height: H, rx: 3 }, s("title", { text: `${used} of ${total} in use` })));
    return svg;
  }

  function clustersPage(main) {
    const page = { alive: true, interval: 2000 };
    main.append(h("h1", { text: "Clusters" }), h("div", { id: "clusters", class: "cards" }));
    page.refresh = async () => {
      const data = await getJSON("/api/clusters");
      if (!page.alive) return;
      showWarnings(data.warnings);
      const box = clear(byId("clusters"));
      if (!data.clusters.length) box.appendChild(h("p", { class: "muted", text: "No clusters in the workspace." }));
      for (const c of data.clusters) {
        const show = (v) => (v === null || v === undefined ? dash : String(v));
        const jobs = h("table", { class: "grid" }, h("thead", {}, h("tr", {}, ["Job", "Phase", "GPUs", "$/h", "$ so far"].map((t) => h("th", { text: t })))),
          h("tbody", {}, c.jobs.length ? c.jobs.map((j) => h("tr", { "data-address": j.address },
            h("td", {}, h("a", { href: jobHref(j.address), text: j.name })), h("td", {}, badge(j.phase)), h("td", { class: "num", text: String(j.gpus) }),
            h("td", { class: "num", text: fmtMoney(j.price_per_hour) }), h("td", { class: "num", text: fmtMoney(j.cost_so_far) }))) :
            h("tr", {}, h("td", { colspan: 5, class: "muted", text: "no jsctl jobs here" }))));
        box.appendChild(h("div", { class: "card cluster", "data-cluster": c.cluster },
          h("div", { class: "cluster-head" }, h("h2", { text: c.cluster }), h("span", { class: "muted", text: c.provider }),
            h("span", { class: "reach " + (c.reachable ? "ok" : "bad"), text: c.reachable ? "reachable" : "not answering" })),
          capacityBar(c),
          h("dl", { class: "facts" },
            h("dt", { text: "GPUs" }), h("dd", { text: c.gpus_total === null && c.elastic ? "elastic" : show(c.gpus_total) }),
            h("dt", { text: "Free" }), h("dd", { class: "gpus-free", text: show(c.gpus_free) }),
            h("dt", { text: "Queued" }), h("dd", { text: show(c.gpus_queued) }),
            h("dt", { text: "jsctl jobs" }), h("dd", { text: `${c.jobs_running.length} running of ${c.jobs_in_state.length} in state` }),
            h("dt", { text: "Running cost" }), h("dd", { text: `${fmtMoney(c.per_hour)}/h · ${fmtMoney(c.so_far)} so far` })),
          jobs));
      }
    };
    return page;
  }

  function clockTick(rows, now) {  // HH:MM over hours, HH:MM:SS over minutes (no repeated labels)
    const starts = rows.filter((r) => r.started_at).map((r) => r.started_at);
    const span = starts.length ? now - Math.min(...starts) : 0;
    return (t) => (span > 1800 ? fmtClock(t).slice(0, 5) : fmtClock(t));
  }
  function costOverTime(rows, now) {
    const started = rows.filter((r) => r.started_at);
    if (!started.length) return null;
    const t0 = Math.min(...started.map((r) => r.started_at)), t1 = Math.max(now, t0 + 60);
    const clusters = Array.from(new Set(started.map((r) => r.cluster || dash))).sort();
    const N = 120, xs = [];
    for (let i = 0; i <= N; i++) xs.push(t0 + (t1 - t0) * i / N);
    const series = [];
    clusters.forEach((c, ci) => {
      const mine = started.filter((r) => (r.cluster || dash) === c);
      const color = COLORS[ci % COLORS.length];
      series.push({ name: c + " actual", xs, color, ys: xs.map((t) => mine.reduce((sum, r) => {
        if (r.price_per_hour === null) return sum;
        const end = Math.min(t, r.ended_at || now);
        return sum + (end > r.started_at ? r.price_per_hour * (end - r.started_at) / 3600 : 0);
      }, 0)) });
      series.push({ name: c + " estimate", xs, color, dash: "5 4", ys: xs.map((t) => mine.reduce((sum, r) => sum + (r.started_at <= t ? (r.estimate || 0) : 0), 0)) });
    });
    return series;
  }

  function costPage(main) {
    const page = { alive: true, interval: 2000 };
    main.append(h("h1", { text: "Cost" }), h("div", { id: "cost-total", class: "total" }),
      h("section", { class: "card" }, h("h2", { text: "Per cluster over time (solid: actual, dashed: estimate of the runs started)" }),
        h("div", { id: "cost-chart", class: "chart-body wide" })),
      h("section", {}, h("h2", { text: "Per cluster" }), h("table", { class: "grid", id: "cost-clusters" })),
      h("section", {}, h("h2", { text: "Per run" }), h("table", { class: "grid", id: "cost-rows" })));
    page.refresh = async () => {
      const data = await getJSON("/api/cost");
      if (!page.alive) return;
      showWarnings(data.warnings);
      const diff = data.total_actual - data.total_estimate;
      byId("cost-total").textContent = `Actual ${fmtMoney(data.total_actual)} against estimate ${fmtMoney(data.total_estimate)} ` +
        `(${diff >= 0 ? "+" : "−"}${fmtMoney(Math.abs(diff))})` + (data.unpriced.length ? ` · no price recorded for ${data.unpriced.join(", ")}` : "");
      const series = costOverTime(data.rows, data.now);
      const chartBox = byId("cost-chart");
      if (series) lineChart(chartBox, { series, yfmt: (v) => "$" + fmtNum(v), xfmt: clockTick(data.rows, data.now), yzero: true, height: 200, legend: true });
      else clear(chartBox).appendChild(h("p", { class: "muted", text: "Nothing has run yet." }));
      const max = Math.max(1e-9, ...data.rows.map((r) => Math.max(r.actual || 0, r.estimate || 0)));
      const bar = (r) => {
        const W = 160;
        return s("svg", { class: "bars", width: W, height: 14, viewBox: `0 0 ${W} 14` },
          s("rect", { class: "bar-est", x: 0, y: 0, width: W * (r.estimate || 0) / max, height: 6 }, s("title", { text: "estimate " + fmtMoney(r.estimate) })),
          s("rect", { class: "bar-act" + ((r.difference || 0) > 0 ? " over" : ""), x: 0, y: 8, width: W * (r.actual || 0) / max, height: 6 }, s("title", { text: "actual " + fmtMoney(r.actual) })));
      };
      const ct = clear(byId("cost-clusters"));
      ct.appendChild(h("thead", {}, h("tr", {}, ["Cluster", "Runs", "Actual", "Estimate", "Difference"].map((t) => h("th", { text: t })))));
      ct.appendChild(h("tbody", {}, data.clusters.map((c) => h("tr", { "data-cluster": c.cluster }, h("td", { text: c.cluster }), h("td", { class: "num", text: String(c.runs) }),
        h("td", { class: "num", text: fmtMoney(c.actual) }), h("td", { class: "num", text: fmtMoney(c.estimate) }),
        h("td", { class: "num", text: fmtMoney(c.actual - c.estimate) })))));
      const rt = clear(byId("cost-rows"));
      rt.appendChild(h("thead", {}, h("tr", {}, ["Job", "Run", "Cluster", "Phase", "Started", "Hours", "$/h", "Actual", "Estimate", "Difference", ""].map((t) => h("th", { text: t })))));
      const body = rt.appendChild(h("tbody"));
      if (!data.rows.length) body.appendChild(h("tr", {}, h("td", { colspan: 11, class: "muted", text: "No runs in state." })));
      for (const r of data.rows) {
        body.appendChild(h("tr", { "data-address": r.address },
          h("td", {}, h("a", { href: jobHref(r.address), text: r.address })), h("td", { class: "sub", text: r.job_id || dash }),
          h("td", { text: r.cluster || dash }), h("td", {}, badge(r.phase)), h("td", { text: fmtWhen(r.started_at) }),
          h("td", { class: "num", text: r.hours.toFixed(3) }), h("td", { class: "num", text: fmtMoney(r.price_per_hour) }),
          h("td", { class: "num", text: fmtMoney(r.actual) }), h("td", { class: "num", text: fmtMoney(r.estimate) }),
          h("td", { class: "num", text: r.difference === null ? dash : fmtMoney(r.difference) }), h("td", {}, bar(r))));
      }
    };
    return page;
  }

  // ---- router and the poll loop -----------------------------------------------------------------
  let current = null, timer = null;

  async function tick() {
    clearTimeout(timer);
    const page = current;
    if (!page) return;
    if (!page.busy) {
      page.busy = true;
      try {
        await page.refresh();
        if (page === current) setLive(true);
      } catch (e) {
        if (page === current) {
          setLive(false, e);
          if (e.status === 401) showWarnings([e.message + (e.hint ? ": " + e.hint : "")]);
          if (e.status === 404 && !page.missing) {
            page.missing = true;
            byId("main").prepend(h("p", { class: "msg bad", text: e.message }));
          }
        }
      } finally {
        page.busy = false;
      }
    }
    if (page === current) timer = setTimeout(tick, document.hidden ? 5000 : page.interval);
  }
  function kick() { clearTimeout(timer); timer = setTimeout(tick, 0); }

  function route() {
    const hash = location.hash || "#/jobs";
    const parts = hash.replace(/^#\/?/, "").split("/");
    const name = parts[0] || "jobs";
    const arg = decodeURIComponent(parts.slice(1).join("/"));
    if (current) current.alive = false;
    const main = clear(byId("main"));
    for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.nav === (name === "job" ? "jobs" : name));
    showWarnings([]);
    if (name === "job" && arg) current = jobPage(main, arg);
    else if (name === "clusters") current = clustersPage(main);
    else if (name === "cost") current = costPage(main);
    else current = jobsPage(main);
    document.title = "jsctl · " + (name === "job" ? arg : name);
    kick();
  }

  window.addEventListener("hashchange", route);
  document.addEventListener("visibilitychange", () => { if (!document.hidden) kick(); });
  route();
})();
