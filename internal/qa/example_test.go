package qa_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/qa"
	"github.com/agentmem/memory/searchr1"
)

// Example evaluates a (scripted) Search-R1 model over a store on a QA file in the
// FlashRAG / Search-R1 shape and prints the per-dataset scores. With a real model,
// the generator is &searchr1.OpenAI{BaseURL: "http://127.0.0.1:8000/v1", Model: "..."}.
func Example() {
	ctx := context.Background()
	m, err := memory.Open("") // a temporary store, removed on Close
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	if err := m.Add(ctx,
		memory.Document{ID: "fr", Title: "France", Text: "Paris is the capital of France."},
		memory.Document{ID: "de", Title: "Germany", Text: "Berlin is the capital of Germany."},
	); err != nil {
		fmt.Println(err)
		return
	}
	questions, err := qa.Load(strings.NewReader(
		`{"id":"1","question":"capital of France?","golden_answers":["Paris"],"data_source":"nq"}`+"\n"+
			`{"id":"2","question":"capital of Germany?","golden_answers":["Berlin"],"data_source":"hotpotqa"}`+"\n"), "questions.jsonl")
	if err != nil {
		fmt.Println(err)
		return
	}
	// A stand-in model: it searches the question, then answers with the first title's city.
	model := searchr1.GeneratorFunc(func(ctx context.Context, prompt string, stop []string) (string, error) {
		q := prompt[strings.LastIndex(prompt, "Question: ")+len("Question: "):]
		q = q[:strings.IndexByte(q, '\n')]
		if !strings.Contains(prompt, "\n\n<context>") {
			return "<think>I should search.</think><search>" + q + "</search>", nil
		}
		if strings.Contains(prompt, "Paris is") {
			return "<answer>Paris</answer>", nil
		}
		return "<answer>Munich</answer>", nil
	})
	runner := &searchr1.Runner{Loop: searchr1.Loop{TopK: 1}, Generator: model, Searcher: m}
	report, err := qa.Evaluate(ctx, runner, questions)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range report.DatasetNames() {
		s := report.Datasets[name]
		fmt.Printf("%-8s EM %.2f F1 %.2f\n", name, s.EM, s.F1)
	}
	fmt.Printf("all      EM %.2f F1 %.2f\n", report.Overall.EM, report.Overall.F1)
	// Output:
	// hotpotqa EM 0.00 F1 0.00
	// nq       EM 1.00 F1 1.00
	// all      EM 0.50 F1 0.50
}
