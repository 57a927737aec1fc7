package chunker

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

// checkLossless fails t unless chunks tile src exactly.
func checkLossless(t testing.TB, path string, src []byte, chunks []Chunk) {
	t.Helper()
	if err := losslessErr(src, chunks); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// checkGolden fails t unless got equals the golden file gf; with -update it rewrites gf
// instead. test names the test that regenerates it.
func checkGolden(t *testing.T, gf string, got []byte, test string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(gf, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(gf)
	if err != nil {
		t.Fatalf("%v (run go test ./chunker/ -run %s -update to create it)", err, test)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what %s makes (run go test ./chunker/ -run %s -update and review the diff)\ngot:\n%s", gf, test, test, got)
	}
}

func losslessErr(src []byte, chunks []Chunk) error {
	var b strings.Builder
	pos := 0
	for i, c := range chunks {
		if c.StartByte != pos {
			return fmt.Errorf("chunk %d starts at %d, want %d", i, c.StartByte, pos)
		}
		if c.EndByte <= c.StartByte {
			return fmt.Errorf("chunk %d is empty [%d,%d)", i, c.StartByte, c.EndByte)
		}
		if c.Content != string(src[c.StartByte:c.EndByte]) {
			return fmt.Errorf("chunk %d content differs from src[%d:%d]", i, c.StartByte, c.EndByte)
		}
		b.WriteString(c.Content)
		pos = c.EndByte
	}
	if b.String() != string(src) {
		return fmt.Errorf("concatenation differs from source (%d vs %d bytes)", b.Len(), len(src))
	}
	return nil
}
