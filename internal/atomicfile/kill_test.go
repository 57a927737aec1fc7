//go:build unix

package atomicfile

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// killEnv makes the test binary a child that replaces one file over and over with whole,
// numbered contents of different sizes and prints "ack N" once the N-th replacement has
// returned.
const killEnv = "ATOMICFILE_KILL_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(killEnv); path != "" {
		killChild(path)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// content is the n-th content the child writes: its number, then filler (1 byte to about
// 3 MiB, so that writes span several buffers), then the number again.
func content(n int) []byte {
	size := 1 + (n*7919)%(3<<20)
	return fmt.Appendf(nil, "%d|%s|%d", n, bytes.Repeat([]byte{byte('a' + n%26)}, size), n)
}

func killChild(path string) {
	out := bufio.NewWriter(os.Stdout)
	for n := 1; ; n++ {
		if err := WriteFile(path, content(n), Options{}); err != nil {
			fmt.Fprintln(out, "err", err)
			out.Flush()
			os.Exit(1)
		}
		fmt.Fprintln(out, "ack", n)
		out.Flush()
	}
}

// TestKillDuringReplace kills (SIGKILL) a child that replaces a file in a loop at random
// instants, then checks what is on disk: exactly one whole content, never a mix or a part,
// and no older than the last one acknowledged. (A kill is not a power cut, so this shows
// the rename's atomicity, not the fsyncs; those are what the package adds for power loss.)
func TestKillDuringReplace(t *testing.T) {
	if testing.Short() {
		t.Skip("kill test skipped in -short")
	}
	rounds := 12
	for r := range rounds {
		dir := t.TempDir()
		path := filepath.Join(dir, "state")
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), killEnv+"="+path)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		acked := make(chan int, 1<<16)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if n, ok := strings.CutPrefix(sc.Text(), "ack "); ok {
					v, _ := strconv.Atoi(n)
					acked <- v
				}
			}
			close(acked)
		}()
		time.Sleep(time.Duration(20+rand.IntN(300)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		last := 0
		for n := range acked {
			last = n
		}
		got, err := os.ReadFile(path)
		if err != nil {
			if last == 0 && os.IsNotExist(err) {
				continue // killed before the first replacement
			}
			t.Fatalf("round %d: after ack %d: %v", r, last, err)
		}
		head, _, _ := bytes.Cut(got, []byte("|"))
		n, err := strconv.Atoi(string(head))
		if err != nil || !bytes.Equal(got, content(n)) {
			t.Fatalf("round %d: the file is not a whole content (%d bytes, starts %q)", r, len(got), got[:min(len(got), 20)])
		}
		// The kill can land after a replacement and before its ack is read: n may be one
		// past the last ack, never before it.
		if n != last && n != last+1 {
			t.Fatalf("round %d: the file holds content %d; the last acknowledged is %d", r, n, last)
		}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if e.Name() != "state" && !IsTemp(e.Name()) {
				t.Errorf("round %d: stray file %q", r, e.Name())
			}
		}
		t.Logf("round %d: killed after ack %d, file holds %d", r, last, n)
	}
}
