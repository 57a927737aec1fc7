//go:build faiss

package vectorstore

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"

	faiss "github.com/DataIntelligenceCrew/go-faiss"
	"github.com/agentmem/memory/internal/atomicfile"
)

// Files of a FAISS index in IndexConfig.Dir. faiss.json is the commit point: it names the
// generation whose index and buffer files hold the data, so a crash mid-write leaves the
// previous generation in force.
const (
	faissMetaFile    = "faiss.json"
	faissMetaVersion = 1
)

// faissMeta is the JSON of faiss.json.
type faissMeta struct {
	Version int      `json:"version"`
	Dim     int      `json:"dim"`
	Metric  Metric   `json:"metric"`
	Factory string   `json:"factory"`
	Seq     uint64   `json:"seq"`
	Gen     uint64   `json:"gen"`
	Next    int64    `json:"next"`
	Index   string   `json:"index,omitempty"`  // faiss index file ("" = IVF not trained yet)
	Buffer  string   `json:"buffer,omitempty"` // IVF training buffer (labels + vectors)
	IDs     []string `json:"ids"`
	Labels  []int64  `json:"labels"`
	// CRC-32C of the index and buffer files, and of this JSON (encoded with CRC 0): FAISS
	// reads its files unchecked, and a flipped byte would change answers silently. 0: not
	// recorded (written before the checksums).
	IndexCRC  uint32 `json:"index_crc,omitempty"`
	BufferCRC uint32 `json:"buffer_crc,omitempty"`
	CRC       uint32 `json:"crc,omitempty"`
}

var faissCastagnoli = crc32.MakeTable(crc32.Castagnoli)

// fileCRC is the CRC-32C of a file's bytes.
func fileCRC(path string) (uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	h := crc32.New(faissCastagnoli)
	if _, err := io.Copy(h, bufio.NewReaderSize(f, 1<<20)); err != nil {
		return 0, err
	}
	return h.Sum32(), nil
}

// metaCRC is the CRC-32C of m encoded with its CRC field 0.
func metaCRC(m faissMeta) (uint32, error) {
	m.CRC = 0
	b, err := json.Marshal(&m)
	if err != nil {
		return 0, err
	}
	return crc32.Checksum(b, faissCastagnoli), nil
}

// checkFileCRC compares a file's CRC-32C with the recorded one (0: not recorded).
func checkFileCRC(path string, want uint32) error {
	if want == 0 {
		return nil
	}
	got, err := fileCRC(path)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%w: %s fails its checksum (%08x, want %08x)", errFaissStale, filepath.Base(path), got, want)
	}
	return nil
}

// persistLocked writes generation gen+1 and then switches faiss.json to it.
func (x *faissIndex) persistLocked() error {
	dir := x.cfg.Dir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("vectorstore: faiss dir: %w", err)
	}
	if !x.dirty && x.gen > 0 && x.files != [2]string{} {
		// Nothing changed since the last write: only the metadata (the new seq) is rewritten,
		// pointing at the same generation's files.
		return x.writeMetaLocked(x.gen, x.files[0], x.files[1], x.crcs)
	}
	gen := x.gen + 1
	var m struct{ Index, Buffer string }
	var crcs [2]uint32
	if x.idx != nil {
		m.Index = fmt.Sprintf("faiss-%d.index", gen)
		tmp := filepath.Join(dir, m.Index+".tmp")
		if err := faiss.WriteIndex(x.idx, tmp); err != nil {
			return fmt.Errorf("vectorstore: faiss write %s: %w", tmp, err)
		}
		if err := syncAndRename(tmp, filepath.Join(dir, m.Index)); err != nil {
			return err
		}
		c, err := fileCRC(filepath.Join(dir, m.Index))
		if err != nil {
			return fmt.Errorf("vectorstore: faiss: %w", err)
		}
		crcs[0] = c
	}
	if len(x.bufLabels) > 0 {
		m.Buffer = fmt.Sprintf("faiss-%d.buf", gen)
		if err := writeFileAtomic(filepath.Join(dir, m.Buffer), "faiss", func(w io.Writer) error {
			return writeFaissBuffer(w, x.bufLabels, x.bufVecs)
		}); err != nil {
			return err
		}
		c, err := fileCRC(filepath.Join(dir, m.Buffer))
		if err != nil {
			return fmt.Errorf("vectorstore: faiss: %w", err)
		}
		crcs[1] = c
	}
	if err := x.writeMetaLocked(gen, m.Index, m.Buffer, crcs); err != nil {
		return err
	}
	x.dirty = false
	removeStaleFaissFiles(dir, m.Index, m.Buffer)
	return nil
}

// writeMetaLocked writes faiss.json (the commit point) for generation gen and its files.
func (x *faissIndex) writeMetaLocked(gen uint64, index, buffer string, crcs [2]uint32) error {
	m := faissMeta{
		Version: faissMetaVersion, Dim: x.cfg.Dim, Metric: x.cfg.Metric, Factory: x.spec.canonical(),
		Seq: x.seq, Gen: gen, Next: x.next, Index: index, Buffer: buffer, IndexCRC: crcs[0], BufferCRC: crcs[1],
		IDs: make([]string, 0, len(x.labels)), Labels: make([]int64, 0, len(x.labels)),
	}
	for l, id := range x.labels {
		m.IDs = append(m.IDs, id)
		m.Labels = append(m.Labels, l)
	}
	c, err := metaCRC(m)
	if err != nil {
		return err
	}
	m.CRC = c
	if err := writeFileAtomic(filepath.Join(x.cfg.Dir, faissMetaFile), "faiss", func(w io.Writer) error {
		return json.NewEncoder(w).Encode(&m)
	}); err != nil {
		return err
	}
	x.gen, x.files, x.crcs = gen, [2]string{index, buffer}, crcs
	return nil
}

// removeStaleFaissFiles deletes index and buffer files of older generations.
func removeStaleFaissFiles(dir string, keep ...string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		n := e.Name()
		if !strings.HasPrefix(n, "faiss-") && !(atomicfile.IsTemp(n) && strings.HasPrefix(n, ".faiss")) {
			continue
		}
		stale := true
		for _, k := range keep {
			if k != "" && n == k {
				stale = false
			}
		}
		if stale {
			if err := os.Remove(filepath.Join(dir, n)); err != nil {
				slog.Warn("faiss: cannot remove stale file", "file", n, "err", err)
			}
		}
	}
}

func syncAndRename(tmp, dst string) error {
	if err := atomicfile.Publish(tmp, dst, atomicfile.Options{}); err != nil {
		return fmt.Errorf("vectorstore: faiss persist %s: %w", dst, err)
	}
	return nil
}

// The buffer file: uint64 count, then count int64 labels, then count*dim float32, little endian.
func writeFaissBuffer(w io.Writer, labels []int64, vecs []float32) error {
	if err := binary.Write(w, binary.LittleEndian, uint64(len(labels))); err != nil {
		return err
	}
	if err := binary.Write(w, binary.LittleEndian, labels); err != nil {
		return err
	}
	return binary.Write(w, binary.LittleEndian, vecs)
}

func readFaissBuffer(r io.Reader, dim int) ([]int64, []float32, error) {
	var n uint64
	if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
		return nil, nil, err
	}
	if n > math.MaxInt32 {
		return nil, nil, fmt.Errorf("buffer count %d", n)
	}
	labels := make([]int64, n)
	vecs := make([]float32, int(n)*dim)
	if err := binary.Read(r, binary.LittleEndian, labels); err != nil {
		return nil, nil, err
	}
	if err := binary.Read(r, binary.LittleEndian, vecs); err != nil {
		return nil, nil, err
	}
	return labels, vecs, nil
}

// errFaissStale marks persisted state that is damaged or inconsistent (a checksum fails,
// counts disagree); errFaissConfig, state built for another configuration (version,
// dimension, metric, factory), which is not damage.
var (
	errFaissStale  = errors.New("persisted FAISS state is damaged")
	errFaissConfig = errors.New("persisted FAISS state does not match the configuration")
)

// load reads the state persisted in Dir. Missing state is not an error; state that is
// unreadable or built for another configuration is logged and ignored (the index starts empty
// with Seq 0 and the store rebuilds it): the index is derived data. Why it was ignored is
// kept for Discarded, matching ErrCorrupt unless the state was only built for another
// configuration.
func (x *faissIndex) load() error {
	err := x.loadFiles()
	switch {
	case err == nil, errors.Is(err, fs.ErrNotExist) && x.gen == 0:
		return nil
	default:
		slog.Warn("faiss: ignoring persisted index; it will be rebuilt", "dir", x.cfg.Dir, "err", err)
		x.resetState()
		if errors.Is(err, errFaissConfig) {
			x.discarded = err
		} else {
			x.discarded = fmt.Errorf("%w: %s: %w", ErrCorrupt, x.cfg.Dir, err)
		}
		return nil
	}
}

// Discarded returns why the files found in Dir when the index was opened were not used
// (it started empty and was rebuilt by the store), nil when they were used or there were
// none: an error matching ErrCorrupt when they are damaged, one naming the configuration
// they were built for otherwise. Later writes do not clear it.
func (x *faissIndex) Discarded() error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.discarded
}

func (x *faissIndex) resetState() {
	if x.idx != nil {
		x.idx.Delete()
	}
	x.idx, x.cp = nil, nil
	x.labels, x.ids = map[int64]string{}, map[string]int64{}
	x.bufLabels, x.bufVecs = nil, nil
	x.next, x.seq, x.gen, x.files, x.crcs = 0, 0, 0, [2]string{}, [2]uint32{}
}

func (x *faissIndex) loadFiles() error {
	dir := x.cfg.Dir
	raw, err := os.ReadFile(filepath.Join(dir, faissMetaFile))
	if err != nil {
		return err
	}
	var m faissMeta
	if err := json.Unmarshal(raw, &m); err != nil {
		x.gen = 1 // not "absent": report it
		return fmt.Errorf("%s: %w", faissMetaFile, err)
	}
	x.gen = max(m.Gen, 1)
	if m.CRC != 0 {
		if c, err := metaCRC(m); err != nil || c != m.CRC {
			return fmt.Errorf("%w: %s fails its checksum", errFaissStale, faissMetaFile)
		}
	}
	switch {
	case m.Version != faissMetaVersion, m.Dim != x.cfg.Dim, m.Metric != x.cfg.Metric, m.Factory != x.spec.canonical():
		return fmt.Errorf("%w: have v%d dim %d %s %s", errFaissConfig, m.Version, m.Dim, m.Metric, m.Factory)
	case len(m.IDs) != len(m.Labels):
		return fmt.Errorf("%w: %d ids, %d labels", errFaissStale, len(m.IDs), len(m.Labels))
	case m.Index == "" && x.spec.kind != faissIVF:
		return fmt.Errorf("%w: no index file", errFaissStale)
	}
	for i, id := range m.IDs {
		l := m.Labels[i]
		if l < 0 || l >= m.Next {
			return fmt.Errorf("%w: label %d out of range", errFaissStale, l)
		}
		x.ids[id] = l
		x.labels[l] = id
	}
	if len(x.ids) != len(m.IDs) || len(x.labels) != len(m.IDs) {
		return fmt.Errorf("%w: duplicate ids or labels", errFaissStale)
	}
	if m.Buffer != "" {
		if err := checkFileCRC(filepath.Join(dir, m.Buffer), m.BufferCRC); err != nil {
			return err
		}
		f, err := os.Open(filepath.Join(dir, m.Buffer))
		if err != nil {
			return err
		}
		x.bufLabels, x.bufVecs, err = readFaissBuffer(bufio.NewReader(f), x.cfg.Dim)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", m.Buffer, err)
		}
	}
	if m.Index != "" {
		if err := checkFileCRC(filepath.Join(dir, m.Index), m.IndexCRC); err != nil {
			return err
		}
		idx, err := faiss.ReadIndex(filepath.Join(dir, m.Index), 0)
		if err != nil {
			return fmt.Errorf("%s: %w", m.Index, err)
		}
		x.idx = idx
		if idx.D() != x.cfg.Dim {
			return fmt.Errorf("%w: index file has dim %d", errFaissStale, idx.D())
		}
		if x.cp, err = x.configure(idx); err != nil {
			return err
		}
	}
	held := len(x.bufLabels)
	if x.idx != nil {
		held += int(x.idx.Ntotal())
	}
	if held < len(x.labels) || (x.spec.kind != faissHNSW && held != len(x.labels)) {
		return fmt.Errorf("%w: %d vectors stored for %d ids", errFaissStale, held, len(x.labels))
	}
	x.next, x.seq, x.files, x.crcs = m.Next, m.Seq, [2]string{m.Index, m.Buffer}, [2]uint32{m.IndexCRC, m.BufferCRC}
	return nil
}
