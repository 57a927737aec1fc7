package memory

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/agentmem/memory/internal/atomicfile"
	"github.com/agentmem/memory/internal/store"
)

// Backups. A backup is the store of record (store.db, copied in one read transaction, so
// consistent while writers go on) and the manifest, in a tar stream:
//
//	memory-backup.json   what the archive is: {"backup_format":1,"created":...,"files":[...]}
//	manifest.json        the store's manifest
//	store.db             the store of record as of the backup's start
//	checksums.json       {"files":[{"name","size","sha256"}]} of the three entries before
//
// The derived indexes (bm25/, vectors/) are not in it: a store opens an absent index by
// rebuilding it from the store of record, which holds every document and every vector. A
// consistent copy of them beside store.db would need the writers stopped for as long as
// copying them takes (they are many files, changed in place by merges), and would make the
// archive half as large again, to save a rebuild that takes about as long as reading them.

// backupFormat is the archive format this build writes and reads.
const backupFormat = 1

// Names of the archive's entries, in their order.
const (
	backupHeaderName = "memory-backup.json"
	backupSumsName   = "checksums.json"
)

// maxBackupMeta caps the size of the archive's small entries (header, manifest, checksums).
const maxBackupMeta = 1 << 20

// backupHeader is the archive's first entry.
type backupHeader struct {
	Format  int       `json:"backup_format"`
	Created time.Time `json:"created"`
	Files   []string  `json:"files"`
}

// backupSum is the size and SHA-256 of one entry.
type backupSum struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// backupSums is the archive's last entry.
type backupSums struct {
	Files []backupSum `json:"files"`
}

// BackupInfo describes a backup written by [Memory.Backup].
type BackupInfo struct {
	// StoreBytes is the size of the store.db copied.
	StoreBytes int64
	// Bytes is the size of the whole archive.
	Bytes int64
	// Documents counts the documents in the copy, over all collections (from their
	// counters; -1 when one cannot be trusted).
	Documents int
}

// Backup writes a backup of the store to w (a tar stream; see [Restore]): a consistent
// copy of the store of record as of the moment Backup is called, taken while searches and
// writes go on. Every write acknowledged before the call is in it; writes that commit
// while it runs are not. (A write that must grow store.db's memory mapping waits until the
// copy ends: bbolt cannot remap under a reader.) The derived indexes are rebuilt from it when the restored store
// is first opened. A read-only store that reads through its writer (see [ReadOnly]) gets
// the backup from the writer, streamed over its socket: the same archive, as of the moment
// the writer begins it (ErrWriterGone when the writer goes away during it). w gets a
// partial archive when Backup fails (a file: write it to a
// temporary name and rename it when Backup returns nil; the CLI's backup does).
func (m *Memory) Backup(ctx context.Context, w io.Writer) (BackupInfo, error) {
	if m.closed.Load() {
		return BackupInfo{}, ErrClosed
	}
	if m.cluster != nil {
		return BackupInfo{}, m.clusterUnsupported("Memory.Backup")
	}
	if err := ctx.Err(); err != nil {
		return BackupInfo{}, err
	}
	if m.remote != nil { // a read-only store beside a writer: the writer takes it
		return m.rs.remoteBackup(ctx, w)
	}
	// The snapshot begins under the writer lock: no write is half way through it, and the
	// manifest read with it describes it (a write that records the embedder holds it too).
	m.wmu.Lock()
	man, err := json.MarshalIndent(m.man, "", "  ")
	var snap *store.Snapshot
	if err == nil {
		snap, err = m.db.BeginSnapshot()
	}
	m.wmu.Unlock()
	if err != nil {
		return BackupInfo{}, fmt.Errorf("memory: backup: %w", err)
	}
	defer snap.Close()
	info := BackupInfo{StoreBytes: snap.Size(), Documents: snap.Documents()}
	man = append(man, '\n')

	cw := &countWriter{w: w}
	tw := tar.NewWriter(&ctxWriter{ctx: ctx, w: cw})
	now := time.Now().UTC()
	var sums backupSums
	put := func(name string, size int64, write func(io.Writer) error) error {
		hdr := &tar.Header{Name: name, Mode: 0o600, Size: size, ModTime: now, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		h := sha256.New()
		if err := write(io.MultiWriter(tw, h)); err != nil {
			return err
		}
		sums.Files = append(sums.Files, backupSum{Name: name, Size: size, SHA256: hex.EncodeToString(h.Sum(nil))})
		return nil
	}
	putBytes := func(name string, b []byte) error {
		return put(name, int64(len(b)), func(w io.Writer) error { _, err := w.Write(b); return err })
	}
	hb, err := json.Marshal(backupHeader{Format: backupFormat, Created: now, Files: []string{manifestName, dbName}})
	if err != nil {
		return info, err
	}
	err = putBytes(backupHeaderName, hb)
	if err == nil {
		err = putBytes(manifestName, man)
	}
	if err == nil {
		err = put(dbName, info.StoreBytes, func(w io.Writer) error {
			n, err := snap.WriteTo(w)
			if err == nil && n != info.StoreBytes {
				err = fmt.Errorf("store.db: copied %d bytes of %d", n, info.StoreBytes)
			}
			return err
		})
	}
	if err == nil {
		var sb []byte
		if sb, err = json.MarshalIndent(sums, "", "  "); err == nil {
			err = putBytes(backupSumsName, append(sb, '\n'))
		}
	}
	if err == nil {
		err = tw.Close()
	}
	info.Bytes = cw.n
	if err != nil {
		return info, fmt.Errorf("memory: backup: %w", err)
	}
	return info, nil
}

// Restore writes the store in the backup archive r (written by [Memory.Backup]) into dir,
// which must not exist or be empty (else ErrRestoreTarget). The archive is read into a
// temporary directory beside dir, each entry checked against its size and SHA-256 and
// store.db against bbolt's own checks, and only a store that passes is renamed into place
// (fsynced): a damaged, truncated or foreign archive is ErrBadBackup, and leaves dir as it
// was. The restored store's derived indexes are built when it is first opened.
func Restore(ctx context.Context, r io.Reader, dir string) error {
	if dir == "" {
		return fmt.Errorf("%w: empty directory name", ErrInvalidOption)
	}
	dir = filepath.Clean(dir)
	if err := restoreTarget(dir); err != nil {
		return err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".restore-*")
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	if err := readBackup(ctx, r, tmp); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := atomicfile.SyncDir(tmp); err != nil {
		return err
	}
	// Checked again: another process may have written into dir meanwhile. An empty
	// directory is removed first (os.Rename does not replace a directory); os.Remove fails
	// on one that is not empty.
	if err := restoreTarget(dir); err != nil {
		return err
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s: %v", ErrRestoreTarget, dir, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("memory: restore: %w", err)
	}
	done = true
	return atomicfile.SyncDir(parent)
}

// restoreTarget checks that dir does not exist or is an empty directory.
func restoreTarget(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrRestoreTarget, dir, err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("%w: %s holds %d entries", ErrRestoreTarget, dir, len(entries))
	}
	return nil
}

// badBackup wraps what is wrong with an archive in ErrBadBackup.
func badBackup(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadBackup, fmt.Sprintf(format, args...))
}

// readBackup extracts the archive r into the empty directory tmp and checks it.
func readBackup(ctx context.Context, r io.Reader, tmp string) error {
	tr := tar.NewReader(&ctxReader{ctx: ctx, r: r})
	next := func(want string, maxSize int64) (*tar.Header, error) {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil, badBackup("it ends before its %s", want)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, badBackup("reading the entry for %s: %v", want, err)
		}
		if hdr.Name != want || hdr.Typeflag != tar.TypeReg {
			return nil, badBackup("entry %q (type %q) where %s was expected", hdr.Name, hdr.Typeflag, want)
		}
		if hdr.Size < 0 || hdr.Size > maxSize {
			return nil, badBackup("%s has %d bytes (at most %d)", want, hdr.Size, maxSize)
		}
		return hdr, nil
	}
	readSmall := func(name string) ([]byte, error) {
		hdr, err := next(name, maxBackupMeta)
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, badBackup("%s: %v", name, readErr(ctx, err))
		}
		if int64(len(b)) != hdr.Size {
			return nil, badBackup("%s: %d bytes of %d", name, len(b), hdr.Size)
		}
		return b, nil
	}
	got := map[string]backupSum{}
	note := func(name string, size int64, h hash.Hash) {
		got[name] = backupSum{Name: name, Size: size, SHA256: hex.EncodeToString(h.Sum(nil))}
	}

	hb, err := readSmall(backupHeaderName)
	if err != nil {
		return err
	}
	var hdr backupHeader
	if err := json.Unmarshal(hb, &hdr); err != nil || hdr.Format <= 0 {
		return badBackup("unreadable %s", backupHeaderName)
	}
	if hdr.Format > backupFormat {
		return badBackup("archive format %d; this build reads up to %d", hdr.Format, backupFormat)
	}
	h := sha256.Sum256(hb)
	got[backupHeaderName] = backupSum{Name: backupHeaderName, Size: int64(len(hb)), SHA256: hex.EncodeToString(h[:])}

	mb, err := readSmall(manifestName)
	if err != nil {
		return err
	}
	h = sha256.Sum256(mb)
	got[manifestName] = backupSum{Name: manifestName, Size: int64(len(mb)), SHA256: hex.EncodeToString(h[:])}

	dh, err := next(dbName, 1<<50)
	if err != nil {
		return err
	}
	dbPath := filepath.Join(tmp, dbName)
	sum, n, err := copyFileSynced(dbPath, tr)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var pe *os.PathError
		if errors.As(err, &pe) {
			return err // writing here failed (a full disk): not the archive's fault
		}
		return badBackup("%s: %v", dbName, err)
	}
	if n != dh.Size {
		return badBackup("%s: %d bytes of %d", dbName, n, dh.Size)
	}
	note(dbName, n, sum)

	sb, err := readSmall(backupSumsName)
	if err != nil {
		return err
	}
	var sums backupSums
	if err := json.Unmarshal(sb, &sums); err != nil {
		return badBackup("unreadable %s", backupSumsName)
	}
	if _, err := tr.Next(); err != io.EOF {
		if err == nil {
			return badBackup("entries after %s", backupSumsName)
		}
		return badBackup("after %s: %v", backupSumsName, readErr(ctx, err))
	}
	want := map[string]backupSum{}
	for _, s := range sums.Files {
		want[s.Name] = s
	}
	for _, name := range []string{backupHeaderName, manifestName, dbName} {
		w, ok := want[name]
		if !ok {
			return badBackup("%s has no checksum of %s", backupSumsName, name)
		}
		if g := got[name]; g != w {
			return badBackup("%s: %d bytes with SHA-256 %s, the archive recorded %d bytes with SHA-256 %s", name, g.Size, g.SHA256, w.Size, w.SHA256)
		}
	}

	// The entries are what was backed up; check that they are a store this build opens.
	if err := atomicfile.WriteFile(filepath.Join(tmp, manifestName), mb, atomicfile.Options{}); err != nil {
		return err
	}
	if _, err := readManifest(tmp); err != nil {
		if errors.Is(err, ErrFormatVersion) {
			return err
		}
		return badBackup("%v", err)
	}
	if err := store.CheckFileDeep(dbPath); err != nil {
		return badBackup("%v", err)
	}
	return nil
}

// copyFileSynced writes r to a new file at path, fsynced, and returns its SHA-256 and size.
func copyFileSynced(path string, r io.Reader) (hash.Hash, int64, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, 0, err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return h, n, err
}

// readErr is ctx's error when the context ended, else err.
func readErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// ctxWriter fails writes once ctx is done.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c *ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// ctxReader fails reads once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
