package parallel

import (
	"errors"
	"testing"
)

// TestAhead: every item reaches consume once, in order, whatever the chunk size; an error
// of consume stops produce (emit reports false) and is returned; an error of produce is
// returned after the items it emitted before it.
func TestAhead(t *testing.T) {
	errProduce, errConsume := errors.New("produce"), errors.New("consume")
	for _, tc := range []struct {
		name              string
		size, ahead       int
		n, failAt, readAt int // items produced; consume fails at item failAt, produce at readAt (-1: never)
		want              error
		consumed          int
	}{
		{"all, chunk of 1", 1, 0, 100, -1, -1, nil, 100},
		{"all, partial last chunk", 7, 2, 100, -1, -1, nil, 100},
		{"none", 4, 1, 0, -1, -1, nil, 0},
		{"consume fails", 3, 1, 10000, 50, -1, errConsume, 50},
		{"produce fails", 8, 4, 100, -1, 37, errProduce, 37},
	} {
		t.Run(tc.name, func(t *testing.T) {
			emitted, next := 0, 0
			err := Ahead(tc.size, tc.ahead, func(emit func(int) bool) error {
				for i := range tc.n {
					if i == tc.readAt {
						return errProduce
					}
					emitted++
					if !emit(i) {
						return nil
					}
				}
				return nil
			}, func(v *int) error {
				if *v != next {
					t.Fatalf("got item %d, want %d", *v, next)
				}
				if next == tc.failAt {
					return errConsume
				}
				next++
				return nil
			})
			if !errors.Is(err, tc.want) || next != tc.consumed {
				t.Fatalf("err %v after %d items, want %v after %d", err, next, tc.want, tc.consumed)
			}
			if tc.want == errConsume && emitted >= tc.n {
				t.Fatalf("produce emitted all %d items after consume failed", emitted)
			}
		})
	}
}
