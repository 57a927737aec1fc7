package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentmem/memory"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The Chroma-compatible tools: the names and argument shapes of Chroma's MCP server
// (chroma-core/chroma-mcp), so that an agent written for it runs against this store.
// Chroma's "documents" are a document's text here; titles are not shown to them.
const (
	toolChromaListCollections  = "chroma_list_collections"
	toolChromaCreateCollection = "chroma_create_collection"
	toolChromaPeekCollection   = "chroma_peek_collection"
	toolChromaCollectionInfo   = "chroma_get_collection_info"
	toolChromaCollectionCount  = "chroma_get_collection_count"
	toolChromaModifyCollection = "chroma_modify_collection"
	toolChromaDeleteCollection = "chroma_delete_collection"
	toolChromaAddDocuments     = "chroma_add_documents"
	toolChromaQueryDocuments   = "chroma_query_documents"
	toolChromaGetDocuments     = "chroma_get_documents"
	toolChromaUpdateDocuments  = "chroma_update_documents"
	toolChromaDeleteDocuments  = "chroma_delete_documents"
)

// The values of "include".
const (
	includeDocuments  = "documents"
	includeMetadatas  = "metadatas"
	includeDistances  = "distances"
	includeEmbeddings = "embeddings"
)

// listCollectionsInput is chroma_list_collections' input.
type listCollectionsInput struct {
	Limit  int `json:"limit,omitempty" jsonschema:"most collections to list (default: all)"`
	Offset int `json:"offset,omitempty" jsonschema:"collections to skip"`
}

// listCollectionsOutput is chroma_list_collections' output.
type listCollectionsOutput struct {
	Collections []string `json:"collections"`
}

// createCollectionInput is chroma_create_collection's input. The HNSW and embedding
// settings of Chroma are accepted and ignored (this store has one embedder, chosen when it
// was created); the collection metadata is stored with it (string keys; string, number or
// boolean values; see memory.MaxCollectionMetadataKeys and MaxCollectionMetadataBytes).
//
// Analyzer is this server's addition: the collection's BM25 analyzer
// (memory.WithCollectionAnalyzer; memory.Analyzers lists them), a flat argument beside
// Chroma's flat HNSW ones, as chroma-mcp's tool takes its settings (it has no
// configuration object); an unknown one is a tool error naming those there are.
type createCollectionInput struct {
	CollectionName        string         `json:"collection_name" jsonschema:"name of the collection to create"`
	Analyzer              string         `json:"analyzer,omitempty" jsonschema:"BM25 analyzer of the collection: en (default), cjk for Chinese/Japanese/Korean, or a language code such as de, fr, es, it, ru"`
	EmbeddingFunctionName string         `json:"embedding_function_name,omitempty" jsonschema:"ignored: the store's embedder is used"`
	Metadata              map[string]any `json:"metadata,omitempty" jsonschema:"collection metadata: string keys, string, number or boolean values"`
	Space                 string         `json:"space,omitempty" jsonschema:"ignored"`
	EFConstruction        int            `json:"ef_construction,omitempty" jsonschema:"ignored"`
	EFSearch              int            `json:"ef_search,omitempty" jsonschema:"ignored"`
	MaxNeighbors          int            `json:"max_neighbors,omitempty" jsonschema:"ignored"`
	NumThreads            int            `json:"num_threads,omitempty" jsonschema:"ignored"`
	BatchSize             int            `json:"batch_size,omitempty" jsonschema:"ignored"`
	SyncThreshold         int            `json:"sync_threshold,omitempty" jsonschema:"ignored"`
	ResizeFactor          float64        `json:"resize_factor,omitempty" jsonschema:"ignored"`
}

// collectionNameInput names a collection (chroma_get_collection_info,
// chroma_get_collection_count, chroma_delete_collection).
type collectionNameInput struct {
	CollectionName string `json:"collection_name" jsonschema:"name of the collection"`
}

// collectionOutput names the collection a tool acted on.
type collectionOutput struct {
	Collection string `json:"collection"`
	Message    string `json:"message"`
}

// peekInput is chroma_peek_collection's input.
type peekInput struct {
	CollectionName string `json:"collection_name" jsonschema:"name of the collection"`
	Limit          int    `json:"limit,omitempty" jsonschema:"number of documents to show (default 5)"`
}

// countOutput is chroma_get_collection_count's output.
type countOutput struct {
	Count int `json:"count"`
}

// collectionInfoOutput is chroma_get_collection_info's output.
type collectionInfoOutput struct {
	Name            string          `json:"name"`
	Count           int             `json:"count"`
	Analyzer        string          `json:"analyzer"` // its BM25 analyzer (en unless created with another)
	Metadata        map[string]any  `json:"metadata"`
	SampleDocuments chromaGetOutput `json:"sample_documents"`
}

// modifyCollectionInput is chroma_modify_collection's input: a new name, new metadata
// (replacing the old), or both, changed in one transaction.
type modifyCollectionInput struct {
	CollectionName string         `json:"collection_name" jsonschema:"name of the collection"`
	NewName        string         `json:"new_name,omitempty" jsonschema:"new name of the collection (must not exist)"`
	NewMetadata    map[string]any `json:"new_metadata,omitempty" jsonschema:"metadata replacing the collection's ({} clears it)"`
}

// addDocumentsInput is chroma_add_documents' input.
type addDocumentsInput struct {
	CollectionName string           `json:"collection_name" jsonschema:"collection to add to (created when missing)"`
	Documents      []string         `json:"documents" jsonschema:"the texts to store"`
	IDs            []string         `json:"ids" jsonschema:"one unique id per document"`
	Metadatas      []map[string]any `json:"metadatas,omitempty" jsonschema:"one metadata object per document (string, number or boolean values)"`
}

// addDocumentsOutput is chroma_add_documents' output.
type addDocumentsOutput struct {
	Collection string `json:"collection"`
	Added      int    `json:"added"`
}

// queryDocumentsInput is chroma_query_documents' input. QueryEmbeddings is Chroma's
// query_embeddings (collection.query's, which chroma-mcp's tool leaves out): the queries'
// own vectors, made by the caller with the model of the store's vectors, searched as they
// are (memory.WithQueryVectors). Alone, each is a query searched by dense recall; beside
// query_texts (one per text, as many), the texts are searched by BM25 and the vectors by
// dense recall, fused. Each vector must have the store's dimension; their size is bounded
// by MaxArgBytes and their count by MaxQueries.
type queryDocumentsInput struct {
	CollectionName  string               `json:"collection_name" jsonschema:"collection to query"`
	QueryTexts      []string             `json:"query_texts,omitempty" jsonschema:"one or more queries; each gets its own list of results"`
	QueryEmbeddings [][]float32          `json:"query_embeddings,omitempty" jsonschema:"query vectors made by the caller with the store's embedding model, one per query (searched by vector instead of embedding query_texts; alone, a vector search of each)"`
	NResults        int                  `json:"n_results,omitempty" jsonschema:"results per query (default 5)"`
	Where           memory.Where         `json:"where,omitempty" jsonschema:"metadata filter with Chroma's operators, e.g. {\"year\": {\"$gte\": 2020}}"`
	WhereDocument   memory.WhereDocument `json:"where_document,omitempty" jsonschema:"text filter: {\"$contains\": \"x\"}, {\"$not_contains\": \"x\"}, $and, $or"`
	Include         []string             `json:"include,omitempty" jsonschema:"any of documents, metadatas, distances, embeddings (default documents, metadatas, distances)"`
}

// queryDocumentsOutput is chroma_query_documents' output: list i answers query_texts[i],
// one entry per document (its best-matching chunk's text for a document stored in several
// chunks: chroma_get_documents has the whole text). A field left out of include is null.
// Distances mean what Chroma's mean in its default space (chromaDistance): cosine
// distance, lower is closer; Scores are the store's own ranking scores.
type queryDocumentsOutput struct {
	IDs        [][]string         `json:"ids"`
	Documents  [][]string         `json:"documents"`
	Metadatas  [][]map[string]any `json:"metadatas"`
	Distances  [][]float64        `json:"distances" jsonschema:"cosine distance as in Chroma's default space: 1 - cosine similarity of the query's and the document's embeddings (0 for an exact match, up to 2; lower is closer), or 1 - relevance (0..1) when the store has no embedder"`
	Embeddings [][][]float32      `json:"embeddings"`
	Scores     [][]float64        `json:"scores" jsonschema:"the store's ranking scores (fused RRF scores in a hybrid search, higher is better): they order the results but are not for thresholds"`
	Include    []string           `json:"include"`
}

// getDocumentsInput is chroma_get_documents' input.
type getDocumentsInput struct {
	CollectionName string               `json:"collection_name" jsonschema:"collection to read"`
	IDs            []string             `json:"ids,omitempty" jsonschema:"only these documents"`
	Where          memory.Where         `json:"where,omitempty" jsonschema:"metadata filter"`
	WhereDocument  memory.WhereDocument `json:"where_document,omitempty" jsonschema:"text filter"`
	Include        []string             `json:"include,omitempty" jsonschema:"any of documents, metadatas, embeddings (default documents, metadatas)"`
	Limit          int                  `json:"limit,omitempty" jsonschema:"most documents to return"`
	Offset         int                  `json:"offset,omitempty" jsonschema:"matching documents to skip"`
}

// chromaGetOutput is chroma_get_documents' (and chroma_peek_collection's) output, in id
// order (or in the order of ids); a field left out of include is null.
type chromaGetOutput struct {
	IDs        []string         `json:"ids"`
	Documents  []string         `json:"documents"`
	Metadatas  []map[string]any `json:"metadatas"`
	Embeddings [][]float32      `json:"embeddings"`
	Include    []string         `json:"include"`
}

// updateDocumentsInput is chroma_update_documents' input: each given field replaces the
// stored one (metadata keys are merged: given keys overwrite, others stay).
type updateDocumentsInput struct {
	CollectionName string           `json:"collection_name" jsonschema:"collection of the documents"`
	IDs            []string         `json:"ids" jsonschema:"documents to update; all must exist"`
	Documents      []string         `json:"documents,omitempty" jsonschema:"new texts, one per id"`
	Metadatas      []map[string]any `json:"metadatas,omitempty" jsonschema:"metadata to merge, one per id"`
	Embeddings     [][]float32      `json:"embeddings,omitempty" jsonschema:"new vectors, one per id (of the store's dimension)"`
}

// updateDocumentsOutput is chroma_update_documents' output.
type updateDocumentsOutput struct {
	Updated int `json:"updated"`
}

// deleteDocumentsInput is chroma_delete_documents' input: the documents among ids (all,
// without ids) that match where and where_document. At least one of them is needed.
type deleteDocumentsInput struct {
	CollectionName string               `json:"collection_name" jsonschema:"collection to delete from"`
	IDs            []string             `json:"ids,omitempty" jsonschema:"documents to delete; unknown ids are ignored"`
	Where          memory.Where         `json:"where,omitempty" jsonschema:"delete the documents matching this metadata filter"`
	WhereDocument  memory.WhereDocument `json:"where_document,omitempty" jsonschema:"delete the documents matching this text filter"`
}

// deleteDocumentsOutput is chroma_delete_documents' output.
type deleteDocumentsOutput struct {
	Deleted int      `json:"deleted"`
	IDs     []string `json:"ids"`
}

// addChromaTools registers the Chroma-compatible tools.
func (s *server) addChromaTools(srv *mcp.Server) {
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	destructive := true
	del := &mcp.ToolAnnotations{DestructiveHint: &destructive}
	mcp.AddTool(srv, &mcp.Tool{Name: toolChromaListCollections, Annotations: ro,
		Description: "List the names of the collections of the long-term memory."}, s.chromaList)
	mcp.AddTool(srv, &mcp.Tool{Name: toolChromaPeekCollection, Annotations: ro,
		Description: "Show the first documents of a collection."}, s.chromaPeek)
	mcp.AddTool(srv, &mcp.Tool{Name: toolChromaCollectionInfo, Annotations: ro,
		Description: "Name, metadata, document count and three sample documents of a collection."}, s.chromaInfo)
	mcp.AddTool(srv, &mcp.Tool{Name: toolChromaCollectionCount, Annotations: ro,
		Description: "Number of documents in a collection."}, s.chromaCount)
	mcp.AddTool(srv, &mcp.Tool{Name: toolChromaQueryDocuments, Annotations: ro,
		Description: "Search a collection with one or more queries (hybrid BM25 + dense), with optional metadata (where) and text (where_document) filters; one result list per query. query_embeddings (vectors made with the store's embedding model, one per query) are searched instead of embedding the texts, or alone as vector searches. distances are Chroma's cosine distances (1 - cosine similarity: 0 for an exact match, lower is closer, so a cut such as distance < 0.5 keeps close matches)."}, s.chromaQuery)
	mcp.AddTool(srv, &mcp.Tool{Name: toolChromaGetDocuments, Annotations: ro,
		Description: "Read documents by id and/or by metadata and text filters, with limit and offset."}, s.chromaGet)
	if s.o.ReadOnly {
		return
	}
	mcp.AddTool(srv, &mcp.Tool{Name: toolChromaCreateCollection,
		Description: "Create an empty collection, with optional metadata."}, s.chromaCreate)
	mcp.AddTool(srv, &mcp.Tool{Name: toolChromaModifyCollection,
		Description: "Rename a collection (new_name) and/or replace its metadata (new_metadata), in one step."}, s.chromaModify)
	mcp.AddTool(srv, &mcp.Tool{Name: toolChromaDeleteCollection, Annotations: del,
		Description: "Delete a collection with all its documents."}, s.chromaDeleteCollection)
	mcp.AddTool(srv, &mcp.Tool{Name: toolChromaAddDocuments,
		Description: "Add documents (texts with ids and optional metadata) to a collection, created when missing. An id already stored is an error."}, s.chromaAdd)
	mcp.AddTool(srv, &mcp.Tool{Name: toolChromaUpdateDocuments,
		Description: "Update stored documents: new texts, metadata (merged) or embeddings."}, s.chromaUpdate)
	mcp.AddTool(srv, &mcp.Tool{Name: toolChromaDeleteDocuments, Annotations: del,
		Description: "Delete documents by id and/or by metadata (where) and text (where_document) filters."}, s.chromaDeleteDocs)
}

// existingCollection is the named collection when it exists (ErrCollectionNotFound).
func (s *server) existingCollection(name string) (*memory.Collection, error) {
	if name == "" {
		return nil, fmt.Errorf("%w: collection_name is empty", ErrInvalidInput)
	}
	return s.m.GetCollection(name)
}

// includes checks include against the allowed values and returns it as a set; def when
// include is nil.
func includes(include []string, def []string, allowed ...string) (map[string]bool, []string, error) {
	if include == nil {
		include = def
	}
	set := map[string]bool{}
	for _, v := range include {
		if !slices.Contains(allowed, v) {
			return nil, nil, fmt.Errorf("%w: include %q (want any of %s)", ErrInvalidInput, v, strings.Join(allowed, ", "))
		}
		set[v] = true
	}
	return set, include, nil
}

func (s *server) checkIDs(ids []string, limit int, capName string) error {
	if len(ids) > limit {
		return fmt.Errorf("%w: %d ids, at most %d per call (%s)", ErrTooLarge, len(ids), limit, capName)
	}
	for i, id := range ids {
		if id == "" {
			return fmt.Errorf("%w: ids[%d] is empty", ErrInvalidInput, i)
		}
	}
	return nil
}

func (s *server) chromaList(ctx context.Context, _ *mcp.CallToolRequest, in listCollectionsInput) (*mcp.CallToolResult, listCollectionsOutput, error) {
	if in.Limit < 0 || in.Offset < 0 {
		return nil, listCollectionsOutput{}, fmt.Errorf("%w: limit %d, offset %d: want >= 0", ErrInvalidInput, in.Limit, in.Offset)
	}
	names, err := s.m.Collections(ctx)
	if err != nil {
		return nil, listCollectionsOutput{}, err
	}
	names = names[min(in.Offset, len(names)):]
	if in.Limit > 0 && in.Limit < len(names) {
		names = names[:in.Limit]
	}
	return nil, listCollectionsOutput{Collections: names}, nil
}

func (s *server) chromaCreate(_ context.Context, _ *mcp.CallToolRequest, in createCollectionInput) (*mcp.CallToolResult, collectionOutput, error) {
	if in.CollectionName == "" {
		return nil, collectionOutput{}, fmt.Errorf("%w: collection_name is empty", ErrInvalidInput)
	}
	if _, err := s.m.GetCollection(in.CollectionName); err == nil {
		return nil, collectionOutput{}, fmt.Errorf("%w: collection %q already exists", ErrInvalidInput, in.CollectionName)
	} else if !errors.Is(err, memory.ErrCollectionNotFound) {
		return nil, collectionOutput{}, err
	}
	var opts []memory.CollectionOption
	if in.Metadata != nil {
		opts = append(opts, memory.WithCollectionMetadata(in.Metadata))
	}
	if in.Analyzer != "" {
		opts = append(opts, memory.WithCollectionAnalyzer(in.Analyzer))
	}
	c, err := s.m.CreateCollection(in.CollectionName, opts...)
	if err != nil {
		return nil, collectionOutput{}, err
	}
	return nil, collectionOutput{Collection: c.Name(), Message: "created collection " + c.Name() + " (BM25 analyzer " + c.Analyzer() + ")"}, nil
}

func (s *server) chromaModify(ctx context.Context, _ *mcp.CallToolRequest, in modifyCollectionInput) (*mcp.CallToolResult, collectionOutput, error) {
	c, err := s.existingCollection(in.CollectionName)
	if err != nil {
		return nil, collectionOutput{}, err
	}
	if in.NewName == "" && in.NewMetadata == nil {
		return nil, collectionOutput{}, fmt.Errorf("%w: give new_name, new_metadata or both", ErrInvalidInput)
	}
	var opts []memory.CollectionOption
	if in.NewMetadata != nil {
		opts = append(opts, memory.WithCollectionMetadata(in.NewMetadata))
	}
	name, did := c.Name(), []string{}
	if in.NewName != "" {
		if err := s.m.RenameCollection(ctx, name, in.NewName, opts...); err != nil {
			return nil, collectionOutput{}, err
		}
		name = s.m.Collection(in.NewName).Name()
		did = append(did, "renamed it to "+name)
	} else if err := s.m.SetCollectionMetadata(ctx, name, in.NewMetadata); err != nil {
		return nil, collectionOutput{}, err
	}
	if in.NewMetadata != nil {
		did = append(did, "replaced its metadata")
	}
	return nil, collectionOutput{Collection: name, Message: "modified collection " + c.Name() + ": " + strings.Join(did, " and ")}, nil
}

func (s *server) chromaDeleteCollection(ctx context.Context, _ *mcp.CallToolRequest, in collectionNameInput) (*mcp.CallToolResult, collectionOutput, error) {
	if in.CollectionName == "" {
		return nil, collectionOutput{}, fmt.Errorf("%w: collection_name is empty", ErrInvalidInput)
	}
	if err := s.m.DeleteCollection(ctx, in.CollectionName); err != nil {
		return nil, collectionOutput{}, err
	}
	return nil, collectionOutput{Collection: in.CollectionName, Message: "deleted collection " + in.CollectionName}, nil
}

func (s *server) chromaCount(ctx context.Context, _ *mcp.CallToolRequest, in collectionNameInput) (*mcp.CallToolResult, countOutput, error) {
	c, err := s.existingCollection(in.CollectionName)
	if err != nil {
		return nil, countOutput{}, err
	}
	n, err := c.Count(ctx)
	return nil, countOutput{Count: n}, err
}

func (s *server) chromaPeek(ctx context.Context, _ *mcp.CallToolRequest, in peekInput) (*mcp.CallToolResult, chromaGetOutput, error) {
	c, err := s.existingCollection(in.CollectionName)
	if err != nil {
		return nil, chromaGetOutput{}, err
	}
	limit := in.Limit
	if limit == 0 {
		limit = 5
	}
	if limit < 1 || limit > s.o.MaxGetLimit {
		return nil, chromaGetOutput{}, fmt.Errorf("%w: limit %d not in [1, %d] (MaxGetLimit)", ErrInvalidInput, in.Limit, s.o.MaxGetLimit)
	}
	return s.getOutput(ctx, c, memory.FindOptions{Limit: limit}, nil)
}

func (s *server) chromaInfo(ctx context.Context, _ *mcp.CallToolRequest, in collectionNameInput) (*mcp.CallToolResult, collectionInfoOutput, error) {
	c, err := s.existingCollection(in.CollectionName)
	if err != nil {
		return nil, collectionInfoOutput{}, err
	}
	n, err := c.Count(ctx)
	if err != nil {
		return nil, collectionInfoOutput{}, err
	}
	md, err := c.Metadata(ctx)
	if err != nil {
		return nil, collectionInfoOutput{}, err
	}
	_, sample, err := s.getOutput(ctx, c, memory.FindOptions{Limit: 3}, nil)
	return nil, collectionInfoOutput{Name: c.Name(), Count: n, Analyzer: c.Analyzer(), Metadata: md, SampleDocuments: sample}, err
}

// getOutput finds the documents o selects and shapes them as Chroma's get does.
func (s *server) getOutput(ctx context.Context, c *memory.Collection, o memory.FindOptions, include []string) (*mcp.CallToolResult, chromaGetOutput, error) {
	set, include, err := includes(include, []string{includeDocuments, includeMetadatas}, includeDocuments, includeMetadatas, includeEmbeddings)
	if err != nil {
		return nil, chromaGetOutput{}, err
	}
	docs, err := c.Find(ctx, o)
	if err != nil {
		return nil, chromaGetOutput{}, err
	}
	out := chromaGetOutput{IDs: make([]string, len(docs)), Include: include}
	if set[includeDocuments] {
		out.Documents = make([]string, len(docs))
	}
	if set[includeMetadatas] {
		out.Metadatas = make([]map[string]any, len(docs))
	}
	if set[includeEmbeddings] {
		out.Embeddings = make([][]float32, len(docs))
	}
	for i, d := range docs {
		out.IDs[i] = d.ID
		if out.Documents != nil {
			out.Documents[i] = d.Text
		}
		if out.Metadatas != nil {
			out.Metadatas[i] = metadataOf(d.Metadata)
		}
		if out.Embeddings != nil {
			if out.Embeddings[i], err = s.embedding(ctx, c, d.ID); err != nil {
				return nil, chromaGetOutput{}, err
			}
		}
	}
	return nil, out, nil
}

// metadataOf is md, or an empty object for a document without metadata.
func metadataOf(md map[string]any) map[string]any {
	if md == nil {
		return map[string]any{}
	}
	return md
}

// embedding is the stored vector of document id (an empty list when it has none or is
// stored in several chunks, each with its own).
func (s *server) embedding(ctx context.Context, c *memory.Collection, id string) ([]float32, error) {
	d, err := c.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if d.Embedding == nil {
		return []float32{}, nil
	}
	return d.Embedding, nil
}

func (s *server) chromaGet(ctx context.Context, _ *mcp.CallToolRequest, in getDocumentsInput) (*mcp.CallToolResult, chromaGetOutput, error) {
	c, err := s.existingCollection(in.CollectionName)
	if err != nil {
		return nil, chromaGetOutput{}, err
	}
	if err := s.checkIDs(in.IDs, s.o.MaxGetIDs, "MaxGetIDs"); err != nil {
		return nil, chromaGetOutput{}, err
	}
	if in.Limit < 0 || in.Offset < 0 {
		return nil, chromaGetOutput{}, fmt.Errorf("%w: limit %d, offset %d: want >= 0", ErrInvalidInput, in.Limit, in.Offset)
	}
	if in.Limit > s.o.MaxGetLimit {
		return nil, chromaGetOutput{}, fmt.Errorf("%w: limit %d, at most %d (MaxGetLimit)", ErrTooLarge, in.Limit, s.o.MaxGetLimit)
	}
	if in.IDs == nil && in.Offset > 0 {
		// An offset past the end answers at once, without a scan of the collection.
		if n, err := c.Count(ctx); err != nil {
			return nil, chromaGetOutput{}, err
		} else if in.Offset >= n {
			in.IDs = []string{}
		}
	}
	o := memory.FindOptions{IDs: in.IDs, Where: in.Where, WhereDocument: in.WhereDocument, Offset: in.Offset, Limit: in.Limit}
	if o.Limit == 0 { // at most MaxGetLimit; one more tells that there are more
		o.Limit = s.o.MaxGetLimit + 1
	}
	res, out, err := s.getOutput(ctx, c, o, in.Include)
	if err == nil && in.Limit == 0 && len(out.IDs) > s.o.MaxGetLimit {
		return nil, chromaGetOutput{}, fmt.Errorf("%w: more than %d documents match (MaxGetLimit): pass limit and offset to read them in pages", ErrTooLarge, s.o.MaxGetLimit)
	}
	return res, out, err
}

func (s *server) chromaAdd(ctx context.Context, _ *mcp.CallToolRequest, in addDocumentsInput) (*mcp.CallToolResult, addDocumentsOutput, error) {
	if in.CollectionName == "" {
		return nil, addDocumentsOutput{}, fmt.Errorf("%w: collection_name is empty", ErrInvalidInput)
	}
	n := len(in.Documents)
	switch {
	case n == 0:
		return nil, addDocumentsOutput{}, fmt.Errorf("%w: no documents", ErrInvalidInput)
	case n > s.o.MaxAddDocs:
		return nil, addDocumentsOutput{}, fmt.Errorf("%w: %d documents, at most %d per call (MaxAddDocs)", ErrTooLarge, n, s.o.MaxAddDocs)
	case len(in.IDs) != n:
		return nil, addDocumentsOutput{}, fmt.Errorf("%w: %d ids for %d documents (one id per document)", ErrInvalidInput, len(in.IDs), n)
	case in.Metadatas != nil && len(in.Metadatas) != n:
		return nil, addDocumentsOutput{}, fmt.Errorf("%w: %d metadatas for %d documents", ErrInvalidInput, len(in.Metadatas), n)
	}
	docs := make([]memory.Document, n)
	for i := range docs {
		docs[i] = memory.Document{ID: in.IDs[i], Text: in.Documents[i]}
		if in.Metadatas != nil {
			docs[i].Metadata = in.Metadatas[i]
		}
	}
	c := s.m.Collection(in.CollectionName)
	if err := c.Add(ctx, docs...); err != nil {
		return nil, addDocumentsOutput{}, err
	}
	return nil, addDocumentsOutput{Collection: c.Name(), Added: n}, nil
}

func (s *server) chromaUpdate(ctx context.Context, _ *mcp.CallToolRequest, in updateDocumentsInput) (*mcp.CallToolResult, updateDocumentsOutput, error) {
	c, err := s.existingCollection(in.CollectionName)
	if err != nil {
		return nil, updateDocumentsOutput{}, err
	}
	n := len(in.IDs)
	if n == 0 {
		return nil, updateDocumentsOutput{}, fmt.Errorf("%w: no ids", ErrInvalidInput)
	}
	if n > s.o.MaxAddDocs {
		return nil, updateDocumentsOutput{}, fmt.Errorf("%w: %d documents, at most %d per call (MaxAddDocs)", ErrTooLarge, n, s.o.MaxAddDocs)
	}
	for _, f := range []struct {
		name string
		n    int
		set  bool
	}{{"documents", len(in.Documents), in.Documents != nil}, {"metadatas", len(in.Metadatas), in.Metadatas != nil}, {"embeddings", len(in.Embeddings), in.Embeddings != nil}} {
		if f.set && f.n != n {
			return nil, updateDocumentsOutput{}, fmt.Errorf("%w: %d %s for %d ids", ErrInvalidInput, f.n, f.name, n)
		}
	}
	if in.Documents == nil && in.Metadatas == nil && in.Embeddings == nil {
		return nil, updateDocumentsOutput{}, fmt.Errorf("%w: nothing to update (give documents, metadatas or embeddings)", ErrInvalidInput)
	}
	docs := make([]memory.Document, n)
	for i, id := range in.IDs {
		d, err := c.Get(ctx, id)
		if err != nil {
			return nil, updateDocumentsOutput{}, err
		}
		if in.Documents != nil {
			d.Text = in.Documents[i]
		}
		if in.Metadatas != nil {
			md := make(map[string]any, len(d.Metadata)+len(in.Metadatas[i]))
			for k, v := range d.Metadata {
				md[k] = v
			}
			for k, v := range in.Metadatas[i] {
				md[k] = v
			}
			d.Metadata = md
		}
		if in.Embeddings != nil {
			d.Embedding = in.Embeddings[i]
		} else if in.Documents != nil {
			d.Embedding = nil // the new text gets its own vector
		}
		d.Source = "" // kept in the metadata
		docs[i] = d
	}
	if err := c.Upsert(ctx, docs...); err != nil {
		return nil, updateDocumentsOutput{}, err
	}
	return nil, updateDocumentsOutput{Updated: n}, nil
}

func (s *server) chromaDeleteDocs(ctx context.Context, _ *mcp.CallToolRequest, in deleteDocumentsInput) (*mcp.CallToolResult, deleteDocumentsOutput, error) {
	c, err := s.existingCollection(in.CollectionName)
	if err != nil {
		return nil, deleteDocumentsOutput{}, err
	}
	if err := s.checkIDs(in.IDs, s.o.MaxDeleteIDs, "MaxDeleteIDs"); err != nil {
		return nil, deleteDocumentsOutput{}, err
	}
	if len(in.IDs) == 0 && len(in.Where) == 0 && len(in.WhereDocument) == 0 {
		return nil, deleteDocumentsOutput{}, fmt.Errorf("%w: give ids, where or where_document (chroma_delete_collection empties a collection)", ErrInvalidInput)
	}
	var ids []string
	if len(in.IDs) > 0 {
		ids = in.IDs
	}
	// One more than the cap tells that too many match; then nothing is deleted.
	docs, err := c.Find(ctx, memory.FindOptions{IDs: ids, Where: in.Where, WhereDocument: in.WhereDocument, Limit: s.o.MaxDeleteIDs + 1})
	if err != nil {
		return nil, deleteDocumentsOutput{}, err
	}
	if len(docs) > s.o.MaxDeleteIDs {
		return nil, deleteDocumentsOutput{}, fmt.Errorf("%w: more than %d documents match, at most %d per call (MaxDeleteIDs); nothing was deleted", ErrTooLarge, s.o.MaxDeleteIDs, s.o.MaxDeleteIDs)
	}
	out := deleteDocumentsOutput{IDs: make([]string, len(docs))}
	for i, d := range docs {
		out.IDs[i] = d.ID
	}
	if len(out.IDs) > 0 {
		if err := c.Delete(ctx, out.IDs...); err != nil {
			return nil, deleteDocumentsOutput{}, err
		}
	}
	out.Deleted = len(out.IDs)
	return nil, out, nil
}

func (s *server) chromaQuery(ctx context.Context, _ *mcp.CallToolRequest, in queryDocumentsInput) (*mcp.CallToolResult, queryDocumentsOutput, error) {
	c, err := s.existingCollection(in.CollectionName)
	if err != nil {
		return nil, queryDocumentsOutput{}, err
	}
	texts, err := s.queryTexts(in)
	if err != nil {
		return nil, queryDocumentsOutput{}, err
	}
	k := in.NResults
	if k == 0 {
		k = s.o.DefaultTopK
	}
	if k < 1 || k > s.o.MaxTopK {
		return nil, queryDocumentsOutput{}, fmt.Errorf("%w: n_results %d not in [1, %d]", ErrInvalidInput, in.NResults, s.o.MaxTopK)
	}
	set, include, err := includes(in.Include, []string{includeDocuments, includeMetadatas, includeDistances},
		includeDocuments, includeMetadatas, includeDistances, includeEmbeddings)
	if err != nil {
		return nil, queryDocumentsOutput{}, err
	}
	opts := []memory.SearchOption{memory.TopK(k)}
	if len(in.Where) > 0 {
		opts = append(opts, memory.WithWhere(in.Where))
	}
	if len(in.WhereDocument) > 0 {
		opts = append(opts, memory.WithWhereDocument(in.WhereDocument))
	}
	if in.QueryEmbeddings != nil {
		opts = append(opts, memory.WithQueryVectors(in.QueryEmbeddings))
	}
	lists, err := c.SearchBatch(ctx, texts, opts...)
	if err != nil {
		return nil, queryDocumentsOutput{}, err
	}
	nq := len(lists)
	out := queryDocumentsOutput{IDs: make([][]string, nq), Scores: make([][]float64, nq), Include: include}
	if set[includeDocuments] {
		out.Documents = make([][]string, nq)
	}
	if set[includeMetadatas] {
		out.Metadatas = make([][]map[string]any, nq)
	}
	if set[includeDistances] {
		out.Distances = make([][]float64, nq)
	}
	if set[includeEmbeddings] {
		out.Embeddings = make([][][]float32, nq)
	}
	for i, res := range lists {
		out.IDs[i] = make([]string, len(res))
		out.Scores[i] = make([]float64, len(res))
		if out.Documents != nil {
			out.Documents[i] = make([]string, len(res))
		}
		if out.Metadatas != nil {
			out.Metadatas[i] = make([]map[string]any, len(res))
		}
		if out.Distances != nil {
			out.Distances[i] = make([]float64, len(res))
		}
		if out.Embeddings != nil {
			out.Embeddings[i] = make([][]float32, len(res))
		}
		for j, r := range res {
			out.IDs[i][j], out.Scores[i][j] = r.ID, r.Score
			if out.Documents != nil {
				out.Documents[i][j] = r.Text
			}
			if out.Metadatas != nil {
				out.Metadatas[i][j] = metadataOf(r.Metadata)
			}
			if out.Distances != nil {
				out.Distances[i][j] = chromaDistance(r)
			}
			if out.Embeddings != nil {
				if out.Embeddings[i][j], err = s.embedding(ctx, c, r.ID); err != nil {
					return nil, queryDocumentsOutput{}, err
				}
			}
		}
	}
	return nil, out, nil
}

// queryTexts are the queries of a chroma_query_documents call, checked: query_texts,
// query_embeddings or both (one vector per text), at most MaxQueries; each text within
// MaxQueryBytes, and not blank unless its vector is given. With query_embeddings alone the
// texts are empty.
func (s *server) queryTexts(in queryDocumentsInput) ([]string, error) {
	texts, vecs := in.QueryTexts, in.QueryEmbeddings
	n := max(len(texts), len(vecs))
	switch {
	case n == 0:
		return nil, fmt.Errorf("%w: query_texts and query_embeddings are empty (give either, or both)", ErrInvalidInput)
	case n > s.o.MaxQueries:
		return nil, fmt.Errorf("%w: %d queries, at most %d per call (MaxQueries)", ErrTooLarge, n, s.o.MaxQueries)
	case len(texts) > 0 && len(vecs) > 0 && len(texts) != len(vecs):
		return nil, fmt.Errorf("%w: %d query_embeddings for %d query_texts (one per text)", ErrInvalidInput, len(vecs), len(texts))
	}
	if len(texts) == 0 {
		return make([]string, n), nil
	}
	for i, q := range texts {
		if len(vecs) > 0 && len(q) <= s.o.MaxQueryBytes {
			continue // searched by its vector: its text may be blank
		}
		if err := s.checkQuery(q); err != nil {
			return nil, fmt.Errorf("query_texts[%d]: %w", i, err)
		}
	}
	return texts, nil
}

// chromaDistance is a result's distance as Chroma reports it in its default space, cosine:
// 1 - the cosine similarity of the query's embedding and the document's stored vector
// (memory.Explanation.Cosine: dense recall's, or computed for a result dense recall did
// not return), so 0 for an exact match and up to 2. A search that did not embed the query
// (a store without an embedder, or whose embedder is not loaded: BM25 alone) has no
// cosine; its distance is then 1 - Relevance, on the same 0 (exact) to 1 (unrelated)
// scale.
func chromaDistance(r memory.Result) float64 {
	if c := r.Explain.Cosine; c != nil {
		return 1 - *c
	}
	return 1 - r.Relevance
}
