package memory

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentmem/memory/internal/atomicfile"
)

// A writer records who it is in lockInfoName, a small JSON file in the store directory
// written atomically once the store is open (and removed by Close): its pid, command line,
// start time, and the unix socket it serves reads on (remote.go). A process kept out by
// the lock reads it to name the holder, and a read-only open reads it to find the socket.
const (
	lockInfoName = ".memory.lock"
	sockName     = ".memory.sock"
)

// lockInfo is the content of lockInfoName.
type lockInfo struct {
	PID     int       `json:"pid"`
	Argv    []string  `json:"argv"`
	Started time.Time `json:"started"`
	Mode    string    `json:"mode"`   // "writer"
	Socket  string    `json:"socket"` // where the writer serves reads ("": it does not)
	Proto   int       `json:"proto"`  // the version of the socket's protocol
}

// LockedError is the error of an Open kept out by another process's lock: it names the
// holder. errors.Is(err, ErrLocked) is true for it. PID, Command and Since come from the
// lock file a writer leaves in the store directory; they are zero when readers hold the
// store (readers leave none) or the writer left none. Stale says the file names a process
// that is no longer running (a writer that was killed): the holder is then unknown.
type LockedError struct {
	Dir     string    // the store directory
	Holder  string    // "a writer", "read-only readers", or "a writer or read-only readers"
	PID     int       // the writer's process id (0: unknown)
	Command []string  // the writer's command line
	Since   time.Time // when the writer opened the store
	Stale   bool      // the lock file names a process that is not running
	// Detail says why the writer could not answer for a read-only open ("" when none was
	// tried).
	Detail string
}

// Error names the directory, the holder and, when known, its pid, command and start.
func (e *LockedError) Error() string {
	var b strings.Builder
	if e.PID > 0 && e.PID == os.Getpid() && !e.Stale {
		// This process holds it: a second Open of a store it already has open.
		fmt.Fprintf(&b, "%v: %s is already open in this process (%s, pid %d, since %s): use the *Memory that is open, or Close it first",
			ErrLocked, e.Dir, e.Holder, e.PID, e.Since.Format(time.RFC3339))
		if e.Detail != "" {
			b.WriteString("; " + e.Detail)
		}
		return b.String()
	}
	fmt.Fprintf(&b, "%v: %s is held by another process (%s", ErrLocked, e.Dir, e.Holder)
	switch {
	case e.PID > 0 && e.Stale:
		fmt.Fprintf(&b, "; its lock file names pid %d (%s, since %s), which is no longer running: a stale file, the holder is unknown",
			e.PID, quoteCommand(e.Command), e.Since.Format(time.RFC3339))
	case e.PID > 0:
		fmt.Fprintf(&b, ": pid %d, %s, since %s", e.PID, quoteCommand(e.Command), e.Since.Format(time.RFC3339))
	}
	b.WriteString(")")
	if e.Detail != "" {
		b.WriteString("; " + e.Detail)
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Unwrap() error { return ErrLocked }

// quoteCommand shows a command line on one line, at most 200 bytes.
func quoteCommand(argv []string) string {
	if len(argv) == 0 {
		return "command unknown"
	}
	s := fmt.Sprintf("%q", strings.Join(argv, " "))
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return "command " + s
}

// newLockedError builds the error of an Open of dir kept out by holder, naming the writer
// from its lock file when a writer may hold it.
func newLockedError(dir, holder string) *LockedError {
	e := &LockedError{Dir: dir, Holder: holder}
	if holder == "read-only readers" {
		return e
	}
	if li, err := readLockInfo(dir); err == nil && li != nil {
		e.PID, e.Command, e.Since = li.PID, li.Argv, li.Started
		e.Stale = !processAlive(li.PID)
	}
	return e
}

// readLockInfo reads dir's lock file (nil when there is none). A file over 64 KiB or that
// does not parse is an error.
func readLockInfo(dir string) (*lockInfo, error) {
	f, err := os.Open(filepath.Join(dir, lockInfoName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var li lockInfo
	dec := json.NewDecoder(&limitedReader{f, 64 << 10})
	if err := dec.Decode(&li); err != nil {
		return nil, fmt.Errorf("memory: lock file %s: %w", filepath.Join(dir, lockInfoName), err)
	}
	return &li, nil
}

// limitedReader reads at most n bytes, then fails (io.LimitReader would end quietly).
type limitedReader struct {
	f interface{ Read([]byte) (int, error) }
	n int
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errors.New("too large")
	}
	if len(p) > l.n {
		p = p[:l.n]
	}
	k, err := l.f.Read(p)
	l.n -= k
	return k, err
}

// writeLockInfo records this process as dir's writer (atomically: a reader never sees a
// partial file).
func writeLockInfo(dir string, li lockInfo) error {
	data, err := json.Marshal(li)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, lockInfoName), append(data, '\n'), atomicfile.Options{})
}

// removeLockInfo removes dir's lock file when it is this process's.
func removeLockInfo(dir string) error {
	li, err := readLockInfo(dir)
	if err != nil || li == nil || li.PID != os.Getpid() {
		return err
	}
	if err := os.Remove(filepath.Join(dir, lockInfoName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// ownFile reports whether name, an entry of a store directory, is one of the lock and
// socket files (neither part of the store nor a temp file).
func ownFile(name string) bool { return name == lockInfoName || name == sockName }
