package memory

import (
	"path/filepath"
	"testing"

	"github.com/agentmem/memory/sop"
)

func TestSOPsPersistWithStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	m, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = m.SOPs().Add(sop.Procedure{
		Name: "debug_python_code", Description: "Debug a failing Python program",
		Trigger: sop.Triggers{"debug", "bug", "error", "not working"}, Category: "coding", Priority: 8,
		Steps: []sop.Step{{Action: "Reproduce the error"}, {Action: "Apply the fix", Condition: "fix proposed"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SaveSOPs(); err != nil {
		t.Fatal(err)
	}
	m.Close()
	m2 := openT(t, dir)
	got := m2.SOPs().Match("my script throws an error", 3, sop.MatchOptions{})
	if len(got) != 1 || got[0].SOP.Name != "debug_python_code" {
		t.Fatalf("after reopen: %+v", got)
	}
	if got := m2.SOPs().Match("plan a birthday party", 3, sop.MatchOptions{}); len(got) != 0 {
		t.Fatalf("unrelated query matched: %+v", got)
	}
}
