package sop

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/agentmem/memory/internal/atomicfile"
	"github.com/agentmem/memory/vectorstore"
)

// defaultMaxFileSize is the largest procedure file LoadDir reads unless
// [Options.MaxFileSize] says otherwise.
const defaultMaxFileSize = 8 << 20

// Options configures a [Library] (see [NewLibrary] and [LoadDir]). The zero value is the
// default: lenient loading, no semantic fallback, files up to 8 MiB.
type Options struct {
	// Strict makes loading reject procedures with unknown fields. False (the default)
	// ignores them.
	Strict bool
	// Embedder is used by the semantic fallback of [Library.Match] (see
	// [MatchOptions.SemanticFallback]). Procedures are embedded lazily, on the first
	// fallback that needs them, or all at once by [Library.Embed]. Nil (the default) means
	// no semantic fallback: asking for one fails with ErrNoEmbedder.
	Embedder vectorstore.Embedder
	// MaxFileSize is the largest file, in bytes, that LoadDir reads; larger files are
	// reported as invalid. Zero or less (the default) means 8 MiB.
	MaxFileSize int64
	// Terms, when set, replaces the built-in English stemmer of trigger and query words: it
	// maps a word (lower case, accents removed) to its terms, as a store's BM25 analyzer
	// does (memory sets it from the store's analyzer when that is not English). A word of
	// one term matches by that term; a word of none (a stop word) by itself; a word of
	// several (CJK bigrams) becomes those terms in order, so a trigger matches inside a run
	// of text without spaces. It must be safe for concurrent use.
	Terms func(word string) []string
}

// Library is a set of procedures with unique names and a trigger index to match queries
// against them. It is safe for concurrent use. The zero value is an empty library with the
// default [Options]; NewLibrary sets others.
type Library struct {
	opts Options

	mu     sync.RWMutex
	byName map[string]*entry
	exact  map[string][]posting // stem of a trigger's first word -> triggers
	prefix map[string][]posting // folded first word of a prefix trigger ("debug*") -> triggers
	maxPre int                  // longest key of prefix
	df     map[string]int       // trigger key -> number of procedures having it
}

// entry is one procedure with its compiled triggers.
type entry struct {
	sop  Procedure
	trig []ctrigger
	vec  []float32 // unit-length embedding, nil until embedded (guarded by Library.mu)
}

// ctrigger is one compiled trigger.
type ctrigger struct {
	text string  // as written
	toks []token // its words
	key  string  // normalized form, equal for triggers that match the same queries
}

// posting points at one trigger of one procedure.
type posting struct {
	e *entry
	t int
}

// NewLibrary returns an empty library with the given options (the zero Options for the
// defaults).
func NewLibrary(opts Options) *Library {
	return &Library{
		opts:   opts,
		byName: map[string]*entry{},
		exact:  map[string][]posting{},
		prefix: map[string][]posting{},
		df:     map[string]int{},
	}
}

func (l *Library) maxFileSize() int64 {
	if l.opts.MaxFileSize <= 0 {
		return defaultMaxFileSize
	}
	return l.opts.MaxFileSize
}

// LoadDir returns a library with the given options (the zero Options for the defaults)
// holding the procedures of dir (see [Library.LoadDir]). The library is returned even with
// an error, holding every valid procedure found.
func LoadDir(dir string, opts Options) (*Library, error) {
	l := NewLibrary(opts)
	return l, l.LoadDir(dir)
}

// LoadDir adds the procedures of the files of dir: "*.json", "*.yaml" and "*.yml" (not in
// subdirectories; names starting with "." are skipped, as are all other files). Files are
// read in name order. Every valid procedure is added; each invalid one, and each whose name
// is already taken (by the library or an earlier file), is reported as a *ValidationError in
// the returned joined error. An unreadable directory is an error of its own.
func (l *Library) LoadDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("sop: load %s: %w", dir, err)
	}
	var errs []error
	for _, de := range ents {
		name := de.Name()
		if _, ok := formatOf(name); !ok || strings.HasPrefix(name, ".") || de.IsDir() {
			continue
		}
		path := filepath.Join(dir, name)
		info, err := os.Stat(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("sop: load %s: %w", path, err))
			continue
		}
		if !info.Mode().IsRegular() {
			continue
		}
		if limit := l.maxFileSize(); info.Size() > limit {
			errs = append(errs, &ValidationError{File: path, Index: -1,
				Problem: fmt.Sprintf("file of %d bytes is larger than %d", info.Size(), limit)})
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("sop: load %s: %w", path, err))
			continue
		}
		sops, perr := Parse(path, data, l.opts.Strict)
		if perr != nil {
			errs = append(errs, perr)
		}
		for _, s := range sops {
			if err := l.add(s); err != nil {
				var ve *ValidationError
				if errors.As(err, &ve) {
					ve.File = path
				}
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Add adds procedures. Each must be valid and have a name not yet in the library (nor twice
// among sops); otherwise nothing is added and the joined *ValidationError values say why.
func (l *Library) Add(sops ...Procedure) error {
	var errs []error
	seen := map[string]bool{}
	for _, s := range sops {
		if err := s.Validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		if seen[s.Name] {
			errs = append(errs, dupError(s.Name))
		}
		seen[s.Name] = true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range sops {
		if _, dup := l.byName[s.Name]; dup {
			errs = append(errs, dupError(s.Name))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, s := range sops {
		l.insertLocked(s)
	}
	return nil
}

// add adds one procedure, refusing a duplicate name.
func (l *Library) add(s Procedure) error {
	if err := s.Validate(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, dup := l.byName[s.Name]; dup {
		return dupError(s.Name)
	}
	l.insertLocked(s)
	return nil
}

func dupError(name string) *ValidationError {
	return &ValidationError{Index: -1, Name: name, Field: "name", Problem: "duplicate name", Err: ErrDuplicateName}
}

// Put adds s, replacing the procedure of the same name if there is one.
func (l *Library) Put(s Procedure) error {
	if err := s.Validate(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.byName[s.Name]; ok {
		l.removeLocked(old)
	}
	l.insertLocked(s)
	return nil
}

// Remove deletes the named procedure; it returns ErrNotFound (wrapped) if there is none.
func (l *Library) Remove(name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.byName[name]
	if !ok {
		return fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	l.removeLocked(e)
	return nil
}

// Get returns a copy of the named procedure, or ErrNotFound (wrapped).
func (l *Library) Get(name string) (Procedure, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	e, ok := l.byName[name]
	if !ok {
		return Procedure{}, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	return e.sop.Clone(), nil
}

// Len is the number of procedures.
func (l *Library) Len() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.byName)
}

// List returns copies of the procedures of a category ("" = all), sorted by name.
func (l *Library) List(category string) []Procedure {
	l.mu.RLock()
	out := make([]Procedure, 0, len(l.byName))
	for _, e := range l.byName {
		if category == "" || e.sop.Category == category {
			out = append(out, e.sop.Clone())
		}
	}
	l.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Categories returns the distinct non-empty categories, sorted.
func (l *Library) Categories() []string {
	l.mu.RLock()
	set := map[string]bool{}
	for _, e := range l.byName {
		if e.sop.Category != "" {
			set[e.sop.Category] = true
		}
	}
	l.mu.RUnlock()
	out := make([]string, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// compile turns the triggers of s into ctriggers, dropping those without words and those
// that match the same queries as an earlier one.
func compile(s Procedure, terms func(string) []string) []ctrigger {
	var out []ctrigger
	seen := map[string]bool{}
	for _, t := range s.Trigger {
		segs := tokenizeWith(t, false, terms)
		if len(segs) == 0 {
			continue
		}
		toks := segs[0]
		var kb strings.Builder
		for i, tk := range toks {
			if i > 0 {
				kb.WriteByte(' ')
			}
			if tk.prefix {
				kb.WriteString(tk.word)
				kb.WriteByte('*')
			} else {
				kb.WriteString(tk.stem)
			}
		}
		key := kb.String()
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, ctrigger{text: t, toks: toks, key: key})
	}
	return out
}

func (l *Library) insertLocked(s Procedure) {
	if l.byName == nil { // the zero Library
		l.byName, l.exact, l.prefix, l.df = map[string]*entry{}, map[string][]posting{}, map[string][]posting{}, map[string]int{}
	}
	s = s.Clone()
	e := &entry{sop: s, trig: compile(s, l.opts.Terms)}
	l.byName[s.Name] = e
	for i, t := range e.trig {
		first := t.toks[0]
		if first.prefix {
			l.prefix[first.word] = append(l.prefix[first.word], posting{e, i})
			l.maxPre = max(l.maxPre, len(first.word))
		} else {
			l.exact[first.stem] = append(l.exact[first.stem], posting{e, i})
		}
		l.df[t.key]++
	}
}

func (l *Library) removeLocked(e *entry) {
	delete(l.byName, e.sop.Name)
	for _, t := range e.trig {
		first := t.toks[0]
		m, k := l.exact, first.stem
		if first.prefix {
			m, k = l.prefix, first.word
		}
		ps := m[k][:0:0]
		for _, p := range m[k] {
			if p.e != e {
				ps = append(ps, p)
			}
		}
		if len(ps) == 0 {
			delete(m, k)
		} else {
			m[k] = ps
		}
		if l.df[t.key]--; l.df[t.key] <= 0 {
			delete(l.df, t.key)
		}
	}
}

// fileName is the file SaveDir writes a procedure to: the name itself when it is made of
// lower-case ASCII letters, digits, ".", "_" and "-" (and does not start with "."), else a
// sanitized name with a hash of the real name, so that two names never share a file.
func fileName(name string) string {
	clean := true
	var b strings.Builder
	for i, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.' && i > 0
		if !ok {
			clean = false
			if r >= 'A' && r <= 'Z' {
				r += 'a' - 'A'
			} else {
				r = '_'
			}
		}
		b.WriteRune(r)
	}
	if clean {
		return name + ".json"
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	base := b.String()
	if len(base) > 100 {
		base = base[:100]
	}
	return fmt.Sprintf("%s-%08x.json", base, h.Sum32())
}

// SaveDir writes every procedure to dir (created if needed) as one indented JSON file named
// by [fileName], each written atomically (a temporary file renamed over the target). It then
// removes the other procedure files of dir that parse without any error, so that LoadDir of
// dir gives back exactly this library; files that do not parse are left alone.
func (l *Library) SaveDir(dir string) error {
	sops := l.List("")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("sop: save %s: %w", dir, err)
	}
	written := map[string]bool{}
	for _, s := range sops {
		data, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			return fmt.Errorf("sop: save %q: %w", s.Name, err)
		}
		name := fileName(s.Name)
		if err := atomicfile.WriteFile(filepath.Join(dir, name), append(data, '\n'), atomicfile.Options{}); err != nil {
			return fmt.Errorf("sop: save %s: %w", name, err)
		}
		written[name] = true
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("sop: save %s: %w", dir, err)
	}
	var errs []error
	for _, de := range ents {
		name := de.Name()
		if _, ok := formatOf(name); !ok || written[name] || strings.HasPrefix(name, ".") || !de.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if got, perr := Parse(path, data, false); perr == nil && len(got) > 0 {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("sop: save: remove stale %s: %w", path, err))
			}
		}
	}
	if err := atomicfile.SyncDir(dir); err != nil {
		errs = append(errs, fmt.Errorf("sop: save: %w", err))
	}
	return errors.Join(errs...)
}
