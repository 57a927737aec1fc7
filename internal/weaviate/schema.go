package weaviate

import (
	"context"
	"crypto/sha1"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// The properties every class of this package has. Weaviate reserves "id", so our string id
// is "docId".
const (
	PropID    = "docId"
	PropTitle = "title"
	PropText  = "text"
)

// DataType is the Weaviate data type of a metadata field.
type DataType string

// The metadata field types.
const (
	TypeText      DataType = "text"
	TypeTextList  DataType = "text[]"
	TypeInt       DataType = "int"
	TypeIntList   DataType = "int[]"
	TypeNumber    DataType = "number"
	TypeBool      DataType = "boolean"
	TypeDate      DataType = "date"
	TypeNumberArr DataType = "number[]"
	TypeBoolList  DataType = "boolean[]"
)

// Field is a filterable metadata property of a class. Text fields are stored with "field"
// tokenization (the whole value is one token: exact matches) and are not searched by BM25.
type Field struct {
	Name string
	Type DataType
	// Stored: the property is kept and returned but neither filterable nor searchable (a
	// blob the client reads back, such as a serialised record).
	Stored bool
}

// BM25Params are Weaviate's BM25 parameters (defaults k1 1.2, b 0.75).
type BM25Params struct {
	K1 float64 `json:"k1"`
	B  float64 `json:"b"`
}

// ClassConfig describes a class (collection): vectorizer "none", the client sends vectors.
type ClassConfig struct {
	// Name is the class name: a capital letter, then letters, digits or underscores.
	Name string
	// Replication is replicationConfig.factor (0: Weaviate's default, 1).
	Replication int
	// Shards is shardingConfig.desiredCount (0: Weaviate's default, one shard a node).
	// Weaviate scores BM25 within each shard (its IDF and mean length), so one shard,
	// replicated, ranks as one index does; several spread a class over the nodes' disks.
	Shards int
	// BM25 sets invertedIndexConfig.bm25; nil keeps Weaviate's defaults.
	BM25 *BM25Params
	// Tokenization of the title and text properties: "word" (the default: split on
	// non-alphanumerics, lowercase), "lowercase", "whitespace", "field", "trigram", ...
	Tokenization string
	// Stopwords is invertedIndexConfig.stopwords.preset: "" keeps Weaviate's default ("en"),
	// "none" turns stop words off.
	Stopwords string
	// Distance is vectorIndexConfig.distance ("" keeps Weaviate's default, cosine).
	Distance string
	// Fields are the metadata properties.
	Fields []Field
	// BlockMaxWAND sets invertedIndexConfig.usingBlockMaxWAND (nil: Weaviate's default, on
	// for new classes in v1.35). docs/weaviate.md has what it changes on SciFact.
	BlockMaxWAND *bool
	// DeletionStrategy is replicationConfig.deletionStrategy: how replicas that disagree
	// on a deleted object resolve it ("": Weaviate's default, NoAutomatedResolution, under
	// which a read that meets the disagreement fails; "DeleteOnConflict";
	// "TimeBasedResolution": the latest write or delete wins).
	DeletionStrategy string
	// AsyncReplication sets replicationConfig.asyncEnabled: the replicas of each shard
	// compare their contents in the background and copy what one lacks (a node back from
	// an outage catches up without being read). The nodes' ASYNC_REPLICATION_FREQUENCY sets
	// how often.
	AsyncReplication bool
	// Description is the class's description, kept by Weaviate and returned by Classes
	// (callers record what they need to find again there).
	Description string
}

var classNameRE = regexp.MustCompile(`^[A-Z][_0-9A-Za-z]*$`)
var propNameRE = regexp.MustCompile(`^[_A-Za-z][_0-9A-Za-z]*$`)

type propertyJSON struct {
	Name            string   `json:"name"`
	DataType        []string `json:"dataType"`
	Tokenization    string   `json:"tokenization,omitempty"`
	IndexFilterable *bool    `json:"indexFilterable,omitempty"`
	IndexSearchable *bool    `json:"indexSearchable,omitempty"`
}

// classJSON is the body of POST /v1/schema.
type classJSON struct {
	Class               string            `json:"class"`
	Description         string            `json:"description,omitempty"`
	Vectorizer          string            `json:"vectorizer"`
	ReplicationConfig   *replicationJSON  `json:"replicationConfig,omitempty"`
	InvertedIndexConfig invertedIndexJSON `json:"invertedIndexConfig"`
	VectorIndexConfig   map[string]any    `json:"vectorIndexConfig,omitempty"`
	ShardingConfig      map[string]any    `json:"shardingConfig,omitempty"`
	Properties          []propertyJSON    `json:"properties"`
}

type replicationJSON struct {
	Factor           int    `json:"factor,omitempty"`
	DeletionStrategy string `json:"deletionStrategy,omitempty"`
	AsyncEnabled     bool   `json:"asyncEnabled,omitempty"`
}

type invertedIndexJSON struct {
	BM25         *BM25Params    `json:"bm25,omitempty"`
	Stopwords    map[string]any `json:"stopwords,omitempty"`
	BlockMaxWAND *bool          `json:"usingBlockMaxWAND,omitempty"`
}

func ptr[T any](v T) *T { return &v }

// classBody builds the schema request for cfg.
func classBody(cfg ClassConfig) (classJSON, error) {
	if !classNameRE.MatchString(cfg.Name) {
		return classJSON{}, fmt.Errorf("class name %q: want a capital letter, then letters, digits or _", cfg.Name)
	}
	if cfg.Replication < 0 {
		return classJSON{}, fmt.Errorf("replication factor %d", cfg.Replication)
	}
	if cfg.Shards < 0 {
		return classJSON{}, fmt.Errorf("shard count %d", cfg.Shards)
	}
	tok := cfg.Tokenization
	if tok == "" {
		tok = "word"
	}
	body := classJSON{
		Class:       cfg.Name,
		Description: cfg.Description,
		Vectorizer:  "none",
		Properties: []propertyJSON{
			{Name: PropID, DataType: []string{"text"}, Tokenization: "field", IndexFilterable: ptr(true), IndexSearchable: ptr(false)},
			{Name: PropTitle, DataType: []string{"text"}, Tokenization: tok, IndexFilterable: ptr(true), IndexSearchable: ptr(true)},
			{Name: PropText, DataType: []string{"text"}, Tokenization: tok, IndexFilterable: ptr(true), IndexSearchable: ptr(true)},
		},
		InvertedIndexConfig: invertedIndexJSON{BM25: cfg.BM25, BlockMaxWAND: cfg.BlockMaxWAND},
	}
	if cfg.Replication > 0 || cfg.DeletionStrategy != "" || cfg.AsyncReplication {
		body.ReplicationConfig = &replicationJSON{Factor: cfg.Replication, DeletionStrategy: cfg.DeletionStrategy, AsyncEnabled: cfg.AsyncReplication}
	}
	if cfg.Shards > 0 {
		body.ShardingConfig = map[string]any{"desiredCount": cfg.Shards}
	}
	if cfg.Stopwords != "" {
		body.InvertedIndexConfig.Stopwords = map[string]any{"preset": cfg.Stopwords}
	}
	if cfg.Distance != "" {
		body.VectorIndexConfig = map[string]any{"distance": cfg.Distance}
	}
	seen := map[string]bool{PropID: true, PropTitle: true, PropText: true, "id": true, "_id": true}
	for _, f := range cfg.Fields {
		if seen[f.Name] {
			return classJSON{}, fmt.Errorf("field name %q: invalid or taken", f.Name)
		}
		seen[f.Name] = true
		p, err := fieldProperty(f)
		if err != nil {
			return classJSON{}, err
		}
		body.Properties = append(body.Properties, p)
	}
	return body, nil
}

// fieldProperty is the schema property of a metadata field.
func fieldProperty(f Field) (propertyJSON, error) {
	if !propNameRE.MatchString(f.Name) || f.Name == PropID || f.Name == PropTitle || f.Name == PropText || f.Name == "id" || f.Name == "_id" {
		return propertyJSON{}, fmt.Errorf("field name %q: invalid or taken", f.Name)
	}
	p := propertyJSON{Name: f.Name, DataType: []string{string(f.Type)}, IndexFilterable: ptr(!f.Stored)}
	switch f.Type {
	case TypeText, TypeTextList:
		p.Tokenization, p.IndexSearchable = "field", ptr(false)
	case TypeInt, TypeIntList, TypeNumber, TypeNumberArr, TypeBool, TypeBoolList, TypeDate:
	default:
		return propertyJSON{}, fmt.Errorf("field %q: unsupported type %q", f.Name, f.Type)
	}
	if f.Stored {
		p.IndexFilterable = ptr(false)
		if p.IndexSearchable != nil {
			p.IndexSearchable = ptr(false)
		}
		if p.Tokenization != "" {
			p.Tokenization = ""
		}
	}
	return p, nil
}

// CreateClass creates the class cfg describes. A retried create that finds the class already
// there (the first attempt succeeded but its answer was lost) succeeds.
func (c *Client) CreateClass(ctx context.Context, cfg ClassConfig) error {
	const op = "create class"
	body, err := classBody(cfg)
	if err != nil {
		return invalid(op, "%v", err)
	}
	data, err := json.Marshal(body)
	if err != nil {
		return invalid(op, "%v", err)
	}
	return c.do(ctx, request{op: op + " " + cfg.Name, method: http.MethodPost, path: "/v1/schema", body: data,
		accept: func(status int, b []byte, attempt int) (*Error, bool) {
			e, retry := acceptREST(status, b, attempt)
			if e != nil && attempt > 1 && e.Kind == ErrInvalid && strings.Contains(strings.ToLower(e.Msg), "already exists") {
				return nil, false
			}
			return e, retry
		}})
}

// DeleteClass deletes the class and all its objects; deleting a class that does not exist
// succeeds.
func (c *Client) DeleteClass(ctx context.Context, name string) error {
	if !classNameRE.MatchString(name) {
		return invalid("delete class", "class name %q", name)
	}
	err := c.do(ctx, request{op: "delete class " + name, method: http.MethodDelete, path: "/v1/schema/" + url.PathEscape(name)})
	if isKind(err, ErrNotFound) {
		return nil
	}
	return err
}

// ClassExists reports whether the class exists.
func (c *Client) ClassExists(ctx context.Context, name string) (bool, error) {
	if !classNameRE.MatchString(name) {
		return false, invalid("class exists", "class name %q", name)
	}
	err := c.do(ctx, request{op: "get class " + name, method: http.MethodGet, path: "/v1/schema/" + url.PathEscape(name)})
	switch {
	case err == nil:
		return true, nil
	case isKind(err, ErrNotFound):
		return false, nil
	default:
		return false, err
	}
}

func isKind(err, kind error) bool {
	e, ok := err.(*Error)
	return ok && e.Kind == kind
}

// namespace is the UUIDv5 namespace of our ids: 16 random bytes chosen once for this package.
// Changing it changes every object's UUID.
var namespace = [16]byte{0x2f, 0x3a, 0x0c, 0x7e, 0x5d, 0x41, 0x5b, 0x8e, 0x9a, 0x57, 0x4e, 0x2b, 0x61, 0x1d, 0x93, 0xc4}

// UUID returns the Weaviate object UUID for our string id: UUIDv5 (RFC 9562, SHA-1) of id in
// a namespace fixed by this package. The same id gives the same UUID in every process.
func UUID(id string) string {
	h := sha1.New()
	h.Write(namespace[:])
	h.Write([]byte(id))
	var u [16]byte
	copy(u[:], h.Sum(nil))
	u[6] = u[6]&0x0f | 0x50 // version 5
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
