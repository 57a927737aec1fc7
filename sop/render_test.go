package sop

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestRender(t *testing.T) {
	debug := Procedure{
		Name:        "debug_python_code",
		Description: "Find and fix the cause of a bug.\nIn Python.",
		Steps: []Step{
			{Action: "Reproduce the problem with {{input}}."},
			{Action: "Read the traceback:\n  - bottom line first\n\n  - then the caller"},
			{Action: "Run the tests again", Condition: "fix proposed"},
			{Action: "Ask {{ owner }} about {{missing}}", Condition: "the {{input}} still fails"},
		},
	}
	tests := []struct {
		name string
		sop  Procedure
		ctx  RenderContext
	}{
		{"plain", debug, RenderContext{}},
		{"query_vars", debug, RenderContext{Query: "my script\ncrashes", Vars: map[string]string{"input": "data.csv", "owner": "Ana"}}},
		{"no_title", debug, RenderContext{NoTitle: true}},
		{"no_description", Procedure{Name: "x", Steps: []Step{{Action: "only step"}}}, RenderContext{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Render(tt.sop, tt.ctx)
			path := filepath.Join("testdata", "render", tt.name+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("Render mismatch (run with -update to accept)\n--- got\n%s--- want\n%s", got, want)
			}
		})
	}
}
