package memory

import (
	"errors"

	"github.com/agentmem/memory/internal/bm25"
	"github.com/agentmem/memory/internal/docfilter"
	"github.com/agentmem/memory/internal/errkind"
	"github.com/agentmem/memory/internal/store"
)

// Errors about the store as a whole. Test with errors.Is; the returned errors wrap these
// with the details (the path, the id, the operator) that name what is wrong.
var (
	// ErrNotAStore: the directory holds files but no memory manifest.
	ErrNotAStore = errors.New("memory: directory is not a memory store")
	// ErrFormatVersion: the store was written by a newer format this build cannot read.
	ErrFormatVersion = errors.New("memory: unsupported store format version")
	// ErrCorrupt: the store of record failed a consistency check.
	ErrCorrupt = store.ErrCorrupt
	// ErrClosed: the Memory was closed.
	ErrClosed = errors.New("memory: store is closed")
	// ErrLocked: another process, or another Open in this one, holds the store open.
	ErrLocked = store.ErrLocked
	// ErrEmbedderMismatch: the store's vectors come from another embedder (id or dimension)
	// than the one configured; open with WithReEmbed to re-embed.
	ErrEmbedderMismatch = errors.New("memory: embedder does not match the store")
	// ErrIndexMismatch: the dense index configured (WithIndex: backend, FAISS factory,
	// metric, build parameters) differs from the one the store's manifest records. The
	// error names both; leave the configuration unset to use the recorded one, or open
	// with WithIndexRebuild to rebuild the index with the new one.
	ErrIndexMismatch = errors.New("memory: dense index configuration does not match the store")
	// ErrVectorPrecision: the vector precision configured (WithVectorPrecision) is not the
	// one the store's vectors are kept in, or is not a known precision.
	ErrVectorPrecision = errors.New("memory: vector precision does not match the store")
	// ErrUnknownAnalyzer: an analyzer name (WithAnalyzer, WithCollectionAnalyzer) that this
	// build does not have; the error names it and the known ones ([Analyzers]). It is
	// the BM25 engine's own error.
	ErrUnknownAnalyzer = bm25.ErrUnknownAnalyzer
	// ErrAnalyzerMismatch: the BM25 analyzer asked for differs from the one the manifest
	// records (for the store, WithAnalyzer; for a collection, CreateCollection with
	// WithCollectionAnalyzer). The error names both; SetCollectionAnalyzer changes a
	// collection's and rebuilds its index.
	ErrAnalyzerMismatch = errors.New("memory: analyzer does not match the one recorded")
	// ErrNoEmbedder: the operation needs an embedder and none is configured.
	ErrNoEmbedder = errors.New("memory: no embedder configured")
	// ErrStoreNotFound: OpenExisting was given a directory that is missing, empty, or holds
	// no store database.
	ErrStoreNotFound = errors.New("memory: no store in directory")
	// ErrEmbedderNeeded: the store's vectors were made by an embedder (its id and dimension
	// are in the error) that is not configured and could not be resolved, and the operation
	// (a hybrid or dense search, a write) needs it. It also matches ErrNoEmbedder.
	ErrEmbedderNeeded = errors.New("memory: the store's embedder is needed")
	// ErrCollectionNotFound: a named collection does not exist (GetCollection, a search of
	// it or InCollections naming it, DeleteCollection, DeleteWhere).
	ErrCollectionNotFound = store.ErrCollectionNotFound
)

// Errors about documents. Nothing is written when an Add or Upsert returns one of them.
var (
	// ErrNotFound: no document has that id.
	ErrNotFound = errors.New("memory: document not found")
	// ErrEmptyID: a document has an empty id.
	ErrEmptyID = errors.New("memory: empty document id")
	// ErrDuplicateID: Add was given an id twice, or an id that is already stored.
	ErrDuplicateID = errors.New("memory: duplicate document id")
	// ErrEmptyText: a document has neither title nor text.
	ErrEmptyText = errors.New("memory: empty document text")
	// ErrInvalidUTF8: an id, title, text or metadata string is not valid UTF-8.
	ErrInvalidUTF8 = errors.New("memory: invalid UTF-8")
	// ErrTooLarge: a document exceeds Options.MaxDocumentBytes.
	ErrTooLarge = errors.New("memory: document too large")
	// ErrInvalidMetadata: a metadata value is not a string, number or bool (or, on a
	// document, a list of them), or a key is empty.
	ErrInvalidMetadata = errors.New("memory: invalid metadata")
	// ErrBadVector: a precomputed embedding has the wrong length or a NaN/Inf.
	ErrBadVector = errors.New("memory: invalid embedding")
)

// Errors about queries.
var (
	// ErrInvalidFilter: a Where or WhereDocument filter is malformed (unknown operator,
	// wrong operand type).
	ErrInvalidFilter = docfilter.ErrInvalid
	// ErrFilterTooLarge: a Where or WhereDocument filter is over one of the caps
	// MaxFilterDepth, MaxFilterInItems, 1,024 conditions or 4 MiB; the error
	// names the cap and the value. It also matches ErrInvalidFilter.
	ErrFilterTooLarge = docfilter.ErrTooLarge
	// ErrInvalidOption: a search or open option is out of range.
	ErrInvalidOption = errors.New("memory: invalid option")
	// ErrInvalidCollection: a collection name is not allowed. A name is 1 to 200 bytes of
	// valid UTF-8 without control characters, other than "." and ".."; a new collection's
	// name must also take at most 239 bytes once escaped for a directory name
	// (url.PathEscape), which its indexes are stored under. The error says which rule the
	// name breaks and shows at most its first 64 bytes (with its length when longer).
	ErrInvalidCollection = errors.New("memory: invalid collection name")
	// ErrQueryTooLarge: a query is over Options.MaxQueryBytes, or has more distinct terms
	// than Options.MaxQueryTerms, or a batch has more than 65,536 queries.
	ErrQueryTooLarge = errors.New("memory: query too large")
	// ErrQueryVector: a query vector given to a search (WithQueryVector, WithQueryVectors)
	// cannot be searched with: it is empty, has another length than the store's vectors
	// (the error names both), holds NaN or ±Inf (the error names the position), has norm
	// 0, was made by another embedder than the store's (WithQueryVectorEmbedder; the error
	// also matches ErrEmbedderMismatch and names both), or was given to a search that does
	// not search by vector (a BM25 search); or a batch's vectors are not one per query.
	// It also matches ErrInvalidOption.
	ErrQueryVector = errkind.New("memory: invalid query vector", ErrInvalidOption)
)

// Errors about backups, exports and read-only opens.
var (
	// ErrBadBackup: a backup archive is damaged, truncated, of an unknown format, or not a
	// backup at all. Restore leaves nothing in place when it sees one.
	ErrBadBackup = errors.New("memory: not a valid backup archive")
	// ErrRestoreTarget: Restore was given a directory that exists and is not empty.
	ErrRestoreTarget = errors.New("memory: restore target is not empty")
	// ErrBadExport: an import's input is not a memory export (no header line before the
	// documents, an unreadable line), or is truncated (a collection without its end line, or
	// whose end line counts other documents than were read). What was read before the damage
	// is stored.
	ErrBadExport = errors.New("memory: not a valid export")
	// ErrReadOnly: a write (Add, Upsert, Delete, DeleteWhere, Replace, BeginReplace,
	// CreateCollection, DeleteCollection, SaveSOPs) on a store opened with ReadOnly.
	ErrReadOnly = errors.New("memory: store is opened read-only")
	// ErrWriterGone: a store opened read-only while another process had it open for writing
	// reads through that writer (see ReadOnly), and the writer closed the store or exited. Open
	// the store again: it then opens directly, or through the next writer.
	ErrWriterGone = errors.New("memory: the writer this read-only store reads through has gone")
)

// Errors about collections.
var (
	// ErrCollectionExists: RenameCollection was asked for a name another collection has.
	ErrCollectionExists = store.ErrCollectionExists
	// ErrTooManyCollections: creating a collection would pass Options.MaxCollections.
	ErrTooManyCollections = store.ErrTooManyCollections
)

// Errors about writes and replacements.
var (
	// ErrReplacementDone: a Replacement was used after its Commit succeeded.
	ErrReplacementDone = errors.New("memory: replacement already committed")
	// ErrIndexUpdate: a write (Add, Upsert, Replace) is stored durably in the store of
	// record, but updating a derived index after it failed (a full disk, say); the index is
	// caught up or rebuilt from the store of record when the collection is next opened.
	// The write need not be repeated.
	ErrIndexUpdate = errors.New("memory: documents stored, but an index update failed (it is caught up or rebuilt on reopen)")
)

// Errors about features a store lacks.
var (
	// ErrWriterUnsupported: a read-only store reads through a writer (see ReadOnly) of an
	// older version, which does not serve the operation asked for (Backup or Export). Run it
	// in the writer's process, or once the writer has closed the store.
	ErrWriterUnsupported = errors.New("memory: the writer this read-only store reads through does not serve this operation (an older version)")
	// ErrNoReranker: a search asked to rerank and the store has no reranker.
	ErrNoReranker = errors.New("memory: no reranker configured")
	// ErrNotSupported: the store's backend (a Weaviate cluster: Open with a weaviate://
	// address) cannot do the operation or honour the option the error names.
	ErrNotSupported = errors.New("memory: not supported by this store's backend")
)
