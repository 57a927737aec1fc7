package memory_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/agentmem/memory"
)

// A cascade searches a gold collection of curated answers first and falls back to the
// knowledge collections only when gold has nothing good enough. The threshold is compared
// with each result's score: here BM25's.
func ExampleWithCascade() {
	ctx := context.Background()
	m, err := memory.Open("")
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	gold := []memory.Document{
		{ID: "qa-deploy", Text: "Q: how do I deploy the service? A: run make release, then make deploy ENV=prod."},
		{ID: "qa-logs", Text: "Q: where are the logs? A: in /var/log/app, kept for 30 days."},
		{ID: "qa-oncall", Text: "Q: who is on call? A: see the rota in the team calendar."},
	}
	docs := []memory.Document{
		{ID: "runbook-db", Text: "Restoring the database: stop the writers, restore the latest snapshot, replay the WAL."},
		{ID: "runbook-deploy", Text: "Deploys go through make release; a failed deploy is rolled back with make rollback."},
		{ID: "arch", Text: "The service writes to Postgres; snapshots of the database are taken every hour."},
	}
	if err := m.Collection("gold").Add(ctx, gold...); err != nil {
		log.Fatal(err)
	}
	if err := m.Collection("docs").Add(ctx, docs...); err != nil {
		log.Fatal(err)
	}
	for _, q := range []string{"how do I deploy the service", "restore the service database from a snapshot"} {
		res, err := m.Search(ctx, q, memory.WithMode(memory.BM25), memory.TopK(3),
			memory.WithCascade(1.5, "gold", "docs"))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(q)
		for _, r := range res {
			fmt.Printf("  %s/%s (step %d) %.2f\n", r.Collection, r.ID, r.Explain.Cascade, r.Score)
		}
		notes := res[0].Explain.Notes
		fmt.Println(" ", notes[len(notes)-1])
	}
	// Output:
	// how do I deploy the service
	//   gold/qa-deploy (step 1) 2.18
	//   cascade stopped at step 1 of 2 ("gold"): best score 2.183 >= threshold 1.5
	// restore the service database from a snapshot
	//   docs/runbook-db (step 2) 2.23
	//   docs/arch (step 2) 1.96
	//   gold/qa-deploy (step 1) 0.94
	//   cascade stopped at step 2 of 2 ("docs"): best score 2.225 >= threshold 1.5
}

// De-duplication by source keeps the best result of each file, so that one long source
// does not fill the results; WithCollapse drops near-duplicates by their vectors, and the
// two compose.
func ExampleWithSourceDedup() {
	ctx := context.Background()
	m, err := memory.Open("")
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	err = m.Add(ctx,
		memory.Document{ID: "deploy-1", Source: "docs/deploy.md", Text: "Deploy with make release; the release is tagged."},
		memory.Document{ID: "deploy-2", Source: "docs/deploy.md", Text: "A failed release is rolled back with make rollback."},
		memory.Document{ID: "deploy-3", Source: "docs/deploy.md", Text: "Release notes are written before each release."},
		memory.Document{ID: "faq-1", Source: "docs/faq.md", Text: "Q: how often do we release? A: every Tuesday."},
		memory.Document{ID: "note", Text: "Remember the release party on Friday."},
	)
	if err != nil {
		log.Fatal(err)
	}
	for _, opts := range [][]memory.SearchOption{
		{memory.WithMode(memory.BM25), memory.TopK(4)},
		{memory.WithMode(memory.BM25), memory.TopK(4), memory.WithSourceDedup()},
	} {
		res, err := m.Search(ctx, "release", opts...)
		if err != nil {
			log.Fatal(err)
		}
		var line []string
		for _, r := range res {
			line = append(line, fmt.Sprintf("%s (%s)", r.ID, r.Source))
		}
		fmt.Println(strings.Join(line, ", "))
	}
	// Output:
	// deploy-3 (docs/deploy.md), deploy-1 (docs/deploy.md), note (), faq-1 (docs/faq.md)
	// deploy-3 (docs/deploy.md), note (), faq-1 (docs/faq.md)
}
