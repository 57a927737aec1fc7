package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentmem/memory/internal/store"
	"github.com/agentmem/memory/internal/vecmath"
	"github.com/agentmem/memory/vectorstore"
)

// embedding embeds the store m's documents and queries with its embedder, in the
// precision its vectors are kept in.
type embedding struct{ m *Memory }

// EmbedderResolver loads the embedder with the given id and dimension (as recorded in a
// store's manifest). It returns an error when it does not know or cannot load it.
type EmbedderResolver func(ctx context.Context, id string, dim int) (vectorstore.Embedder, error)

// checkPrecision compares the configured vector precision with the one the manifest
// records and sets store.db's. A store that has recorded no embedder yet (it holds no
// vector) takes the configured one, recorded when writable; otherwise another one is
// ErrVectorPrecision.
func (op opening) checkPrecision() error {
	m := op.m
	want := m.opts.VectorPrecision
	if want != "" && want != Float32 && want != Float16 && want != Int8 {
		return fmt.Errorf("%w: %q (want %q, %q or %q)", ErrVectorPrecision, want, Float32, Float16, Int8)
	}
	rec := cmpOr(m.man.VectorPrecision, Float32)
	if want != "" && want != rec {
		if m.man.Embedder != nil {
			return fmt.Errorf("%w: the store keeps its vectors in %s, configured %s", ErrVectorPrecision, rec, want)
		}
		man := *m.man
		man.VectorPrecision = want
		if want == Float32 {
			man.VectorPrecision = ""
		}
		if !m.opts.ReadOnly {
			if err := writeManifest(m.dir, &man); err != nil {
				return err
			}
		}
		m.man, rec = &man, want
	}
	switch rec {
	case Float16:
		m.db.SetPrecision(store.PrecisionFloat16)
	case Int8:
		m.db.SetPrecision(store.PrecisionInt8)
	default:
		m.db.SetPrecision(store.PrecisionFloat32)
	}
	return nil
}

// halfVectors reports whether the store keeps its vectors in a precision below float32
// (float16 or int8): the vectors written are rounded to it first (roundVectors).
func (eb embedding) halfVectors() bool {
	p := eb.m.man.VectorPrecision
	return p == Float16 || p == Int8
}

// precision is the precision the store keeps its vectors in.
func (eb embedding) precision() VectorPrecision { return cmpOr(eb.m.man.VectorPrecision, Float32) }

// roundVectors rounds vecs (one per index id) to the store's precision: with float16 or
// int8, each to new rounded values (the caller's slices are not changed), so that the
// vector indexes hold what store.db holds, bit for bit (store.db decodes an int8 vector
// to vecmath.RoundInt8 of it, and rounding that again changes nothing).
func (eb embedding) roundVectors(vecs [][]float32) error {
	prec := eb.precision()
	if prec != Float16 && prec != Int8 {
		return nil
	}
	for i, v := range vecs {
		if v == nil {
			continue
		}
		var r []float32
		var err error
		if prec == Int8 {
			r, err = vecmath.RoundInt8(v)
		} else {
			r, err = vecmath.RoundHalf(v)
		}
		if err != nil {
			return fmt.Errorf("%w: this store keeps %s vectors: %w", ErrBadVector, prec, err)
		}
		vecs[i] = r
	}
	return nil
}

// checkEmbedders resolves the recorded embedder (WithEmbedderResolver) and checks the
// configured one against the manifest.
func (op opening) checkEmbedders() error {
	m := op.m
	if err := op.resolveEmbedder(); err != nil {
		return err
	}
	if m.opts.ReadOnly {
		return op.checkEmbedderReadOnly()
	}
	return op.checkEmbedder()
}

// resolveEmbedder loads the recorded embedder through the resolver when none is configured.
func (op opening) resolveEmbedder() error {
	m := op.m
	rec, r := m.man.Embedder, m.opts.EmbedderResolver
	if m.opts.Embedder != nil || rec == nil {
		return nil
	}
	if r == nil && !m.opts.NoEmbedderResolver {
		r = vectorstore.ResolveEmbedder
	}
	if r == nil {
		op.vectorsOnlyFallback(rec)
		return nil
	}
	e, err := r(context.Background(), rec.ID, rec.Dim)
	if err == nil && e == nil {
		err = errors.New("the resolver returned no embedder")
	}
	if err != nil {
		m.resolveErr = err
		m.log.Warn("memory: the store's embedder could not be resolved; only BM25 searches work",
			"embedder", rec.ID, "dim", rec.Dim, "err", err)
		op.vectorsOnlyFallback(rec)
		return nil
	}
	if !embedderMatches(rec, e) {
		return fmt.Errorf("%w: the resolver gave %q (dim %d) for %q (dim %d)", ErrEmbedderMismatch, e.ID(), e.Dim(), rec.ID, rec.Dim)
	}
	m.opts.Embedder = e
	return nil
}

// vectorsOnlyFallback gives a store whose model is not loaded the identity of its vectors
// as its embedder (vectorstore.VectorsOnly): its dense index opens, searches by a vector
// the caller brings (WithQueryVector) work, and searches that would embed a query fail
// with ErrEmbedderNeeded (hybrid ones fall back to BM25, saying why). A writable store
// gets it only when its vectors were imported (rec.Precomputed), so that it takes more
// imported vectors; a store whose model made its vectors takes no vector without it. A
// read-only store gets it either way: it writes nothing.
func (op opening) vectorsOnlyFallback(rec *embInfo) {
	m := op.m
	if rec.Precomputed || m.opts.ReadOnly {
		m.opts.Embedder = vectorstore.NewVectorsOnly(rec.ID, rec.Dim)
	}
}

// vectorsOnly reports whether e is only the identity of vectors computed elsewhere.
func vectorsOnly(e vectorstore.Embedder) bool {
	_, ok := e.(*vectorstore.VectorsOnly)
	return ok
}

// queryModel reports whether the store has a model to embed queries with.
func (eb embedding) queryModel() bool {
	return eb.m.opts.Embedder != nil && !vectorsOnly(eb.m.opts.Embedder)
}

// embedderMatches reports whether embedder e made (or can query) the vectors rec records:
// the same id and dimension or, where one side names vectors computed elsewhere
// (rec.Precomputed, a VectorsOnly e), the same dimension and model name (the id without
// the "@sha256:..." digest a loaded model adds: "e5-base-v2" names "e5-base-v2@sha256:...").
func embedderMatches(rec *embInfo, e vectorstore.Embedder) bool {
	if rec.Dim != e.Dim() {
		return false
	}
	if rec.ID == e.ID() {
		return true
	}
	return (rec.Precomputed || vectorsOnly(e)) && modelName(rec.ID) == modelName(e.ID())
}

// modelName is an embedder id without its "model2vec:" kind and "@..." digest.
func modelName(id string) string {
	id = strings.TrimPrefix(id, "model2vec:")
	if name, _, ok := strings.Cut(id, "@"); ok {
		return name
	}
	return id
}

// embedderNeeded is the error of an operation that needs the store's unresolved embedder:
// it matches ErrEmbedderNeeded and ErrNoEmbedder (and vectorstore.ErrNoModel for imported
// vectors whose model is absent), with one message.
func (eb embedding) embedderNeeded(op string) error {
	return &embedderNeededError{msg: fmt.Sprintf("%v: %s needs embedder %s, which made this store's vectors: %s",
		ErrEmbedderNeeded, op, eb.recordedName(), eb.unresolvedWhy()), noModel: eb.m.resolveErr == nil && vectorsOnly(eb.m.opts.Embedder)}
}

// recordedName names the recorded embedder: its id and dimension.
func (eb embedding) recordedName() string {
	rec := eb.m.man.Embedder
	return fmt.Sprintf("%q (dim %d)", rec.ID, rec.Dim)
}

// unresolvedWhy says why the recorded embedder is not loaded.
func (eb embedding) unresolvedWhy() string {
	m := eb.m
	switch {
	case m.resolveErr != nil:
		return fmt.Sprintf("loading it failed (%v); open with WithEmbedder, or put the model where its resolver finds it", m.resolveErr)
	case vectorsOnly(m.opts.Embedder):
		return fmt.Sprintf("%v; open with WithEmbedder or put the model in $MEMORY_MODELS", vectorstore.ErrNoModel)
	}
	return "the store was opened WithoutEmbedderResolver; open with WithEmbedder"
}

// embedderNeededError is embedderNeeded's error.
type embedderNeededError struct {
	msg     string
	noModel bool // the vectors were imported and their model is absent
}

func (e *embedderNeededError) Error() string { return e.msg }

// Is matches ErrEmbedderNeeded and ErrNoEmbedder, and vectorstore.ErrNoModel when the
// store's vectors were imported without their model.
func (e *embedderNeededError) Is(target error) bool {
	return target == ErrEmbedderNeeded || target == ErrNoEmbedder || (e.noModel && target == vectorstore.ErrNoModel)
}

// StoredEmbedder returns the id and dimension of the embedder recorded in the store's
// manifest (ok false when the store has none).
func (m *Memory) StoredEmbedder() (id string, dim int, ok bool) {
	if e := m.man.Embedder; e != nil {
		return e.ID, e.Dim, true
	}
	return "", 0, false
}

// checkEmbedder compares the configured embedder with the one recorded in the manifest.
func (op opening) checkEmbedder() error {
	m := op.m
	e := m.opts.Embedder
	if e == nil {
		return nil
	}
	if e.Dim() <= 0 {
		return fmt.Errorf("%w: embedder %q reports dimension %d", ErrInvalidOption, e.ID(), e.Dim())
	}
	rec := m.man.Embedder
	if rec != nil && embedderMatches(rec, e) {
		return nil
	}
	n, err := m.countDocs()
	if err != nil {
		return err
	}
	if n > 0 {
		if !m.opts.ReEmbed {
			if rec == nil {
				return fmt.Errorf("%w: store has %d documents without vectors; open with WithReEmbed to embed them with %q",
					ErrEmbedderMismatch, n, e.ID())
			}
			return fmt.Errorf("%w: store was embedded with %q (dim %d), configured %q (dim %d); open with WithReEmbed to re-embed",
				ErrEmbedderMismatch, rec.ID, rec.Dim, e.ID(), e.Dim())
		}
		if err := m.em.reEmbed(context.Background(), n); err != nil {
			return err
		}
	}
	m.man.Embedder = &embInfo{ID: e.ID(), Dim: e.Dim(), Precomputed: vectorsOnly(e)}
	// The vector indexes of the old embedder are useless now.
	if err := os.RemoveAll(filepath.Join(m.dir, vecDir)); err != nil {
		return err
	}
	return writeManifest(m.dir, m.man)
}

func (m *Memory) countDocs() (int, error) { return m.db.CountDocs() }

// reEmbed replaces every stored vector with one from the configured embedder.
func (eb embedding) reEmbed(ctx context.Context, total int) error {
	m := eb.m
	m.log.Info("memory: re-embedding store", "documents", total, "embedder", m.opts.Embedder.ID())
	done := 0
	names, err := m.db.CollectionNames()
	if err != nil {
		return err
	}
	for _, name := range names {
		var ids []string // index ids: one per chunk
		var texts []string
		var owner []int // the document (counted from 0 in this collection) of each id
		ndocs := 0
		if err := m.forEachRecord(name, func(id string, r *store.Record) {
			for u, uid := range r.UnitIDs(id) {
				ids = append(ids, uid)
				texts = append(texts, unitEmbedText(r, r.UnitIndex(u)))
				owner = append(owner, ndocs)
			}
			ndocs++
		}); err != nil {
			return err
		}
		for i := 0; i < len(ids); i += 256 {
			j := min(i+256, len(ids))
			vecs, err := eb.embed(ctx, texts[i:j])
			if err != nil {
				return err
			}
			if err := eb.roundVectors(vecs); err != nil {
				return err
			}
			if err := m.db.PutVectors(name, ids[i:j], vecs); err != nil {
				return err
			}
			// Documents whose every chunk is embedded.
			docsDone := owner[j-1] + 1
			if j < len(ids) && owner[j] == owner[j-1] {
				docsDone--
			}
			if m.opts.ReEmbedProgress != nil {
				m.opts.ReEmbedProgress(done+docsDone, total)
			}
		}
		done += ndocs
	}
	return nil
}

// embedText is what the embedder sees of a document.
func embedText(title, text string) string {
	if title == "" {
		return text
	}
	if text == "" {
		return title
	}
	return title + "\n" + text
}

// embed runs the embedder in batches and checks its output.
func (eb embedding) embed(ctx context.Context, texts []string) ([][]float32, error) {
	m := eb.m
	e := m.opts.Embedder
	out := make([][]float32, 0, len(texts))
	for i := 0; i < len(texts); i += m.opts.EmbedBatch {
		j := min(i+m.opts.EmbedBatch, len(texts))
		vecs, err := e.Embed(ctx, texts[i:j])
		if err != nil {
			return nil, fmt.Errorf("memory: embed with %q: %w", e.ID(), err)
		}
		if len(vecs) != j-i {
			return nil, fmt.Errorf("%w: embedder %q returned %d vectors for %d texts", ErrBadVector, e.ID(), len(vecs), j-i)
		}
		for _, v := range vecs {
			if err := checkVec(v, e.Dim()); err != nil {
				return nil, fmt.Errorf("embedder %q: %w", e.ID(), err)
			}
		}
		out = append(out, vecs...)
	}
	return out, nil
}

// Embedder is the configured embedder (nil when none).
func (m *Memory) Embedder() vectorstore.Embedder { return m.opts.Embedder }
