// The page of package webui: collections, documents, search with each result's per-stage
// explanation, and eval reports as SVG charts. Every stored text reaches the page as text
// (text nodes, textContent, attributes of fixed names), never as HTML.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const SVG = "http://www.w3.org/2000/svg";
  const state = { info: null, collection: null, tab: "search", pages: [""], page: 0 };

  // el makes an HTML element: attrs set by name, children appended as nodes or text.
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v;
      else e.setAttribute(k, v);
    }
    for (const c of children) {
      if (c === null || c === undefined || c === false) continue;
      e.append(c instanceof Node ? c : String(c));
    }
    return e;
  }

  // svg makes an SVG element; text, when given, is its text content.
  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = String(text);
    return e;
  }

  // api GETs path (relative to the page) with params and returns its JSON; an answer other
  // than 200 throws its error message.
  async function api(path, params) {
    const u = new URL(path, document.baseURI);
    for (const [k, v] of Object.entries(params || {})) {
      if (v !== undefined && v !== null && v !== "") u.searchParams.set(k, v);
    }
    const resp = await fetch(u, { headers: { Accept: "application/json" } });
    let body = null;
    try {
      body = await resp.json();
    } catch (e) {
      throw new Error(`${resp.status} ${resp.statusText}`);
    }
    if (!resp.ok) {
      const err = new Error(body && body.error ? body.error : `${resp.status} ${resp.statusText}`);
      err.param = body && body.param;
      throw err;
    }
    return body;
  }

  function showError(err) {
    const e = $("error");
    e.textContent = err ? String(err.message || err) : "";
    e.hidden = !err;
  }

  const num = (x, d) => (typeof x === "number" && isFinite(x) ? x.toFixed(d) : "—");

  // ---- collections ----

  async function loadCollections() {
    const body = await api("api/collections");
    const list = $("collections");
    list.replaceChildren();
    for (const c of body.collections) {
      const li = el("li", { "data-name": c.name, "data-count": c.count },
        el("button", { type: "button", title: `analyzer ${c.analyzer}` },
          el("span", { class: "name" }, c.name), el("span", { class: "count" }, c.count)));
      li.querySelector("button").addEventListener("click", () => selectCollection(c.name));
      list.append(li);
    }
    $("collections-empty").hidden = body.collections.length > 0;
    const names = body.collections.map((c) => c.name);
    if (names.length && !names.includes(state.collection)) selectCollection(names[0]);
  }

  function selectCollection(name) {
    state.collection = name;
    for (const li of $("collections").children) li.classList.toggle("selected", li.dataset.name === name);
    state.pages = [""];
    state.page = 0;
    $("results").replaceChildren();
    delete $("results").dataset.query;
    $("search-status").textContent = `Searching collection ${name}.`;
    if (state.tab === "docs") loadDocs();
  }

  // ---- tabs ----

  function showTab(name) {
    if (!["search", "docs", "eval"].includes(name)) name = "search";
    state.tab = name;
    for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b.dataset.tab === name);
    for (const t of ["search", "docs", "eval"]) $("panel-" + t).hidden = t !== name;
    if (location.hash !== "#" + name) history.replaceState(null, "", "#" + name);
    showError(null);
    if (name === "docs") loadDocs();
    if (name === "eval") loadReports();
  }

  // ---- search ----

  async function search(ev) {
    ev.preventDefault();
    const q = $("q").value.trim();
    const status = $("search-status");
    const results = $("results");
    showError(null);
    if (!q) {
      status.textContent = "Type a query.";
      return;
    }
    if (!state.collection) {
      status.textContent = "Select a collection.";
      return;
    }
    status.textContent = "Searching…";
    results.replaceChildren();
    delete results.dataset.query;
    try {
      const body = await api("api/search", {
        collection: state.collection, q, mode: $("mode").value, k: $("k").value,
        rerank: $("rerank").checked ? 1 : undefined,
      });
      const t = body.timings_ms;
      const stages = ["bm25", "embed", "dense", "fuse", "rerank"].filter((s) => t[s] > 0).map((s) => `${s} ${t[s].toFixed(1)}`);
      status.textContent = `${body.results.length} result${body.results.length === 1 ? "" : "s"} in ${t.total.toFixed(1)} ms ` +
        `(mode ${body.used_mode}${body.rerank ? " + rerank" : ""}${stages.length ? "; " + stages.join(", ") + " ms" : ""})`;
      for (const r of body.results) results.append(renderResult(r));
      results.dataset.query = q;
    } catch (err) {
      status.textContent = "";
      showError(err);
    }
  }

  // stageRow is one row of a result's explanation: its stage, rank, raw score, the score
  // normalised to 0..1 and a bar of that.
  function stageRow(stage, label, rank, raw, norm, extra) {
    const tr = el("tr", { "data-stage": stage }, el("th", { scope: "row" }, label));
    if (rank === null && raw === null) {
      tr.append(el("td", { class: "none", colspan: 4 }, "not returned by this retriever"));
      return tr;
    }
    tr.append(el("td", { class: "rank" }, rank === null ? "" : "#" + rank),
      el("td", { class: "score" }, raw === null ? "" : num(raw, 4)),
      el("td", { class: "norm" }, norm === null ? "" : num(norm, 3)));
    const bar = el("td", {}, norm === null ? "" : el("span", { class: "bar" }));
    if (norm !== null) bar.firstChild.style.width = `${Math.round(Math.max(0, Math.min(1, norm)) * 80)}px`;
    if (extra) bar.append(" ", el("span", { class: "muted" }, extra));
    tr.append(bar);
    return tr;
  }

  function renderResult(r) {
    const x = r.explain || {};
    const head = el("h3", {}, el("span", { class: "rank" }, "#" + r.rank), el("span", { class: "title" }, r.title || r.id));
    if (r.title) head.append(el("span", { class: "id" }, r.id));
    if (r.chunks > 1) head.append(el("span", { class: "muted" }, `chunk ${r.chunk_index + 1}/${r.chunks}`));
    head.append(el("span", { class: "scores" }, `score ${num(r.score, 4)} · relevance ${num(r.relevance, 3)}`));
    const table = el("table", { class: "explain" },
      el("thead", {}, el("tr", {}, el("th", {}, "stage"), el("th", {}, "rank"), el("th", {}, "raw score"), el("th", {}, "normalised"), el("th", {}, ""))));
    const body = el("tbody");
    const mode = x.mode || "";
    if (mode !== "dense") {
      body.append(x.bm25 ? stageRow("bm25", "BM25", x.bm25.rank, x.bm25.score, x.bm25.norm) : stageRow("bm25", "BM25", null, null));
    }
    if (mode !== "bm25") {
      const cos = typeof x.cosine === "number" ? `cosine ${x.cosine.toFixed(3)}` : "";
      body.append(x.dense ? stageRow("dense", "Dense", x.dense.rank, x.dense.score, x.dense.norm, cos)
        : stageRow("dense", "Dense", null, null));
    }
    body.append(stageRow("fused", mode === "hybrid" ? "Fused (RRF)" : "Fused", null, x.fused, null,
      x.collection_weight ? `collection weight ${x.collection_weight}` : ""));
    if (x.rerank) body.append(stageRow("rerank", "Rerank", x.rerank.rank, x.rerank.logit, x.rerank.prob, "logit, sigmoid"));
    table.append(body);
    const li = el("li", { class: "card result", "data-id": r.id }, head,
      el("p", { class: "text" }, r.snippet || r.text),
      r.source ? el("p", { class: "meta" }, "source: " + r.source) : null, table);
    if (x.notes && x.notes.length) li.append(el("p", { class: "notes" }, x.notes.join(" · ")));
    return li;
  }

  // ---- documents ----

  async function loadDocs() {
    const status = $("docs-status");
    const list = $("docs");
    if (!state.collection) {
      status.textContent = "Select a collection.";
      list.replaceChildren();
      return;
    }
    const col = state.collection;
    const page = state.page;
    status.textContent = "Loading…";
    try {
      const body = await api("api/documents", { collection: col, after: state.pages[page], limit: state.info.page_size });
      if (col !== state.collection || page !== state.page) return; // another page was asked meanwhile
      list.replaceChildren();
      for (const d of body.documents) {
        const head = el("h3", {}, el("span", { class: "id" }, d.id), d.title ? el("span", { class: "title" }, d.title) : null);
        const text = el("p", { class: "text" }, d.text);
        if (d.text_cut) text.append(el("span", { class: "muted" }, ` … (${d.text_bytes} bytes in all)`));
        const meta = [];
        if (d.source) meta.push("source: " + d.source);
        if (d.metadata && Object.keys(d.metadata).length) meta.push("metadata: " + JSON.stringify(d.metadata));
        list.append(el("li", { class: "card doc", "data-id": d.id }, head, text, meta.length ? el("p", { class: "meta" }, meta.join("\n")) : null));
      }
      const first = page * state.info.page_size;
      status.textContent = body.documents.length
        ? `Documents ${first + 1}–${first + body.documents.length} of ${body.count} in ${col}, by id.`
        : `No documents in ${col}.`;
      if (body.next) state.pages[page + 1] = body.next;
      $("docs-next").disabled = !body.next;
      $("docs-prev").disabled = page === 0;
      list.dataset.page = String(page);
    } catch (err) {
      status.textContent = "";
      showError(err);
    }
  }

  // ---- eval reports ----

  // barChart draws bars ({label, value, cls, key, tip}) on a 0..max scale with ticks.
  function barChart(o) {
    const W = o.width || 420, H = o.height || 220, m = { l: 40, r: 10, t: 16, b: 36 };
    const s = svg("svg", { class: "chart " + o.klass, viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": o.title });
    s.append(svg("title", {}, o.title));
    const ih = H - m.t - m.b, iw = W - m.l - m.r;
    const y = (v) => m.t + ih - (o.max > 0 ? (v / o.max) * ih : 0);
    for (const t of o.ticks) {
      s.append(svg("line", { class: "grid", x1: m.l, x2: W - m.r, y1: y(t), y2: y(t) }));
      s.append(svg("text", { x: m.l - 5, y: y(t) + 4, "text-anchor": "end" }, o.tickFmt(t)));
    }
    s.append(svg("line", { class: "axis", x1: m.l, x2: m.l, y1: m.t, y2: m.t + ih }));
    s.append(svg("line", { class: "axis", x1: m.l, x2: W - m.r, y1: m.t + ih, y2: m.t + ih }));
    const groups = o.groups || o.bars.map((b) => ({ label: b.label, bars: [b] }));
    const gw = iw / groups.length;
    groups.forEach((g, gi) => {
      const bw = (gw * 0.75) / g.bars.length;
      g.bars.forEach((b, bi) => {
        const x = m.l + gi * gw + gw * 0.125 + bi * bw;
        const rect = svg("rect", { class: "bar " + (b.cls || ""), x: x.toFixed(1), y: y(b.value).toFixed(1),
          width: Math.max(1, bw - 2).toFixed(1), height: Math.max(0, m.t + ih - y(b.value)).toFixed(1), "data-key": b.key });
        rect.append(svg("title", {}, b.tip || `${b.label}: ${o.valueFmt(b.value)}`));
        s.append(rect);
        if (o.showValues !== false && !(o.hideZero && b.value === 0)) {
          s.append(svg("text", { class: "value", x: (x + (bw - 2) / 2).toFixed(1), y: (y(b.value) - 4).toFixed(1), "text-anchor": "middle" }, o.valueFmt(b.value)));
        }
      });
      s.append(svg("text", { x: (m.l + gi * gw + gw / 2).toFixed(1), y: H - m.b + 16, "text-anchor": "middle" }, g.label));
    });
    if (o.xLabel) s.append(svg("text", { x: m.l + iw / 2, y: H - 4, "text-anchor": "middle", class: "muted" }, o.xLabel));
    return s;
  }

  const METRICS = [["ndcg@10", "nDCG@10"], ["recall@100", "Recall@100"], ["mrr@10", "MRR@10"]];
  const unitTicks = [0, 0.25, 0.5, 0.75, 1];

  function renderReport(rep) {
    const card = el("div", { class: "card report", "data-name": rep.name });
    const date = new Date(rep.date);
    const facts = [rep.dataset && `dataset ${rep.dataset}`, rep.mode && `mode ${rep.mode}`, `${rep.docs} docs`,
      `${rep.metrics.queries} judged queries`, rep.k && `k ${rep.k}`,
      isNaN(date) ? null : date.toISOString().slice(0, 16).replace("T", " ") + " UTC"].filter(Boolean);
    card.append(el("h3", {}, rep.name), el("p", { class: "facts" }, facts.join(" · ")));

    const metrics = barChart({
      klass: "metrics", title: `${rep.name}: metrics`, max: 1, ticks: unitTicks, tickFmt: (t) => t.toFixed(2), valueFmt: (v) => v.toFixed(3),
      bars: METRICS.map(([key, label], i) => ({ key, label, value: rep.metrics[key], cls: "m" + i })),
    });
    card.append(el("div", {}, el("p", { class: "chart-title" }, "Metrics (mean over queries)"), metrics));

    const bins = new Array(10).fill(0);
    for (const q of rep.per_query) bins[Math.min(9, Math.floor(q["ndcg@10"] * 10))]++;
    const top = Math.max(1, ...bins);
    const step = Math.max(1, Math.ceil(top / 4));
    const ticks = [];
    for (let t = 0; t <= top + step - 1; t += step) ticks.push(t);
    const hist = barChart({
      klass: "hist", title: `${rep.name}: per-query nDCG@10`, max: ticks[ticks.length - 1], ticks, tickFmt: (t) => String(t),
      valueFmt: (v) => String(v), xLabel: "nDCG@10 of the query", hideZero: true,
      bars: bins.map((n, i) => ({ key: `bin${i}`, label: (i / 10).toFixed(1), value: n,
        tip: `nDCG@10 ${(i / 10).toFixed(1)}–${((i + 1) / 10).toFixed(1)}${i === 9 ? " (inclusive)" : ""}: ${n} queries` })),
    });
    card.append(el("div", {}, el("p", { class: "chart-title" }, `Per-query nDCG@10 (${rep.per_query.length} queries)`), hist));

    const l = rep.latency_ms;
    const cols = [["p50", l.p50], ["p90", l.p90], ["p99", l.p99], ["mean", l.mean], ["max", l.max]];
    card.append(el("div", {}, el("p", { class: "chart-title" }, `Latency (ms, ${l.queries} queries)`),
      el("table", { class: "latency" }, el("thead", {}, el("tr", {}, ...cols.map(([k]) => el("th", {}, k)))),
        el("tbody", {}, el("tr", {}, ...cols.map(([k, v]) => el("td", { "data-key": k }, num(v, 2))))))));
    return card;
  }

  function renderCompare(reps) {
    const box = $("eval-compare");
    box.replaceChildren();
    if (reps.length < 2) return;
    const chart = barChart({
      klass: "compare", title: "metrics of every report", max: 1, ticks: unitTicks, tickFmt: (t) => t.toFixed(2),
      valueFmt: (v) => v.toFixed(2), width: 640, showValues: reps.length <= 4,
      groups: METRICS.map(([key, label]) => ({
        label, bars: reps.map((r, i) => ({ key: `${key}/${i}`, label: r.name, value: r.metrics[key], cls: "r" + (i % 5),
          tip: `${r.name}: ${label} ${r.metrics[key].toFixed(4)}` })),
      })),
    });
    const legend = el("div", { class: "legend" }, ...reps.map((r, i) => el("span", {}, el("span", { class: "swatch r" + (i % 5) }), r.name)));
    box.append(el("div", { class: "card" }, el("p", { class: "chart-title" }, "All reports"), legend, chart));
  }

  async function loadReports() {
    const status = $("eval-status");
    status.textContent = "Loading…";
    try {
      const body = await api("api/reports");
      const box = $("reports");
      box.replaceChildren();
      const good = [];
      for (const e of body.reports) {
        if (e.report) {
          good.push(e.report);
          box.append(renderReport(e.report));
        } else {
          box.append(el("div", { class: "card report-error" }, `${e.file}: ${e.error}`));
        }
      }
      renderCompare(good);
      status.textContent = body.reports.length ? `${body.reports.length} report${body.reports.length === 1 ? "" : "s"}.`
        : "No eval report: start the server with eval reports (memory eval --report-out FILE, then serve them).";
      box.dataset.loaded = String(body.reports.length);
    } catch (err) {
      status.textContent = "";
      showError(err);
    }
  }

  // ---- start ----

  async function start() {
    for (const b of document.querySelectorAll("#tabs button")) b.addEventListener("click", () => showTab(b.dataset.tab));
    $("search-form").addEventListener("submit", search);
    $("docs-next").addEventListener("click", () => {
      if (state.pages[state.page + 1] === undefined) return; // the next page is not known yet
      state.page++;
      loadDocs();
    });
    $("docs-prev").addEventListener("click", () => { state.page = Math.max(0, state.page - 1); loadDocs(); });
    try {
      state.info = await api("api/info");
      const i = state.info;
      $("store-info").textContent = `v${i.version} · embedder ${i.embedder ? "yes" : "no"} · reranker ${i.reranker ? "yes" : "no"}`;
      $("k").max = String(i.max_k);
      const rr = $("rerank");
      rr.disabled = !i.reranker;
      if (!i.reranker) $("rerank-label").title = "no reranker: start memory serve with --reranker";
      if (!i.embedder) {
        $("mode").querySelector("option[value=dense]").disabled = true;
        $("mode").value = "bm25";
      }
      await loadCollections();
    } catch (err) {
      showError(err);
    }
    showTab(location.hash.slice(1));
    document.body.dataset.ready = "1";
  }

  start();
})();
