package beir_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentmem/memory/internal/beir"
)

// Load a BEIR folder, score a run against its judgments and write it as a TREC run file.
func Example() {
	dir, _ := os.MkdirTemp("", "beir-example")
	defer os.RemoveAll(dir)
	_ = os.MkdirAll(filepath.Join(dir, "qrels"), 0o755)
	_ = os.WriteFile(filepath.Join(dir, "corpus.jsonl"), []byte(
		`{"_id":"d1","title":"Paris","text":"Paris is the capital of France."}`+"\n"+
			`{"_id":"d2","title":"Berlin","text":"Berlin is the capital of Germany."}`+"\n"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "queries.jsonl"), []byte(
		`{"_id":"q1","text":"capital of France"}`+"\n"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "qrels", "test.tsv"), []byte(
		"query-id\tcorpus-id\tscore\nq1\td1\t1\n"), 0o644)

	ds, err := beir.Load(dir, "test")
	if err != nil {
		fmt.Println(err)
		return
	}
	// A run from any retriever: d2 ranked above d1.
	run := beir.Run{"q1": {{DocID: "d2", Score: 2}, {DocID: "d1", Score: 1}}}
	m, _ := beir.Evaluate(ds.Qrels, run)
	fmt.Printf("docs %d, queries %d\n", len(ds.Corpus), len(ds.Queries))
	fmt.Printf("nDCG@10 %.4f  MRR@10 %.2f  Recall@100 %.0f\n", m.NDCG10, m.MRR10, m.Recall100)
	_ = beir.WriteTREC(os.Stdout, run, "example")
	// Output:
	// docs 2, queries 1
	// nDCG@10 0.6309  MRR@10 0.50  Recall@100 1
	// q1 Q0 d2 1 2 example
	// q1 Q0 d1 2 1 example
}
