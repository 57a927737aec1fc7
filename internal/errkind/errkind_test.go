package errkind

import (
	"errors"
	"fmt"
	"testing"
)

func TestNew(t *testing.T) {
	base := errors.New("pkg: corrupt")
	other := errors.New("pkg: closed")
	e := New("pkg: disk files are damaged", base)
	if e.Error() != "pkg: disk files are damaged" {
		t.Fatalf("text %q", e.Error())
	}
	wrapped := fmt.Errorf("%w: seg-3.bin", e)
	if !errors.Is(wrapped, e) || !errors.Is(wrapped, base) || errors.Is(wrapped, other) {
		t.Fatalf("errors.Is: kind %v, base %v, other %v", errors.Is(wrapped, e), errors.Is(wrapped, base), errors.Is(wrapped, other))
	}
	if New("a", base) == New("a", base) {
		t.Fatal("two kinds of the same text are the same error")
	}
}
