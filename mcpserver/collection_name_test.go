package mcpserver

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/memtest"
)

// TestAddToLongCollectionName: memory_add to a collection whose name is too long for its
// index directories once escaped is a tool error naming the invalid collection name, and
// creates no collection (issue 21, point 8).
func TestAddToLongCollectionName(t *testing.T) {
	m := newStore(t)
	cs := connect(t, New(m, Options{}))
	long := strings.Repeat("é", 80) // 160 bytes, 480 escaped
	res := call(t, cs, toolAdd, map[string]any{"collection": long, "documents": []any{map[string]any{"id": "a", "text": "x"}}}, nil)
	if !res.IsError || !strings.Contains(errorText(res), "invalid collection name") {
		t.Fatalf("isError %v %q, want an invalid collection name", res.IsError, errorText(res))
	}
	if slices.Contains(memtest.Collections(t, m), long) {
		t.Fatal("the refused collection was created")
	}
}
