package webui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/agentmem/memory/internal/beir"
)

// browserStep bounds each step of the browser test: generous, for a loaded 2-core machine.
const browserStep = 2 * time.Minute

// chromiumNames are the browser binaries the test looks for on $PATH.
var chromiumNames = []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome", "headless-shell"}

// chromiumPath finds the browser: $MEMORY_CHROMIUM, else the first of chromiumNames on
// $PATH. Without one the test skips, saying why, or fails when MEMORY_REQUIRE_BROWSER=1.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("MEMORY_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("MEMORY_CHROMIUM=%s: %v", p, err)
		}
		return p
	}
	for _, n := range chromiumNames {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("no Chromium found (looked for $MEMORY_CHROMIUM and %s on $PATH): install it with scripts/deps-chromium.sh",
		strings.Join(chromiumNames, ", "))
	if os.Getenv("MEMORY_REQUIRE_BROWSER") == "1" {
		t.Fatal(msg + " (MEMORY_REQUIRE_BROWSER=1)")
	}
	t.Skip(msg)
	return ""
}

// pageWatch runs in the page before its own scripts: it records the page's uncaught
// errors and the Content-Security-Policy violations (an injected inline handler or
// script would be one), and sets window.__xss only if a stored payload ran.
const pageWatch = `window.__errors = []; window.__violations = [];
addEventListener("error", (e) => window.__errors.push(String(e.message)));
addEventListener("unhandledrejection", (e) => window.__errors.push(String(e.reason)));
document.addEventListener("securitypolicyviolation", (e) => window.__violations.push(e.violatedDirective + " " + e.blockedURI));`

// browser is a headless Chromium tab for the test.
type browser struct {
	t   *testing.T
	ctx context.Context
	dir string // where screenshots go ("": none)
}

// do runs actions within browserStep, failing the test with what on error.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStep)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// wait polls the JavaScript predicate until it is true (within browserStep).
func (b *browser) wait(what, predicate string) {
	b.t.Helper()
	b.do(what, chromedp.Poll[chromedp.Void](predicate, chromedp.WithPollingTimeout(browserStep)))
}

// eval evaluates expr in the page and decodes its value into T.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStep)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// shot saves a screenshot of the whole page as name in b.dir, when set.
func (b *browser) shot(name string) {
	b.t.Helper()
	if b.dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, browserStep)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(b.dir, name), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s", filepath.Join(b.dir, name))
}

// clean checks that the page has run nothing it did not ship and has thrown nothing.
func (b *browser) clean(when string) {
	b.t.Helper()
	type state struct {
		XSS        any      `json:"xss"`
		Errors     []string `json:"errors"`
		Violations []string `json:"violations"`
		Injected   int      `json:"injected"`
		Alert      string   `json:"alert"`
	}
	s := eval[state](b, `({xss: window.__xss === undefined ? null : window.__xss, errors: window.__errors, violations: window.__violations,
		injected: document.querySelectorAll("main img, main script, [onerror], [onmouseover]").length,
		alert: document.getElementById("error").hidden ? "" : document.getElementById("error").textContent})`)
	if s.XSS != nil || len(s.Errors) > 0 || len(s.Violations) > 0 || s.Injected > 0 || s.Alert != "" {
		b.t.Errorf("%s: injected script ran %v, page errors %q, CSP violations %q, %d injected elements, error shown %q",
			when, s.XSS, s.Errors, s.Violations, s.Injected, s.Alert)
	}
}

// TestBrowser drives the page in headless Chromium: the collections list, a search and
// each result's per-stage explanation, paging through the documents, the eval charts, and
// stored markup shown as text with nothing injected run. With MEMORY_UI_SCREENSHOTS=dir it
// saves screenshots of each view there.
func TestBrowser(t *testing.T) {
	exe := chromiumPath(t)
	m := testStore(t, true)
	second := testEvalInput()
	second.Name, second.Mode = "fixture bm25", "bm25"
	second.Run = beir.Run{"q1": {{DocID: "n2", Score: 3}, {DocID: "n3", Score: 2}, {DocID: "n1", Score: 1}}, "q3": {{DocID: "n4", Score: 1}}}
	p2 := filepath.Join(t.TempDir(), "bm25.json")
	if err := WriteEvalReport(p2, NewEvalReport(second)); err != nil {
		t.Fatal(err)
	}
	reports := []string{testReport(t), p2}
	h, err := New(m, Options{EvalReports: reports, PageSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	dir := os.Getenv("MEMORY_UI_SCREENSHOTS")
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.WindowSize(1280, 900))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root with its sandbox
	}
	// The whole test is bounded; each step has browserStep of it.
	all, cancelAll := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancelAll()
	actx, cancelAlloc := chromedp.NewExecAllocator(all, opts...)
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()
	// The first call starts the browser and must not have a timeout of its own.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	b := &browser{t: t, ctx: ctx, dir: dir}
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: pageWatch}); err != nil {
		t.Fatal(err)
	}

	// The collections, with their counts; the first is selected.
	b.do("loading the page", chromedp.Navigate(srv.URL+"/"))
	b.wait("the page starting", `document.body.dataset.ready === "1"`)
	cols := eval[[]string](b, `[...document.querySelectorAll("#collections li")].map((li) =>
		li.querySelector(".name").textContent + ":" + li.querySelector(".count").textContent + (li.classList.contains("selected") ? "*" : ""))`)
	if want := []string{"code:1*", "notes:5"}; !slices.Equal(cols, want) {
		t.Fatalf("collections %q, want %q", cols, want)
	}
	b.do("selecting notes", chromedp.Click(chromedp.CSS(`#collections li[data-name="notes"] button`)))
	b.wait("notes selected", `document.querySelector('#collections li[data-name="notes"]').classList.contains("selected")`)

	// A search: each result shows its stages, with the API's figures.
	type stages struct {
		ID         string `json:"id"`
		BM25Rank   string `json:"bm25Rank"`
		BM25Score  string `json:"bm25Score"`
		DenseRank  string `json:"denseRank"`
		DenseScore string `json:"denseScore"`
		Fused      string `json:"fused"`
		RerankRank string `json:"rerankRank"`
		RerankProb string `json:"rerankProb"`
		Results    int    `json:"results"`
	}
	readStages := func() stages {
		return eval[stages](b, `(() => {
			const li = document.querySelector("#results li.result");
			const cell = (stage, c) => { const e = li.querySelector('tr[data-stage="' + stage + '"] td.' + c); return e ? e.textContent : ""; };
			return {id: li.dataset.id, bm25Rank: cell("bm25", "rank"), bm25Score: cell("bm25", "score"), denseRank: cell("dense", "rank"),
				denseScore: cell("dense", "score"), fused: cell("fused", "score"), rerankRank: cell("rerank", "rank"),
				rerankProb: cell("rerank", "norm"), results: document.querySelectorAll("#results li.result").length};
		})()`)
	}
	search := func(query string) {
		t.Helper()
		b.do("typing "+query,
			chromedp.Evaluate[chromedp.Void](`document.getElementById("q").value = ""; delete document.getElementById("results").dataset.query`),
			chromedp.SendKeys(chromedp.ID("q"), query),
			chromedp.Click(chromedp.ID("search-btn")))
		q, _ := json.Marshal(query)
		b.wait("the results of "+query, `document.getElementById("results").dataset.query === `+string(q))
	}
	apiFirst := func(target string) result {
		t.Helper()
		resp, body := get(t, h, "GET", target)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", target, resp.StatusCode, body)
		}
		a := decode[searchAnswer](t, body)
		if len(a.Results) == 0 {
			t.Fatalf("%s: no result", target)
		}
		return a.Results[0]
	}
	f4 := func(v float64) string { return fmt.Sprintf("%.4f", v) }

	search("deploy release")
	got := readStages()
	want := apiFirst("/api/search?collection=notes&q=deploy+release&mode=hybrid&k=10").Explain
	if got.ID != "n1" || got.BM25Rank != "#1" || got.BM25Score != f4(want.BM25.Score) || got.DenseRank != fmt.Sprintf("#%d", want.Dense.Rank) ||
		got.DenseScore != f4(want.Dense.Score) || got.Fused != f4(want.Fused) || got.RerankRank != "" || got.Results < 2 {
		t.Errorf("hybrid result shown %+v, want the API's %+v", got, want)
	}
	b.shot("search-hybrid.png")

	b.do("asking to rerank", chromedp.Click(chromedp.ID("rerank")))
	search("deploy release")
	got = readStages()
	want = apiFirst("/api/search?collection=notes&q=deploy+release&mode=hybrid&k=10&rerank=1").Explain
	if got.ID != "n1" || got.RerankRank != "#1" || got.RerankProb != fmt.Sprintf("%.3f", want.Rerank.Prob) || got.BM25Rank != "#1" || got.Fused != f4(want.Fused) {
		t.Errorf("reranked result shown %+v, want the API's %+v", got, *want.Rerank)
	}
	b.shot("search.png")
	b.clean("after searching")

	// Stored markup is shown as text, and none of it runs.
	b.do("not reranking", chromedp.Click(chromedp.ID("rerank")))
	search("payload alert")
	type shown struct {
		ID, Title, Text string
	}
	s := eval[shown](b, `(() => { const li = document.querySelector('#results li.result[data-id="n5"]');
		return li ? {ID: li.dataset.id, Title: li.querySelector(".title").textContent, Text: li.querySelector(".text").textContent} : {}; })()`)
	if s.ID != "n5" || s.Title != xssTitle || !strings.Contains(s.Text, "<script>window.__xss='script'</script><img src=x onerror=") {
		t.Errorf("stored markup shown as %+v, want the text itself", s)
	}
	b.clean("after a result holding markup")

	// The documents, a page at a time by id.
	pageIDs := func(page int) []string {
		b.wait(fmt.Sprintf("documents page %d", page), fmt.Sprintf(`document.getElementById("docs").dataset.page === "%d"`, page))
		return eval[[]string](b, `[...document.querySelectorAll("#docs li.doc")].map((li) => li.dataset.id)`)
	}
	b.do("opening the documents", chromedp.Click(chromedp.ID("tab-docs")))
	if ids := pageIDs(0); !slices.Equal(ids, []string{"n1", "n2"}) {
		t.Errorf("first page %q", ids)
	}
	status := eval[string](b, `document.getElementById("docs-status").textContent`)
	if !strings.Contains(status, "1–2 of 5") {
		t.Errorf("documents status %q", status)
	}
	b.shot("documents.png")
	b.do("next page", chromedp.Click(chromedp.ID("docs-next")))
	if ids := pageIDs(1); !slices.Equal(ids, []string{"n3", "n4"}) {
		t.Errorf("second page %q", ids)
	}
	b.do("next page", chromedp.Click(chromedp.ID("docs-next")))
	if ids := pageIDs(2); !slices.Equal(ids, []string{"n5"}) {
		t.Errorf("third page %q", ids)
	}
	last := eval[shown](b, `(() => { const li = document.querySelector('#docs li.doc[data-id="n5"]');
		return {ID: li.dataset.id, Title: li.querySelector(".title").textContent, Text: li.querySelector(".text").textContent}; })()`)
	if last.Title != xssTitle || last.Text != xssText {
		t.Errorf("stored markup listed as %+v, want the text itself", last)
	}
	if eval[bool](b, `document.getElementById("docs-next").disabled`) != true {
		t.Error("the last page offers a next page")
	}
	b.shot("documents-markup.png")
	b.clean("after listing a document holding markup")
	b.do("previous page", chromedp.Click(chromedp.ID("docs-prev")))
	if ids := pageIDs(1); !slices.Equal(ids, []string{"n3", "n4"}) {
		t.Errorf("back to the second page: %q", ids)
	}

	// The eval reports: one bar per metric, the per-query histogram, the comparison.
	b.do("opening the eval reports", chromedp.Click(chromedp.ID("tab-eval")))
	b.wait("the reports", `document.getElementById("reports").dataset.loaded === "2"`)
	type chart struct {
		Report string   `json:"report"`
		Keys   []string `json:"keys"`
		Tips   []string `json:"tips"`
		Width  float64  `json:"width"`
		Hist   []string `json:"hist"`
	}
	charts := eval[[]chart](b, `[...document.querySelectorAll("#reports .report")].map((card) => {
		const svg = card.querySelector("svg.metrics");
		const bars = [...svg.querySelectorAll("rect.bar")];
		return {report: card.dataset.name, keys: bars.map((r) => r.dataset.key), tips: bars.map((r) => r.querySelector("title").textContent),
			width: svg.getBoundingClientRect().width,
			hist: [...card.querySelectorAll("svg.hist rect.bar")].map((r) => r.getAttribute("height") > 0 ? r.querySelector("title").textContent : "")};
	})`)
	if len(charts) != 2 {
		t.Fatalf("%d report charts, want 2", len(charts))
	}
	for i, in := range []EvalInput{testEvalInput(), second} {
		r := NewEvalReport(in)
		c := charts[i]
		wantTips := []string{fmt.Sprintf("nDCG@10: %.3f", r.Metrics.NDCG10), fmt.Sprintf("Recall@100: %.3f", r.Metrics.Recall100), fmt.Sprintf("MRR@10: %.3f", r.Metrics.MRR10)}
		if c.Report != r.Name || !slices.Equal(c.Keys, []string{"ndcg@10", "recall@100", "mrr@10"}) || !slices.Equal(c.Tips, wantTips) || c.Width < 100 {
			t.Errorf("metrics chart %+v, want one bar per metric: %q", c, wantTips)
		}
		// The histogram's non-empty bins add up to the report's queries.
		n := 0
		for _, tip := range c.Hist {
			var k int
			if i := strings.LastIndex(tip, ": "); i >= 0 {
				fmt.Sscanf(tip[i+2:], "%d", &k)
			}
			n += k
		}
		if len(c.Hist) != 10 || n != len(r.PerQuery) {
			t.Errorf("%s: histogram %q holds %d queries, want 10 bins of %d", r.Name, c.Hist, n, len(r.PerQuery))
		}
	}
	if bars := eval[int](b, `document.querySelectorAll("#eval-compare svg.compare rect.bar").length`); bars != 6 {
		t.Errorf("comparison chart has %d bars, want 3 metrics x 2 reports", bars)
	}
	b.shot("eval.png")
	b.clean("at the end")
}
