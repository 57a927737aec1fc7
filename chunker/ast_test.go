//go:build cgo

package chunker

import "testing"

func TestCapBytes(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"abcdef", 3, "abc"},
		{"abé", 3, "ab"},  // cut inside é: the split character goes
		{"abéz", 4, "ab"}, // cut right after é: it goes too
		{"a€bc", 3, "a"},  // cut inside a three-byte character
		{"€€", 1, ""},     // nothing whole fits
		{"", 0, ""},
	}
	for _, tc := range tests {
		if got := capBytes(tc.in, tc.n); got != tc.want {
			t.Errorf("capBytes(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
