package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentmem/memory/internal/atomicfile"
)

// formatVersion is the on-disk format this build writes and reads.
const formatVersion = 1

const (
	manifestName = "manifest.json"
	dbName       = "store.db"
	bm25Dir      = "bm25"
	vecDir       = "vectors"
)

// manifest identifies a directory as a memory store and records what its data depends on.
type manifest struct {
	Format   int       `json:"format"`
	Created  time.Time `json:"created"`
	Embedder *embInfo  `json:"embedder,omitempty"`
	// Index is the dense index the store's vectors are indexed with (nil: not recorded
	// yet, a store of an older version or one without vectors; see index.go).
	Index *indexInfo `json:"index,omitempty"`
	// VectorPrecision is the precision store.db keeps vectors in ("": float32, every store
	// of an older version; "float16"; "int8").
	VectorPrecision VectorPrecision `json:"vector_precision,omitempty"`
	// Analyzer is the BM25 analyzer of collections that record none in Analyzers (""
	// English: stores of older versions), set when the store is created (WithAnalyzer).
	Analyzer string `json:"analyzer,omitempty"`
	// Analyzers records, by collection name, the BM25 analyzer of each collection created
	// with another analyzer than Analyzer (see analyzer.go). Guarded by Memory.anaMu.
	Analyzers map[string]string `json:"analyzers,omitempty"`
	// CRC is the CRC-32C of this manifest written with CRC 0 (MarshalIndent, two spaces):
	// a byte flipped in a field that still parses (an embedder's name, a dimension) is
	// ErrCorrupt, not a store that silently changed. 0 in manifests of older versions,
	// which are read unchecked.
	CRC uint32 `json:"crc,omitempty"`
}

var manifestCastagnoli = crc32.MakeTable(crc32.Castagnoli)

// encode is the manifest's bytes with its CRC set.
func (m manifest) encode() ([]byte, error) {
	m.CRC = 0
	b, err := json.MarshalIndent(&m, "", "  ")
	if err != nil {
		return nil, err
	}
	m.CRC = crc32.Checksum(b, manifestCastagnoli)
	if m.CRC == 0 {
		m.CRC = 1 // 0 means "not recorded"; 1 in 2^32 manifests cannot be checked
	}
	return json.MarshalIndent(&m, "", "  ")
}

type embInfo struct {
	ID  string `json:"id"`
	Dim int    `json:"dim"`
	// Precomputed: the vectors were computed outside the store and recorded under an id
	// the user named (WithVectorsOnly, `memory index --embedder-id`); the model that
	// embeds queries for them is matched by name (see embedderMatches).
	Precomputed bool `json:"precomputed,omitempty"`
}

// readManifest returns (nil, nil) when dir has no manifest.
func readManifest(dir string) (*manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, manifestName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil || m.Format <= 0 {
		return nil, fmt.Errorf("%w: %s: unreadable manifest", ErrCorrupt, filepath.Join(dir, manifestName))
	}
	if m.Format > formatVersion { // a newer build's manifest: its fields and checksum are its own
		return nil, fmt.Errorf("%w: %s has format %d, this build reads up to %d",
			ErrFormatVersion, dir, m.Format, formatVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields() // a flipped field name is damage, not a field to ignore
	if err := dec.Decode(&manifest{}); err != nil {
		return nil, fmt.Errorf("%w: %s: unreadable manifest: %v", ErrCorrupt, filepath.Join(dir, manifestName), err)
	}
	if m.CRC != 0 {
		if want, err := m.encode(); err != nil || !bytes.Equal(bytes.TrimSpace(want), bytes.TrimSpace(b)) {
			return nil, fmt.Errorf("%w: %s fails its checksum", ErrCorrupt, filepath.Join(dir, manifestName))
		}
	}
	return &m, nil
}

// writeManifest replaces the manifest atomically: temp file, fsync, rename, fsync dir.
func writeManifest(dir string, m *manifest) error {
	b, err := m.encode()
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, manifestName), append(b, '\n'), atomicfile.Options{})
}

// The temporary files atomicfile writes the manifest and the lock info through.
var (
	manifestTempPrefix = atomicfile.TempPrefix(manifestName)
	lockInfoTempPrefix = atomicfile.TempPrefix(lockInfoName)
)

// manifestTemps splits dir's entries into temp files (full paths: writeManifest's, and
// those a new store.db is initialised in, see makeDB) and the names of everything else.
func manifestTemps(dir string) (temps, others []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		if ownFile(e.Name()) {
			continue // the writer's lock and socket files (lockinfo.go)
		}
		if e.Type().IsRegular() && (strings.HasPrefix(e.Name(), manifestTempPrefix) || dbTemp(e.Name()) || strings.HasPrefix(e.Name(), lockInfoTempPrefix)) {
			temps = append(temps, filepath.Join(dir, e.Name()))
		} else {
			others = append(others, e.Name())
		}
	}
	return temps, others, nil
}

// removeFiles deletes paths, ignoring ones already gone.
func removeFiles(paths []string) error {
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// onlyManifest reports whether a store directory's entries (others, from manifestTemps)
// are its manifest and at most an empty database: a store whose creation, by an older
// version that wrote the manifest first, was killed before anything was stored.
func onlyManifest(others []string, dbPath string) bool {
	for _, name := range others {
		switch name {
		case manifestName:
		case dbName:
			if fi, err := os.Stat(dbPath); err != nil || fi.Size() != 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}
