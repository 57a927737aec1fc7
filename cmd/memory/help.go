package main

// helpText is what `memory COMMAND -h` prints before the flags.
type helpText struct {
	usage string // synopsis lines, without "usage: "
	help  string // behaviour and input formats
}

// subcommandHelp lists the commands that take a subcommand word (and handle "help" as one).
var subcommandHelp = map[string]bool{"models": true, "sop": true, "runtime": true}

// storeHelp explains how read and write commands treat stores and embedders.
const storeHelp = `Stores: --store DIR is a store directory. Only index creates one (and a collection on
its first write); search, get, count, collections, eval --store and serve fail with exit
status 1, naming the path or the collection, when it does not exist. A store remembers its
embedder: --embedder is needed only when creating a store or with --reembed; later commands
reload the recorded model (by name from $MEMORY_MODELS or the model cache, see memory models)
or, when it cannot be found, say which model is needed (BM25 searches still work).`

// commandHelp holds the -h text of each command (commands without an entry print their
// flags only).
var commandHelp = map[string]helpText{
	"index": {
		usage: `memory index --store DIR [--collection C] [--sync] [--strict] [--embedder M] PATH...
memory index --store DIR [--collection C] --code DIR`,
		help: `PATH is a file or a folder (walked recursively; hidden folders skipped). Input formats:

  .txt, .md   one document per file: the first line is the title (leading "#" removed),
              the rest the text. id = the path as given; source = the absolute path.
  .jsonl      one JSON object per line, any of:
                {"id": "1", "title": "...", "text": "...", "metadata": {"year": 2020}, "source": "..."}
                {"_id": "1", "title": "...", "text": "..."}          (BEIR corpus.jsonl)
                {"id": "1", "contents": "\"Title\"\ntext"}           (Search-R1 corpus)
              metadata values are strings, numbers, booleans or lists of them. source defaults to the
              absolute path of the .jsonl file.
  code        a file in a language the tree-sitter chunker knows (.go, .py, .js, .ts, ...): one
              document per function, class, method or import block (ids PATH#L3-L9), as --code
              does; --auto-code=false skips them. Files under vendor/ or node_modules/ and over
              1 MiB are skipped.
  .html, .htm one document: the page's title and its visible text (scripts, styles and
              navigation dropped).
  .pdf        one document per page with text (id PATH#page=N, metadata page, pages, format);
              encrypted or damaged PDFs are skipped with the reason.

Every file or folder not read (hidden, binary, an unknown type, over a size cap, unreadable,
encrypted...) is counted in one line at the end, grouped by type and reason; -v (--verbose)
names each one.

Each document is checked on its own: a bad line (empty, invalid JSON, no id, no text, a
duplicate id within the run, a document the store rejects) is reported with its file and
line number and skipped; the others are stored. A line with invalid UTF-8 is stored with
U+FFFD in place of each invalid byte, and a warning names the file, its first such line
and how many there are. A summary ends the run. The exit status is 1 only when nothing was
stored, or with --strict when anything was skipped.

Re-indexing a path replaces what was indexed from it: its documents are stored in batches
of --batch (one transaction each), each replacing in place the stored document of its id,
wherever that one came from (an id may move from file to file); once every document is
stored, the stale documents of the re-indexed sources (ids their files no longer hold) are
removed, up to 10,000 a transaction. A kill or an error at any point leaves every id that
was stored or acknowledged, in its earlier or its new version: nothing is removed before
everything is stored. A failed run says how many documents it stored; running it again
finishes. A document the store rejects keeps its earlier version. --sync also deletes the
documents of sources under the given folders that no longer exist (or are no longer
indexed), 1,000 sources a transaction.

--code indexes a source tree chunked with tree-sitter (respects .gitignore).

` + storeHelp,
	},
	"search": {
		usage: `memory search --store DIR [--collection C] [--mode hybrid|bm25|dense] [--k N] [--where JSON] [--json] QUERY...
memory search --store DIR --cascade "gold,kb,docs" [--cascade-threshold F] [--dedupe-source] QUERY...
memory search --store DIR --llm-reranker URL --llm-model M [--llm-mode pointwise|listwise] [--rerank N] QUERY...`,
		help: `Searches an existing store and prints a table (rank, score, BM25 / dense / rerank
breakdown, id, title, and a snippet around the matched terms) or, with --json, one JSON
result per line. Control characters in stored text are shown escaped (\x1b) in the table.

--where takes a Chroma-style metadata filter: {"year": {"$gte": 2020}}, {"source": "a.md"},
operators $eq $ne $gt $gte $lt $lte $in $nin $contains $not_contains $and $or; a document
without the key matches $ne and $nin (as in Chroma) and no other operator. A list value
({"tags": ["go", "db"]}) matches when one of its values does ({"tags": "go"},
{"tags": {"$in": [...]}}); {"tags": {"$contains": ["go", "db"]}} wants all of them.
--where-document takes {"$contains": "text"}, {"$not_contains": "text"}, {"$regex": "RE2"}
or {"$not_regex": "RE2"} (Go regexp syntax, patterns up to 1,024 bytes), and $and/$or of them.

Without --mode, a store whose embedder cannot be loaded is searched with BM25 (with a
warning).

--cascade searches collections in order (a gold collection of curated answers first, then
the knowledge collections) and stops after the first whose best score reaches
--cascade-threshold; the results of every collection searched are merged best first, and
each names the collection that answered (the table's COLLECTION column; "collection" and
"cascade", the 1-based step, in --json). --dedupe-source keeps the best result of each
source. --llm-reranker reranks the top --rerank N (default 20) with a chat model behind an
OpenAI-compatible endpoint; its API key is read from the environment variable that
--llm-api-key-env names (default OPENAI_API_KEY), never from a flag.

` + storeHelp,
	},
	"get": {
		usage: `memory get --store DIR [--collection C] [--json] ID...`,
		help: `Prints the stored documents with the given ids (title, source, metadata and the whole
text; with --json one JSON document per line). A missing id is reported and makes the exit
status 1.

` + storeHelp,
	},
	"delete": {
		usage: `memory delete --store DIR [--collection C] ID...
memory delete --store DIR [--collection C] --where JSON
memory delete --store DIR [--collection C] --source PATH`,
		help: `Deletes documents (with all their chunks) by id, by a metadata filter (the JSON of
search --where), or by source (a path given to index; relative paths are made absolute).
Prints how many were deleted. Never creates a store or a collection.`,
	},
	"count": {
		usage: `memory count --store DIR [--collection C]`,
		help: `Prints the number of documents in a collection (default: the default collection).

` + storeHelp,
	},
	"collections": {
		usage: `memory collections --store DIR [--json]
memory collections --store DIR --create NAME [--analyzer X] [--metadata JSON]
memory collections --store DIR --set-metadata NAME JSON
memory collections --store DIR --set-analyzer NAME X
memory collections --store DIR --delete NAME
memory collections --store DIR --rename OLD NEW   (or --rename OLD --to NEW)`,
		help: `Lists the collections of a store with their document counts, BM25 analyzers and metadata
(a table, or with --json one {"name","count","analyzer","metadata"} object per line), creates
an empty collection (--create; an existing one is an error) with a BM25 analyzer and metadata,
replaces a collection's metadata (--set-metadata; {} clears it), changes a collection's BM25
analyzer (--set-analyzer: its BM25 index is rebuilt from the stored documents, which takes
a while on a large collection; searches wait meanwhile), deletes a collection with all its
documents (--delete; deleting the default collection empties it), or renames one with its
documents, metadata and indexes (--rename; the new name must not exist; the store of record
changes in one transaction, whatever the collection's size). One action per call.

Metadata is a JSON object with string keys and string, number or boolean values.`,
	},
	"eval": {
		usage: `memory eval --data DIR [--mode bm25|dense|hybrid] [--embedder M] [--reranker M] [--run-out FILE]
memory eval --data DIR --store DIR [...]
memory eval --qa FILE --generator URL [--model M] [--chat] (--store DIR | --data DIR) [--trajectories OUT]`,
		help: `Evaluates retrieval on a BEIR folder: DIR/corpus.jsonl ({"_id","title","text"} per line, or
Search-R1's {"id","contents"}), DIR/queries.jsonl ({"_id","text"}) and DIR/qrels/SPLIT.tsv
(query-id, corpus-id, score with a header line). Prints nDCG@10, Recall@100, MRR@10, index and
query timings.

Without --store the corpus is streamed (checked once, then added 512 documents at a time) into a
temporary store. --store DIR evaluates an existing store: a filled one reads only the queries
and qrels (the corpus is not opened), an empty one is filled from the corpus first; it never
creates one: build it with --keep DIR, or with memory index --store DIR DIR/corpus.jsonl.

--qa FILE evaluates question answering as Search-R1 reports it: every question of FILE (JSONL,
{"id","question","golden_answers":[...],"data_source"} as Search-R1 and FlashRAG write them) is
answered by the model at --generator (an OpenAI-compatible server such as vLLM) searching the
store in Search-R1's loop (--tags original: <information> passages; --topk 3, --max-turns 4),
all questions in lockstep with one batch search per turn. Prints exact match (EM), cover EM
(SubEM) and F1 after Search-R1's answer normalisation, overall and per data_source (default: the
file's name); --trajectories writes every episode as JSONL.`,
	},
	"serve": {
		usage: `memory serve --store DIR [--collection C] [--retrieve ADDR] [--mcp | --mcp-http ADDR]`,
		help: `Serves an existing store: Search-R1's POST /retrieve ({"queries": ["..."], "topk": 3,
"return_scores": true}) and GET /health over HTTP, and/or MCP (memory_search, memory_add,
memory_delete, memory_get, sop_match) over stdio or streamable HTTP. /retrieve searches
hybrid by default (RRF scores); --compat search-r1 answers as the original Search-R1 servers
(one retriever's raw scores, topk 0 = --topk, BM25 title/text/contents, and with --reranker
the retrieve-and-rerank request and the rerank server's strings and raw logits).

` + storeHelp,
	},
	"runtime": {
		usage: `memory runtime pull [--url URL] [--dir DIR] [--force]
memory runtime path`,
		help: runtimeHelp,
	},
	"version": {
		usage: `memory version
memory --version`,
		help: `Prints the version of memory (memory.Version; and the module version the go command
built when it is another, such as a pseudo-version), the Go version, and the ONNX Runtime
library that would be loaded.`,
	},
	"chunk": {
		usage: `memory chunk [--json] [--budget N] [--language L] FILE...`,
		help: `Splits source files into chunks with tree-sitter (the language from the file extension
unless --language) and prints them, or one JSON chunk per line with --json.`,
	},
	"tokenize": {
		usage: `memory tokenize --model NAME_OR_DIR [--pair] TEXT...`,
		help: `Prints the WordPiece token ids of each TEXT with the model's tokenizer (tokenizer.json
or vocab.txt); --pair encodes two texts as a cross-encoder pair. A static (Model2Vec) model
folder (model.safetensors, or config.json with model_type "model2vec") gets the word
pieces alone, without [CLS]/[SEP], since the model never sees them.`,
	},
}
