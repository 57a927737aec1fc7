// Package memtest holds test helpers for the packages built on memory (the CLI, the MCP
// server): the store's answers, an error failing the test. The root package's own tests
// keep theirs (they cannot import a package that imports memory).
package memtest

import (
	"context"
	"testing"

	"github.com/agentmem/memory"
)

// Count is c.Count (a *memory.Memory or *memory.Collection); an error fails t.
func Count(t testing.TB, c interface {
	Count(context.Context) (int, error)
}) int {
	t.Helper()
	n, err := c.Count(context.Background())
	if err != nil {
		t.Fatalf("Count: %v", err)
	}
	return n
}

// IDs is c.IDs; an error fails t.
func IDs(t testing.TB, c *memory.Collection) []string {
	t.Helper()
	ids, err := c.IDs(context.Background())
	if err != nil {
		t.Fatalf("IDs: %v", err)
	}
	return ids
}

// Collections is m.Collections; an error fails t.
func Collections(t testing.TB, m *memory.Memory) []string {
	t.Helper()
	names, err := m.Collections(context.Background())
	if err != nil {
		t.Fatalf("Collections: %v", err)
	}
	return names
}
