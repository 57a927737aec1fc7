package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentmem/memory/internal/store"
	"github.com/agentmem/memory/internal/weaviate"
)

// A store on a Weaviate cluster (issue #41). Open("weaviate://HOST:PORT,HOST:PORT/PREFIX")
// keeps the collections in Weaviate, one class per collection, named PREFIX_<the name,
// encoded>; the class's description records the collection's name and the embedder its
// vectors come from. Our embedder computes the vectors on the client and sends them; BM25
// runs in Weaviate; fusion (RRF), explanations, reranking and chunking run here, with the
// same code as the embedded store.
//
// Each chunk of a document is one Weaviate object whose UUID is UUIDv5 of its index id:
// docId is the document's id, chunk the chunk's index (-1: a document stored whole), text
// what BM25 searches (the title, the chunk's heading path and its text, as the embedded
// BM25 index sees the chunk), and rec, on the document's first object only, the stored
// record (title, text, metadata, chunks) as JSON, from which Get and the results are
// made. Each metadata value is also a filterable array property per key and type
// (m_<key>_s text[], m_<key>_n number[], m_<key>_b boolean[]), so a key may hold strings in
// one document and numbers in another, as in the embedded store.

// Errors of a store on a cluster (they also match the internal client's kinds).
var (
	// ErrClusterUnavailable: no node of the cluster answered usefully within the attempts
	// allowed (connection refused, 5xx, a replica that could not be reached).
	ErrClusterUnavailable = weaviate.ErrUnavailable
	// ErrConsistency: the cluster could not reach the consistency level asked for (ALL
	// with a replica down, say); see WithConsistency.
	ErrConsistency = weaviate.ErrConsistency
	// ErrClusterTimeout: a request to the cluster ran past its timeout.
	ErrClusterTimeout = weaviate.ErrTimeout
	// ErrClusterRejected: the cluster rejected a request (its message says why).
	ErrClusterRejected = weaviate.ErrInvalid
)

// ClusterOptions configure a store on a Weaviate cluster (Open with a weaviate:// address).
type ClusterOptions struct {
	// Replication is the replication factor of the classes this store creates (0:
	// min(3, the number of nodes given)).
	Replication int
	// Shards is the number of shards of the classes this store creates (0: Weaviate's
	// default, one a node). Weaviate scores BM25 within each shard, with that shard's IDF
	// and mean length: with one shard (replicated on every node) BM25 ranks as one index
	// does, as the embedded store; several shards spread a collection over the nodes'
	// disks (needed once it outgrows one) at the cost of per-shard BM25 statistics.
	Shards int
	// Consistency is the consistency level of reads and writes: "ONE", "QUORUM" (the
	// default) or "ALL".
	Consistency string
	// Timeout bounds each request to a node (0: 15 s); MaxAttempts is the number of
	// attempts of one call over all nodes (0: 6).
	Timeout     time.Duration
	MaxAttempts int
	// AsyncReplication turns on Weaviate's asynchronous replication for the classes this
	// store creates: the replicas of a shard compare their contents in the background, so
	// a node back from an outage catches up on the writes it missed without being read
	// (otherwise only the objects read at QUORUM or ALL are repaired). It costs the nodes
	// a hash tree per shard and a comparison every ASYNC_REPLICATION_FREQUENCY (Weaviate's
	// default 30 s).
	AsyncReplication bool
}

// WithReplication sets the replication factor of the classes a store on a cluster creates.
func WithReplication(n int) Option { return func(o *Options) { o.Cluster.Replication = n } }

// WithShards sets the number of shards of the classes a store on a cluster creates (see
// ClusterOptions.Shards).
func WithShards(n int) Option { return func(o *Options) { o.Cluster.Shards = n } }

// WithAsyncReplication turns on asynchronous replication for the classes a store on a
// cluster creates (see ClusterOptions.AsyncReplication).
func WithAsyncReplication() Option { return func(o *Options) { o.Cluster.AsyncReplication = true } }

// WithConsistency sets the consistency level ("ONE", "QUORUM", "ALL") of a store on a
// cluster.
func WithConsistency(level string) Option {
	return func(o *Options) { o.Cluster.Consistency = level }
}

// ClusterScheme begins the address of a store on a Weaviate cluster.
const ClusterScheme = "weaviate://"

// defaultClassPrefix prefixes the classes of a store whose address names no prefix.
const defaultClassPrefix = "Memory"

// isClusterAddress reports whether Open's argument names a Weaviate cluster.
func isClusterAddress(dir string) bool { return strings.HasPrefix(dir, ClusterScheme) }

// clusterStore is the backend of a Memory opened on a cluster.
type clusterStore struct {
	wc     *weaviate.Client
	nodes  []*weaviate.Client // one per node, without failover: to ask each node itself
	prefix string
	repl   int
	shards int // ClusterOptions.Shards
	level  weaviate.Consistency
	async  bool

	mu      sync.Mutex
	classes map[string]*clusterClass // by collection name: those known to exist

	sopErr error // loading the procedures failed: SaveSOPs refuses (cluster_sops.go)
}

// clusterClass is what this process knows of a collection's class.
type clusterClass struct {
	name  string
	mu    sync.Mutex
	props map[string]weaviate.DataType
	emb   *embInfo // the embedder its description records (nil: none)
}

// classDesc is the JSON of a class's description.
type classDesc struct {
	Memory     int            `json:"memory"`
	Collection string         `json:"collection"`
	Embedder   *embInfo       `json:"embedder,omitempty"`
	Meta       map[string]any `json:"meta,omitempty"` // the collection's metadata (cluster_colmeta.go)
}

// Properties of the objects beyond docId, title and text.
const (
	propChunk = "chunk"
	propRec   = "rec"
)

// unsupported is ErrNotSupported naming what.
func unsupported(what string) error {
	return fmt.Errorf("%w: %s (a store on a Weaviate cluster)", ErrNotSupported, what)
}

// parseClusterAddress splits "weaviate://h1:p1,h2:p2/Prefix" into the nodes and the class
// prefix.
func parseClusterAddress(addr string) (nodes []string, prefix string, err error) {
	rest := strings.TrimPrefix(addr, ClusterScheme)
	hosts, prefix, _ := strings.Cut(rest, "/")
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix == "" {
		prefix = defaultClassPrefix
	}
	if !isClassPrefix(prefix) {
		return nil, "", fmt.Errorf("%w: %s: class prefix %q (want a capital letter, then up to 63 letters or digits)", ErrInvalidOption, addr, prefix)
	}
	for _, h := range strings.Split(hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			nodes = append(nodes, h)
		}
	}
	if len(nodes) == 0 {
		return nil, "", fmt.Errorf("%w: %s names no node (want weaviate://HOST:PORT[,HOST:PORT...][/PREFIX])", ErrInvalidOption, addr)
	}
	return nodes, prefix, nil
}

func isClassPrefix(p string) bool {
	if len(p) == 0 || len(p) > 64 || p[0] < 'A' || p[0] > 'Z' {
		return false
	}
	for i := 1; i < len(p); i++ {
		c := p[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// checkClusterOptions refuses the options a store on a cluster cannot honour, naming them.
func checkClusterOptions(o *Options) error {
	switch {
	case o.ReadOnly:
		return unsupported("option ReadOnly")
	case o.Index.Backend != "" || o.Index.Metric != "" || len(o.Index.Params) > 0:
		return unsupported("option Index (Weaviate keeps the vectors in its own HNSW index)")
	case o.VectorPrecision != "" && o.VectorPrecision != Float32:
		return unsupported("option VectorPrecision " + string(o.VectorPrecision))
	case o.RebuildIndex:
		return unsupported("option RebuildIndex")
	case o.ReEmbed:
		return unsupported("option ReEmbed")
	case o.BM25Scoring != "":
		return unsupported("option BM25Scoring (Weaviate scores BM25 its own way)")
	case o.Analyzer != "":
		return unsupported("option Analyzer (Weaviate tokenizes with its word tokenizer)")
	case len(o.extraKinds) > 0:
		return unsupported("extra derived indexes")
	}
	switch strings.ToUpper(o.Cluster.Consistency) {
	case "", "QUORUM", "ONE", "ALL":
	default:
		return fmt.Errorf("%w: consistency level %q (want ONE, QUORUM or ALL)", ErrInvalidOption, o.Cluster.Consistency)
	}
	if o.Cluster.Replication < 0 || o.Cluster.Shards < 0 || o.Cluster.MaxAttempts < 0 || o.Cluster.Timeout < 0 {
		return fmt.Errorf("%w: negative replication %d, shards %d, attempts %d or timeout %v", ErrInvalidOption, o.Cluster.Replication, o.Cluster.Shards, o.Cluster.MaxAttempts, o.Cluster.Timeout)
	}
	return nil
}

// openCluster opens a store on the Weaviate cluster addr names (see Open).
func openCluster(addr string, opts ...Option) (*Memory, error) {
	o, err := baseOptions(opts)
	if err != nil {
		return nil, err
	}
	if err := checkClusterOptions(&o); err != nil {
		return nil, err
	}
	nodes, prefix, err := parseClusterAddress(addr)
	if err != nil {
		return nil, err
	}
	wc, err := weaviate.New(context.Background(), weaviate.Config{Endpoints: nodes, Timeout: o.Cluster.Timeout, MaxAttempts: o.Cluster.MaxAttempts})
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalidOption, addr, err)
	}
	cs := &clusterStore{wc: wc, prefix: prefix, repl: o.Cluster.Replication, shards: o.Cluster.Shards, async: o.Cluster.AsyncReplication, classes: map[string]*clusterClass{}}
	for _, n := range nodes {
		nc, err := weaviate.New(context.Background(), weaviate.Config{Endpoints: []string{n}, Timeout: o.Cluster.Timeout, MaxAttempts: 2})
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrInvalidOption, addr, err)
		}
		cs.nodes = append(cs.nodes, nc)
	}
	if cs.repl == 0 {
		cs.repl = min(3, len(nodes))
	}
	cs.level = weaviate.Quorum
	if cs.repl == 1 {
		// One replica: Weaviate has no consistency level to ask for (its GraphQL refuses
		// the argument on a class without replication), and any level is that replica.
		cs.level = ""
	}
	if l := strings.ToUpper(o.Cluster.Consistency); l != "" {
		cs.level = weaviate.Consistency(l)
	}
	m := &Memory{dir: addr, opts: o, log: o.Logger, cluster: cs}
	m.reg.m, m.reg.cols = m, map[string]*colState{}
	m.dx.m, m.em.m, m.wr.m, m.rs.m = m, m, m, m
	m.man = &manifest{Format: formatVersion, Created: time.Now().UTC()}
	if err := cs.openEmbedder(context.Background(), m); err != nil {
		return nil, err
	}
	return m, nil
}

// openEmbedder reads the embedder the store's classes record and checks the configured one
// against it, as the embedded store checks its manifest's: a class with documents from
// another embedder is ErrEmbedderMismatch; without a configured embedder the recorded one
// is resolved (WithEmbedderResolver).
func (cs *clusterStore) openEmbedder(ctx context.Context, m *Memory) error {
	infos, err := cs.wc.Classes(ctx, cs.prefix+"_")
	if err != nil {
		return fmt.Errorf("memory: opening %s: %w", m.dir, err)
	}
	var rec *embInfo
	e := m.opts.Embedder
	if e != nil && e.Dim() <= 0 {
		return fmt.Errorf("%w: embedder %q reports dimension %d", ErrInvalidOption, e.ID(), e.Dim())
	}
	for _, ci := range infos {
		cc, name, ok := cs.classOf(ci)
		if !ok {
			continue
		}
		mismatch := e != nil && (cc.emb == nil || !embedderMatches(cc.emb, e))
		if !mismatch && rec == nil && cc.emb != nil {
			rec = cc.emb
		}
		if mismatch || e == nil && rec != nil && cc.emb != nil && *cc.emb != *rec {
			n, err := cs.wc.Count(ctx, cc.name, weaviate.Where(propChunk, weaviate.LessThanEqual, 0))
			if err != nil {
				return fmt.Errorf("memory: opening %s: %w", m.dir, err)
			}
			if n == 0 {
				continue // an empty class takes the configured embedder on its first write
			}
			if cc.emb == nil {
				return fmt.Errorf("%w: collection %s has %d documents without vectors; the cluster cannot re-embed them with %q",
					ErrEmbedderMismatch, store.ShowKey(name), n, e.ID())
			}
			if e == nil {
				return fmt.Errorf("%w: collection %s was embedded with %q (dim %d), another with %q (dim %d)",
					ErrEmbedderMismatch, store.ShowKey(name), cc.emb.ID, cc.emb.Dim, rec.ID, rec.Dim)
			}
			return fmt.Errorf("%w: collection %s was embedded with %q (dim %d), configured %q (dim %d)",
				ErrEmbedderMismatch, store.ShowKey(name), cc.emb.ID, cc.emb.Dim, e.ID(), e.Dim())
		}
	}
	if e != nil {
		m.man.Embedder = &embInfo{ID: e.ID(), Dim: e.Dim(), Precomputed: vectorsOnly(e)}
		return nil
	}
	m.man.Embedder = rec
	return opening{m}.resolveEmbedder()
}

// classOf decodes a class of the store's prefix: its state and the collection's name (ok
// false: not a class of this package).
func (cs *clusterStore) classOf(ci weaviate.ClassInfo) (*clusterClass, string, bool) {
	var d classDesc
	if json.Unmarshal([]byte(ci.Description), &d) != nil || d.Memory != 1 || cs.className(d.Collection) != ci.Name {
		return nil, "", false
	}
	return &clusterClass{name: ci.Name, props: ci.Properties, emb: d.Embedder}, d.Collection, true
}

// className is the class of collection name: the prefix, "_", and the name with every byte
// other than a lower-case ASCII letter or digit written as _XX (hex): Weaviate compares
// class names without regard to case.
func (cs *clusterStore) className(name string) string {
	return cs.prefix + "_" + encodeName(name)
}

func encodeName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "_%02X", c)
		}
	}
	return b.String()
}

// maxClassName is the longest class name accepted here (Weaviate's own limit is 255).
const maxClassName = 255

// metaProp is the property that holds key's values of kind t ('s' text, 'n' number, 'b'
// boolean).
func metaProp(key string, t byte) string { return "m_" + encodeName(key) + "_" + string(t) }

// metaPropType is the Weaviate type of a metadata property of kind t.
func metaPropType(t byte) weaviate.DataType {
	switch t {
	case 'n':
		return weaviate.TypeNumberArr
	case 'b':
		return weaviate.TypeBoolList
	}
	return weaviate.TypeTextList
}

// class returns collection name's class, reading the schema when this process does not
// know it yet; (nil, nil) when it does not exist.
func (cs *clusterStore) class(ctx context.Context, name string) (*clusterClass, error) {
	cs.mu.Lock()
	cc := cs.classes[name]
	cs.mu.Unlock()
	if cc != nil {
		return cc, nil
	}
	return cs.loadClass(ctx, name)
}

// loadClass reads collection name's class from the schema (nil, nil: none).
func (cs *clusterStore) loadClass(ctx context.Context, name string) (*clusterClass, error) {
	cn := cs.className(name)
	if len(cn) > maxClassName {
		return nil, nil
	}
	ci, err := cs.wc.Class(ctx, cn)
	if errors.Is(err, weaviate.ErrNotFound) {
		cs.forget(name)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	cc, got, ok := cs.classOf(ci)
	if !ok || got != name {
		return nil, fmt.Errorf("%w: class %s is not a memory collection (its description: %q)", ErrClusterRejected, cn, ci.Description)
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.classes[name] = cc
	return cc, nil
}

func (cs *clusterStore) forget(name string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	delete(cs.classes, name)
}

// existing is the class of a collection that must exist: ErrCollectionNotFound for a
// named one that does not; (nil, nil) for the default collection before its first write.
func (cs *clusterStore) existing(ctx context.Context, name string) (*clusterClass, error) {
	if err := validCollectionName(name); err != nil {
		return nil, err
	}
	cc, err := cs.class(ctx, name)
	if err != nil || cc != nil {
		return cc, err
	}
	if name == DefaultCollection {
		return nil, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrCollectionNotFound, store.ShowKey(name))
}

// create returns collection name's class, creating it when it does not exist.
func (cs *clusterStore) create(ctx context.Context, m *Memory, name string) (*clusterClass, bool, error) {
	return cs.createWith(ctx, m, name, nil)
}

// createWith is create with the collection's metadata meta (normalised) recorded with a
// class it creates.
func (cs *clusterStore) createWith(ctx context.Context, m *Memory, name string, meta map[string]any) (*clusterClass, bool, error) {
	if err := creatableCollectionName(name); err != nil {
		return nil, false, err
	}
	if cc, err := cs.class(ctx, name); err != nil || cc != nil {
		return cc, false, err
	}
	cn := cs.className(name)
	if len(cn) > maxClassName {
		return nil, false, unsupported(fmt.Sprintf("collection name %s (its class name would have %d characters, Weaviate takes at most %d)", store.ShowKey(name), len(cn), maxClassName))
	}
	desc, err := json.Marshal(classDesc{Memory: 1, Collection: name, Embedder: m.man.Embedder, Meta: meta})
	if err != nil {
		return nil, false, err
	}
	err = cs.wc.CreateClass(ctx, weaviate.ClassConfig{
		Name: cn, Replication: cs.repl, Shards: cs.shards, Description: string(desc), DeletionStrategy: "TimeBasedResolution", AsyncReplication: cs.async,
		BM25:   &weaviate.BM25Params{K1: m.opts.BM25K1, B: m.opts.BM25B},
		Fields: []weaviate.Field{{Name: propChunk, Type: weaviate.TypeInt}, {Name: propRec, Type: weaviate.TypeText, Stored: true}},
	})
	created := err == nil
	if err != nil && !(errors.Is(err, weaviate.ErrInvalid) && strings.Contains(strings.ToLower(err.Error()), "already exists")) {
		return nil, false, fmt.Errorf("memory: create collection %s: %w", store.ShowKey(name), err)
	}
	if created {
		if err := cs.awaitClass(ctx, cn); err != nil {
			return nil, false, fmt.Errorf("memory: create collection %s: %w", store.ShowKey(name), err)
		}
	}
	cc, err := cs.loadClass(ctx, name)
	if err == nil && cc == nil {
		err = fmt.Errorf("%w: collection %s: its class %s vanished after its creation", ErrClusterUnavailable, store.ShowKey(name), cn)
	}
	return cc, created, err
}

// awaitClass waits until every node given answers a query on class cn: a class is
// created through Raft, and a node that has not applied it yet would not take its
// replica's share of the first writes (Weaviate replicates nothing afterwards unless
// asynchronous replication is on). A node that does not answer at all is skipped (a
// QUORUM write does not need it); ctx bounds the wait.
func (cs *clusterStore) awaitClass(ctx context.Context, cn string) error {
	for _, nc := range cs.nodes {
		for wait := 10 * time.Millisecond; ; wait = min(2*wait, time.Second) {
			_, err := nc.Fetch(ctx, weaviate.Query{Class: cn, Limit: 1})
			if err == nil || !errors.Is(err, weaviate.ErrNotFound) {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
		}
	}
	return nil
}

// ensureProps adds the metadata properties docs need that the class lacks.
func (cs *clusterStore) ensureProps(ctx context.Context, cc *clusterClass, docs []Document) error {
	need := map[string]byte{}
	for _, d := range docs {
		for k, v := range d.Metadata {
			for _, t := range metaKinds(v) {
				need[metaProp(k, t)] = t
			}
		}
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	names := make([]string, 0, len(need))
	for p := range need {
		if _, ok := cc.props[p]; !ok {
			names = append(names, p)
		}
	}
	sort.Strings(names)
	for _, p := range names {
		if len(p) > maxClassName {
			return unsupported(fmt.Sprintf("metadata key of %d bytes (its property name would have %d characters)", len(p)/3, len(p)))
		}
		f := weaviate.Field{Name: p, Type: metaPropType(need[p])}
		if err := cs.wc.AddProperty(ctx, cc.name, f); err != nil {
			// Another writer may have added it first.
			if ci, cerr := cs.wc.Class(ctx, cc.name); cerr == nil && ci.Properties[p] == f.Type {
				cc.props = ci.Properties
				continue
			}
			return fmt.Errorf("memory: metadata property %s: %w", p, err)
		}
		cc.props[p] = f.Type
	}
	return nil
}

// metaKind is the kind ('s', 'n', 'b') of one normalised metadata value; 0 for another type.
func metaKind(x any) byte {
	switch x.(type) {
	case string:
		return 's'
	case float64:
		return 'n'
	case bool:
		return 'b'
	}
	return 0
}

// eachMeta calls fn with each value of a normalised metadata value (a list's elements, or
// the value itself).
func eachMeta(v any, fn func(x any)) {
	if l, ok := v.([]any); ok {
		for _, x := range l {
			fn(x)
		}
		return
	}
	fn(v)
}

// metaKinds are the kinds ('s', 'n', 'b') of a normalised metadata value's values.
func metaKinds(v any) []byte {
	var out []byte
	eachMeta(v, func(x any) {
		if t := metaKind(x); t != 0 && !slices.Contains(out, t) {
			out = append(out, t)
		}
	})
	return out
}

// metaValues are a normalised metadata value's values of kind t, as a JSON array.
func metaValues(v any, t byte) []any {
	out := []any{}
	eachMeta(v, func(x any) {
		if metaKind(x) == t {
			out = append(out, x)
		}
	})
	return out
}

// clusterBatch is how many objects go in one batch request.
const clusterBatch = 200

// put stores docs in collection col: an Add (ErrDuplicateID when an id is stored) or an
// Upsert. Documents are validated, chunked and embedded as by the embedded store. The write
// is not one transaction: a failure can leave some documents written (an Upsert retried
// converges; an Add retried finds them and fails with ErrDuplicateID).
func (cs *clusterStore) put(ctx context.Context, m *Memory, col string, in []Document, upsert bool) error {
	if m.closed.Load() {
		return ErrClosed
	}
	if len(in) == 0 {
		return nil
	}
	if err := validCollectionName(col); err != nil {
		return err
	}
	w, err := m.wr.newWrite(in)
	if err != nil {
		return err
	}
	if err := w.embed(ctx, m); err != nil {
		return err
	}
	cc, _, err := cs.create(ctx, m, col)
	if err != nil {
		return err
	}
	if err := cs.checkClassEmbedder(ctx, m, col, cc); err != nil {
		return err
	}
	if err := cs.ensureProps(ctx, cc, w.docs); err != nil {
		return err
	}
	ids := make([]string, len(w.docs))
	for i, d := range w.docs {
		ids[i] = d.ID
	}
	if !upsert {
		found, err := cs.heads(ctx, cc, ids, nil)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if _, ok := found[id]; ok {
				return fmt.Errorf("%w: %s is already stored in collection %s (use Upsert to replace)", ErrDuplicateID, store.ShowKey(id), store.ShowKey(col))
			}
		}
	}
	var objs []weaviate.Object
	flush := func() error {
		if len(objs) == 0 {
			return nil
		}
		if clusterFaults.dropAcked != nil {
			objs = clusterFaults.dropAcked(objs)
		}
		err := cs.replicated(ctx, cc, func() error { return cs.wc.PutBatch(ctx, cc.name, cs.level, objs) })
		objs = objs[:0]
		if err != nil {
			return fmt.Errorf("memory: write to collection %s: %w", store.ShowKey(col), err)
		}
		return nil
	}
	for i, d := range w.docs {
		rec := w.recs[i]
		for n, uid := range w.units[i] {
			o, err := unitObject(d.ID, uid, rec, rec.UnitIndex(n), n == 0)
			if err != nil {
				return err
			}
			if w.vecs != nil {
				o.Vector = w.vecs[i][n]
			}
			objs = append(objs, o)
			if len(objs) == clusterBatch {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if upsert {
		return cs.dropStaleChunks(ctx, cc, w)
	}
	return nil
}

// checkClassEmbedder: a class created before this store had an embedder (or by another
// one) takes no vectors of this one while it holds documents.
func (cs *clusterStore) checkClassEmbedder(ctx context.Context, m *Memory, col string, cc *clusterClass) error {
	rec := m.man.Embedder
	if rec == nil && cc.emb == nil || rec != nil && cc.emb != nil && *rec == *cc.emb {
		return nil
	}
	n, err := cs.wc.Count(ctx, cc.name, weaviate.Where(propChunk, weaviate.LessThanEqual, 0))
	if err != nil {
		return err
	}
	if n > 0 {
		name := func(e *embInfo) string {
			if e == nil {
				return "no embedder"
			}
			return fmt.Sprintf("%q (dim %d)", e.ID, e.Dim)
		}
		return fmt.Errorf("%w: collection %s holds %d documents of %s, this store writes with %s",
			ErrEmbedderMismatch, store.ShowKey(col), n, name(cc.emb), name(rec))
	}
	return nil // an empty class: the description is stale but harmless (it is read only with documents)
}

// unitObject is the Weaviate object of unit uid (chunk ci, -1: whole) of document id.
func unitObject(id, uid string, rec *store.Record, ci int, head bool) (weaviate.Object, error) {
	bd := bm25Doc(uid, rec, ci)
	text := embedText(bd.Title, bd.Text)
	md := map[string]any{propChunk: ci}
	if head {
		data, err := json.Marshal(rec)
		if err != nil {
			return weaviate.Object{}, fmt.Errorf("%w: document %s: %v", ErrInvalidMetadata, store.ShowKey(id), err)
		}
		md[propRec] = string(data)
	}
	for k, v := range rec.Metadata {
		for _, t := range metaKinds(v) {
			md[metaProp(k, t)] = metaValues(v, t)
		}
	}
	key := uid
	if head {
		key = id // the document's first object is found by its id alone (Get)
	}
	return weaviate.Object{ID: id, Key: key, Title: rec.Title, Text: text, Metadata: md}, nil
}

// dropStaleChunks deletes the chunks an Upsert's documents no longer have.
func (cs *clusterStore) dropStaleChunks(ctx context.Context, cc *clusterClass, w *docWrite) error {
	byUnits := map[int][]string{}
	for i, d := range w.docs {
		n := len(w.units[i])
		byUnits[n] = append(byUnits[n], d.ID)
	}
	counts := make([]int, 0, len(byUnits))
	for n := range byUnits {
		counts = append(counts, n)
	}
	sort.Ints(counts)
	for _, n := range counts {
		ids := byUnits[n]
		for len(ids) > 0 {
			part := ids[:min(len(ids), clusterBatch)]
			ids = ids[len(part):]
			// A document stored whole (chunk -1) has one object, its head: keep chunk < 1.
			f := weaviate.AllOf(weaviate.Where(weaviate.PropID, weaviate.ContainsAny, part),
				weaviate.Where(propChunk, weaviate.GreaterThanEqual, max(n, 1)))
			if err := cs.deleteAll(ctx, cc, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// clusterFaults plants faults for the fault tests (cluster_fault_test.go sets it from
// MEMORY_FAULT_PLANT for one test, and clears it after); it is zero, and so inert, otherwise.
var clusterFaults struct {
	dropAcked      func([]weaviate.Object) []weaviate.Object // thins a batch that is then acknowledged whole
	noReplicaCheck bool                                      // replicated does not check the replicas
}

// replicated runs write, a write at the store's level, and makes the level mean what it
// says. Weaviate counts the replicas a write needs among the nodes its gossip membership
// lists, not among the shard's replicas: a few seconds after a node dies or is cut off it
// is dropped, and from then on ALL is acknowledged by the two replicas left and QUORUM (of
// three) would be by one with two nodes gone (docs/weaviate.md). So before and after the
// write, the node asked lists the live holders of each shard of the class: fewer than the
// level needs of the shard's replication factor is ErrConsistency (after the write: it may
// be stored on the replicas that are live). A member that does not answer the listing is
// still in the membership (as is one that has not loaded the class yet, after a restart), so
// Weaviate itself counts it and refuses the level without it.
// Left open: a node dropped and back in the membership within one call's span.
func (cs *clusterStore) replicated(ctx context.Context, cc *clusterClass, write func() error) error {
	if cs.level == weaviate.One || clusterFaults.noReplicaCheck {
		return write()
	}
	unanswered, err := cs.checkReplicas(ctx, cc, "before")
	if err != nil {
		return err
	}
	if err := write(); err != nil {
		if unanswered != "" && errors.Is(err, weaviate.ErrTimeout) {
			// A member that did not answer the listing (stopped, cut off) is one the
			// coordinator may still be waiting for: the level was not reached.
			return fmt.Errorf("%w: the write at %s was not acknowledged in time (%s did not answer): %w", ErrConsistency, cs.level, unanswered, err)
		}
		return err
	}
	_, err = cs.checkReplicas(ctx, cc, "after")
	return err
}

// checkReplicas is replicated's check; when names the moment ("before", "after"). It
// returns the member that did not answer the listing, if one did not (Weaviate then still
// counts it, and refuses the level itself when it is down).
func (cs *clusterStore) checkReplicas(ctx context.Context, cc *clusterClass, when string) (string, error) {
	r, err := cs.wc.Replicas(ctx, cc.name)
	if err != nil {
		return "", fmt.Errorf("%w: %s the write at %s, the replicas of class %s could not be listed: %w", ErrConsistency, when, cs.level, cc.name, err)
	}
	if r.Unanswered != "" {
		return r.Unanswered, nil
	}
	for name, s := range r.Shards {
		need := s.Want
		if cs.level == weaviate.Quorum {
			need = s.Want/2 + 1
		}
		if s.Live < need {
			return "", fmt.Errorf("%w: %s the write at %s: shard %s of class %s has %d of its %d replicas on live nodes, %s needs %d",
				ErrConsistency, when, cs.level, name, cc.name, s.Live, s.Want, cs.level, need)
		}
	}
	return "", nil
}

// deleteAll deletes every object f matches (Weaviate deletes a bounded number per call).
func (cs *clusterStore) deleteAll(ctx context.Context, cc *clusterClass, f weaviate.Filter) error {
	for {
		var n int
		err := cs.replicated(ctx, cc, func() (err error) {
			n, err = cs.wc.DeleteWhere(ctx, cc.name, cs.level, f)
			return err
		})
		if err != nil {
			return fmt.Errorf("memory: delete: %w", err)
		}
		if n == 0 {
			return nil
		}
	}
}

// heads reads the first objects (with their records) of documents ids, by id; where, when
// set, is ANDed to the query.
func (cs *clusterStore) heads(ctx context.Context, cc *clusterClass, ids []string, where *weaviate.Filter) (map[string]*store.Record, error) {
	out := make(map[string]*store.Record, len(ids))
	for len(ids) > 0 {
		part := ids[:min(len(ids), clusterBatch)]
		ids = ids[len(part):]
		f := weaviate.AllOf(weaviate.Where(weaviate.PropID, weaviate.ContainsAny, part), weaviate.Where(propChunk, weaviate.LessThanEqual, 0))
		if where != nil {
			f.Operands = append(f.Operands, *where)
		}
		hits, err := cs.wc.Fetch(ctx, weaviate.Query{Class: cc.name, Consistency: cs.level, Limit: 2 * len(part), Where: f, Fields: []string{propRec}})
		if err != nil {
			return nil, cs.classErr(err)
		}
		for _, h := range hits {
			r, err := decodeRec(h.ID, h.Props[propRec])
			if err != nil {
				return nil, err
			}
			out[h.ID] = r
		}
	}
	return out, nil
}

// decodeRec reads the stored record of document id from its rec property.
func decodeRec(id string, v any) (*store.Record, error) {
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("%w: document %s has no record in the cluster", ErrCorrupt, store.ShowKey(id))
	}
	var r store.Record
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return nil, fmt.Errorf("%w: document %s: its record in the cluster: %v", ErrCorrupt, store.ShowKey(id), err)
	}
	return &r, nil
}

// classErr maps a class that vanished under a call (deleted by another handle) to
// ErrCollectionNotFound.
func (cs *clusterStore) classErr(err error) error {
	if errors.Is(err, weaviate.ErrNotFound) {
		return fmt.Errorf("%w: %w", ErrCollectionNotFound, err)
	}
	return err
}

// get reads document id of collection col.
func (cs *clusterStore) get(ctx context.Context, m *Memory, col, id string) (Document, error) {
	if err := ctx.Err(); err != nil {
		return Document{}, err
	}
	if m.closed.Load() {
		return Document{}, ErrClosed
	}
	if err := validCollectionName(col); err != nil {
		return Document{}, err
	}
	cc, err := cs.class(ctx, col)
	if err != nil {
		return Document{}, err
	}
	if cc == nil && col != DefaultCollection {
		return Document{}, fmt.Errorf("%w: %s: %w: %s", ErrNotFound, store.ShowKey(id), ErrCollectionNotFound, store.ShowKey(col))
	}
	if cc != nil && id != "" {
		o, err := cs.wc.Get(ctx, cc.name, cs.level, id)
		if err == nil && o.ID == id {
			r, err := decodeRec(id, o.Metadata[propRec])
			if err != nil {
				return Document{}, err
			}
			d := Document{ID: id, Title: r.Title, Text: r.Text, Metadata: r.Metadata, Source: recordSource(r)}
			if len(r.Chunks) == 0 && len(o.Vector) > 0 {
				d.Embedding = o.Vector
			}
			return d, nil
		}
		if err != nil && !errors.Is(err, weaviate.ErrNotFound) {
			return Document{}, err
		}
	}
	return Document{}, fmt.Errorf("%w: %s in collection %s", ErrNotFound, store.ShowKey(id), store.ShowKey(col))
}

// vectors returns the stored vectors of document id, one per chunk in order.
func (cs *clusterStore) vectors(ctx context.Context, m *Memory, col, id string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if m.closed.Load() {
		return nil, ErrClosed
	}
	if err := validCollectionName(col); err != nil {
		return nil, err
	}
	cc, err := cs.class(ctx, col)
	if err != nil {
		return nil, err
	}
	notFound := fmt.Errorf("%w: %s in collection %s", ErrNotFound, store.ShowKey(id), store.ShowKey(col))
	if cc == nil {
		return nil, notFound
	}
	recs, err := cs.heads(ctx, cc, []string{id}, nil)
	if err != nil {
		return nil, err
	}
	r := recs[id]
	if r == nil {
		return nil, notFound
	}
	out := make([][]float32, max(1, len(r.Chunks)))
	hits, err := cs.wc.Fetch(ctx, weaviate.Query{Class: cc.name, Consistency: cs.level, Limit: len(out) + 1,
		Where: weaviate.Where(weaviate.PropID, weaviate.Equal, id), Fields: []string{propChunk}, WithVector: true})
	if err != nil {
		return nil, cs.classErr(err)
	}
	for _, h := range hits {
		c, _ := h.Props[propChunk].(float64)
		if i := max(0, int(c)); i < len(out) && len(h.Vector) > 0 {
			out[i] = h.Vector
		}
	}
	return out, nil
}

// headFilter matches the documents' first objects (one per document).
var headFilter = weaviate.Where(propChunk, weaviate.LessThanEqual, 0)

// count is the number of documents of collection col.
func (cs *clusterStore) count(ctx context.Context, m *Memory, col string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if m.closed.Load() {
		return 0, ErrClosed
	}
	cc, err := cs.existing(ctx, col)
	if err != nil || cc == nil {
		return 0, err
	}
	n, err := cs.wc.Count(ctx, cc.name, headFilter)
	return n, cs.classErr(err)
}

// ids lists the document ids of collection col, sorted.
func (cs *clusterStore) ids(ctx context.Context, m *Memory, col string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if m.closed.Load() {
		return nil, ErrClosed
	}
	if err := validCollectionName(col); err != nil {
		return nil, err
	}
	cc, err := cs.class(ctx, col) // a named collection that does not exist lists none, as embedded
	if err != nil || cc == nil {
		return nil, err
	}
	// Pages of the documents' first objects sorted by id, each after the last id of the one
	// before (Weaviate's cursor reads one replica's shards only).
	var out []string
	last, first := "", true
	for {
		q := weaviate.Query{Class: cc.name, Consistency: cs.level, Limit: 1000, Where: headFilter, SortBy: weaviate.PropID}
		if !first {
			q.Where = weaviate.AllOf(headFilter, weaviate.Where(weaviate.PropID, weaviate.GreaterThan, last))
		}
		hits, err := cs.wc.Fetch(ctx, q)
		if err != nil {
			return nil, cs.classErr(err)
		}
		for _, h := range hits {
			out = append(out, h.ID)
		}
		if len(hits) > 0 { // the next page begins after the last id in Weaviate's own order
			last, first = hits[len(hits)-1].ID, false
		}
		if len(hits) < q.Limit {
			break
		}
	}
	sort.Strings(out)
	return slices.Compact(out), nil
}

// delete removes documents ids (all their chunks) from collection col.
func (cs *clusterStore) delete(ctx context.Context, m *Memory, col string, ids []string) error {
	if m.closed.Load() {
		return ErrClosed
	}
	if len(ids) == 0 {
		return nil
	}
	cc, err := cs.existing(ctx, col)
	if err != nil || cc == nil {
		return err
	}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	for len(ids) > 0 {
		part := ids[:min(len(ids), clusterBatch)]
		ids = ids[len(part):]
		if err := cs.deleteAll(ctx, cc, weaviate.Where(weaviate.PropID, weaviate.ContainsAny, part)); err != nil {
			return cs.classErr(err)
		}
	}
	return nil
}

// deleteWhere removes the documents of collection col whose metadata matches where and
// returns how many. Not one transaction: the matching documents are listed, then deleted.
func (cs *clusterStore) deleteWhere(ctx context.Context, m *Memory, col string, where Where) (int, error) {
	if m.closed.Load() {
		return 0, ErrClosed
	}
	if len(where) == 0 {
		return 0, fmt.Errorf("%w: DeleteWhere needs a filter (DeleteCollection empties a collection)", ErrInvalidFilter)
	}
	cc, err := cs.existing(ctx, col)
	if err != nil || cc == nil {
		return 0, err
	}
	wf, err := cs.filter(ctx, cc, where)
	if err != nil || wf.none {
		return 0, err
	}
	f := weaviate.Filter{}
	if !wf.all {
		f = wf.f
	}
	total := 0
	done := map[string]bool{} // deleted: a replica that has not applied the delete may list them again
	for {
		q := weaviate.Query{Class: cc.name, Consistency: cs.level, Limit: 1000, Where: headFilter}
		if !wf.all {
			q.Where = weaviate.AllOf(headFilter, f)
		}
		hits, err := cs.wc.Fetch(ctx, q)
		if err != nil {
			return total, cs.classErr(err)
		}
		var ids []string
		for _, h := range hits {
			if !done[h.ID] {
				done[h.ID] = true
				ids = append(ids, h.ID)
			}
		}
		if len(ids) == 0 {
			return total, nil
		}
		if err := cs.delete(ctx, m, col, ids); err != nil {
			return total, err
		}
		total += len(ids)
	}
}

// collections lists the store's collections, sorted.
func (cs *clusterStore) collections(ctx context.Context, m *Memory) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if m.closed.Load() {
		return nil, ErrClosed
	}
	infos, err := cs.wc.Classes(ctx, cs.prefix+"_")
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, ci := range infos {
		if _, name, ok := cs.classOf(ci); ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// createCollection is CreateCollection on a cluster.
func (cs *clusterStore) createCollection(m *Memory, name string, opts []CollectionOption) (*Collection, error) {
	if m.closed.Load() {
		return nil, ErrClosed
	}
	var cfg collectionConfig
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.analyzer != "" {
		return nil, unsupported("WithCollectionAnalyzer")
	}
	var meta map[string]any
	if cfg.meta != nil {
		var err error
		if meta, err = normalCollectionMeta(cfg.meta); err != nil {
			return nil, err
		}
	}
	c := m.Collection(name)
	if _, _, err := cs.createWith(context.Background(), m, c.name, meta); err != nil {
		return nil, err
	}
	return c, nil
}

// deleteCollection is DeleteCollection on a cluster.
func (cs *clusterStore) deleteCollection(ctx context.Context, m *Memory, name string) error {
	if m.closed.Load() {
		return ErrClosed
	}
	c := m.Collection(name)
	if err := validCollectionName(c.name); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	cc, err := cs.class(ctx, c.name)
	if err != nil {
		return err
	}
	if cc == nil {
		if c.name == DefaultCollection {
			return nil
		}
		return fmt.Errorf("%w: %s", ErrCollectionNotFound, store.ShowKey(c.name))
	}
	cs.forget(c.name)
	if err := cs.wc.DeleteClass(ctx, cc.name); err != nil {
		return fmt.Errorf("memory: delete collection %s: %w", store.ShowKey(c.name), err)
	}
	return nil
}

// getCollection is GetCollection on a cluster.
func (cs *clusterStore) getCollection(m *Memory, name string) (*Collection, error) {
	if m.closed.Load() {
		return nil, ErrClosed
	}
	c := m.Collection(name)
	if _, err := cs.existing(context.Background(), c.name); err != nil {
		return nil, err
	}
	return c, nil
}

// callerMethod names the exported method of this package that the call stack is in
// ("Collection.Find"), for the errors of methods not built for a cluster; "this
// operation" when none is found.
func callerMethod() string {
	pcs := make([]uintptr, 32)
	n := runtime.Callers(2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	const pkg = "github.com/agentmem/memory."
	name := ""
	for {
		f, more := frames.Next()
		if rest, ok := strings.CutPrefix(f.Function, pkg); ok {
			// "(*Collection).Find" or "Open"; the outermost exported one wins
			recv, meth, isMethod := strings.Cut(rest, ").")
			if isMethod {
				recv = strings.TrimPrefix(strings.TrimPrefix(recv, "("), "*")
				if meth != "" && meth[0] >= 'A' && meth[0] <= 'Z' && !strings.Contains(meth, ".") {
					name = recv + "." + meth
				}
			}
		}
		if !more {
			break
		}
	}
	if name == "" {
		return "this operation"
	}
	return name
}

// clusterUnsupported is the error of a method not built for a store on a cluster.
func (m *Memory) clusterUnsupported(method string) error {
	if m.closed.Load() {
		return ErrClosed
	}
	return unsupported(method)
}
