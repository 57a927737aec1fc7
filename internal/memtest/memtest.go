// Package memtest holds test helpers for memory and the packages built on it (the CLI, the
// MCP server): the store's answers, an error failing the test. It does not import memory
// (its helpers take the methods they call), so the root package's own tests use it too.
package memtest

import (
	"context"
	"testing"
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

// IDs is c.IDs (a *memory.Collection); an error fails t.
func IDs(t testing.TB, c interface {
	IDs(context.Context) ([]string, error)
}) []string {
	t.Helper()
	ids, err := c.IDs(context.Background())
	if err != nil {
		t.Fatalf("IDs: %v", err)
	}
	return ids
}

// Collections is m.Collections (a *memory.Memory); an error fails t.
func Collections(t testing.TB, m interface {
	Collections(context.Context) ([]string, error)
}) []string {
	t.Helper()
	names, err := m.Collections(context.Background())
	if err != nil {
		t.Fatalf("Collections: %v", err)
	}
	return names
}
