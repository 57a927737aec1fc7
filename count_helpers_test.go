package memory

import (
	"context"
	"testing"
)

// countOf, idsOf and collectionsOf are Count, IDs and Collections for tests: an error
// fails t.
func countOf(t testing.TB, c interface {
	Count(context.Context) (int, error)
}) int {
	t.Helper()
	n, err := c.Count(context.Background())
	if err != nil {
		t.Fatalf("Count: %v", err)
	}
	return n
}

func idsOf(t testing.TB, c *Collection) []string {
	t.Helper()
	ids, err := c.IDs(context.Background())
	if err != nil {
		t.Fatalf("IDs: %v", err)
	}
	return ids
}

func collectionsOf(t testing.TB, m *Memory) []string {
	t.Helper()
	names, err := m.Collections(context.Background())
	if err != nil {
		t.Fatalf("Collections: %v", err)
	}
	return names
}
