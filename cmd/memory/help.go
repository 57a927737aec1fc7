package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// helpText is what `memory COMMAND -h` prints besides the flags.
type helpText struct {
	usage   string // synopsis lines, each "memory COMMAND ...", without "usage: "
	help    string // behaviour and input formats (the command's Long)
	example string // example command lines, indented by two spaces
}

// readStoreHelp explains how commands treat stores.
const readStoreHelp = `Stores: --store DIR is a store directory. Only index creates one (and a collection on
its first write); search, get, count, collections, eval --store and serve fail with exit
status 1, naming the path or the collection, when it does not exist.`

// storeHelp is readStoreHelp and how the commands that embed treat embedders.
const storeHelp = readStoreHelp + ` A store remembers its
embedder: --embedder is needed only when creating a store or with --reembed; later commands
reload the recorded model (by name from $MEMORY_MODELS or the model cache, see memory models)
or, when it cannot be found, say which model is needed (BM25 searches still work).`

// commandHelp holds the help of each command and subcommand ("models pull"), by its path
// under memory; newCommand fails for a command without one.
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
		example: `  memory index --store ./s docs/ corpus.jsonl
  memory index --store ./s --embedder all-MiniLM-L6-v2 --sync docs/
  memory index --store ./s --collection code --code ./myproject
  memory index --store ./s --embedder-id e5-base-v2 --vectors e5_Flat.index corpus.jsonl
  memory index --store ./s --compat search-r1 --embedder e5-base-v2 wiki-18.jsonl`,
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
source.

Reranking: --reranker M (a cross-encoder) reranks the top --rerank N fused candidates, and
only when --rerank N is given; --llm-reranker URL reranks them with a chat model behind an
OpenAI-compatible endpoint, the top 20 unless --rerank N says otherwise. Its API key is read
from the environment variable that --llm-api-key-env names (default OPENAI_API_KEY), never
from a flag.

` + storeHelp,
		example: `  memory search --store ./s "how do I deploy"
  memory search --store ./s --json -k 5 --where '{"year":{"$gte":2020}}' vector databases
  memory search --store ./s --mode bm25 --cascade "gold,kb,docs" --cascade-threshold 8 "reset my password"
  memory search --store ./s --reranker ms-marco-MiniLM-L-6-v2 --rerank 50 "how do I deploy"
  memory search --store ./s --llm-reranker http://localhost:11434/v1 --llm-model qwen3 "how do I deploy"
  memory search --store ./s -- -deploy`,
	},
	"get": {
		usage: `memory get --store DIR [--collection C] [--json] ID...`,
		help: `Prints the stored documents with the given ids (title, source, metadata and the whole
text; with --json one JSON document per line). A missing id is reported and makes the exit
status 1.

` + readStoreHelp,
		example: `  memory get --store ./s d1 d2
  memory get --store ./s --collection notes --json --vectors d1`,
	},
	"delete": {
		usage: `memory delete --store DIR [--collection C] ID...
memory delete --store DIR [--collection C] --where JSON
memory delete --store DIR [--collection C] --source PATH`,
		help: `Deletes documents (with all their chunks) by id, by a metadata filter (the JSON of
search --where), or by source (a path given to index; relative paths are made absolute).
Prints how many were deleted. Never creates a store or a collection.`,
		example: `  memory delete --store ./s d1 d2
  memory delete --store ./s --where '{"year":{"$lt":2000}}'
  memory delete --store ./s --collection docs --source docs/old.md`,
	},
	"count": {
		usage: `memory count --store DIR [--collection C]`,
		help: `Prints the number of documents in a collection (default: the default collection).

` + readStoreHelp,
		example: `  memory count --store ./s
  memory count --store ./s --collection notes`,
	},
	"compact": {
		usage: `memory compact --store DIR [--collection C | --all]`,
		help: `Merges the BM25 index of a collection (or, with --all, of every collection) into one
segment and writes its block metadata. A bulk load leaves tens of segments, and every
query pays for each; memory index compacts by itself after a run that stored 10,000
documents or more (--compact=false skips it), so this is for stores indexed otherwise
(Add from a program, many small index runs). It takes the store's writer lock for the
merge (about a fifth of the time the index took to build); nothing changes in what
searches answer.`,
		example: `  memory compact --store ./s
  memory compact --store ./s --all`,
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
		example: `  memory collections --store ./s
  memory collections --store ./s --create gold --analyzer de --metadata '{"kind":"gold"}'
  memory collections --store ./s --set-analyzer kb en_lucene
  memory collections --store ./s --rename notes archive`,
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
		example: `  memory eval --data beir/scifact --mode bm25 --run-out run.trec
  memory eval --data beir/scifact --mode hybrid --embedder all-MiniLM-L6-v2 --reranker ms-marco-MiniLM-L-6-v2
  memory eval --data beir/scifact --store ./scifact --mode dense
  memory eval --qa nq_test.jsonl --generator http://127.0.0.1:8001/v1 --model M --store ./s --trajectories t.jsonl`,
	},
	"serve": {
		usage: `memory serve --store DIR [--collection C] [--retrieve ADDR] [--compat search-r1] [--mcp | --mcp-http ADDR [--token T]] [--ui ADDR [--ui-report FILE]...]`,
		help: `Serves an existing store: Search-R1's POST /retrieve ({"queries": ["..."], "topk": 3,
"return_scores": true}) and GET /health over HTTP, and/or MCP (memory_search, memory_add,
memory_delete, memory_get, sop_match) over stdio or streamable HTTP. /retrieve searches
hybrid by default (RRF scores); --compat search-r1 answers as the original Search-R1 servers
(one retriever's raw scores, topk 0 = --topk, BM25 title/text/contents, and with --reranker
the retrieve-and-rerank request and the rerank server's strings and raw logits). --ui serves
a read-only web page: collections and documents, a search box showing each result's BM25,
dense, fusion and rerank figures, and evaluation reports (memory eval --report-out) as charts.

` + storeHelp,
		example: `  memory serve --store ./s --retrieve 127.0.0.1:8000
  memory serve --store ./s --ui 127.0.0.1:8090 --ui-report scifact.json
  memory serve --store ./s --retrieve 127.0.0.1:8000 --compat search-r1
  memory serve --store ./s --mcp
  memory serve --store ./s --mcp-http 127.0.0.1:8080 --token "$TOKEN" --read-only`,
	},
	"runtime": {
		usage: `memory runtime pull [--url URL] [--dir DIR] [--force]
memory runtime path`,
		help: runtimeHelp,
		example: `  memory runtime pull
  memory runtime path`,
	},
	"runtime pull": {
		usage: `memory runtime pull [--url URL] [--dir DIR] [--force]`,
		help:  runtimePullHelp,
		example: `  memory runtime pull
  memory runtime pull --dir /opt/onnxruntime --force`,
	},
	"runtime path": {
		usage:   `memory runtime path`,
		help:    runtimePathHelp,
		example: `  memory runtime path`,
	},
	"models": {
		usage: `memory models list
memory models pull [--base-url URL] [--cache DIR] [--retries N] NAME...
memory models path NAME
memory models info [--model-preset P] [--query-max-tokens N] [--passage-max-tokens N] NAME_OR_DIR
memory models info --store DIR`,
		help: `Lists the pretrained models memory knows (list), downloads them into the model cache
(pull), prints the folder of a ready one (path), or shows how the ONNX embedder handles text
with one (info).`,
		example: `  memory models list
  memory models pull all-MiniLM-L6-v2
  memory models path all-MiniLM-L6-v2
  memory models info e5-base-v2`,
	},
	"models list": {
		usage: `memory models list`,
		help: `Prints every model memory knows: name, kind (embedder, reranker...), dimension, size,
repository, and its local folder ("not pulled" when it is not here; "damaged" when a file
fails its pinned checksum).`,
		example: `  memory models list`,
	},
	"models pull": {
		usage: `memory models pull [--base-url URL] [--cache DIR] [--retries N] NAME...`,
		help: `Downloads each model NAME into the cache ($MEMORY_CACHE/models, else the user cache
folder), verifying each file's pinned sha256; interrupted downloads resume. Prints the folder
of each model.`,
		example: `  memory models pull all-MiniLM-L6-v2 ms-marco-MiniLM-L-6-v2
  memory models pull --base-url https://hf-mirror.example --retries 10 e5-base-v2`,
	},
	"models path": {
		usage: `memory models path NAME`,
		help: `Prints the folder of the ready model NAME: $MEMORY_MODELS/NAME first, then the cache. A
model that is not downloaded is an error (exit status 1) saying how to pull it.`,
		example: `  memory models path all-MiniLM-L6-v2`,
	},
	"models info": {
		usage: `memory models info [--model-preset P] [--query-max-tokens N] [--passage-max-tokens N] NAME_OR_DIR
memory models info --store DIR`,
		help: `Shows how the ONNX embedder handles text with a model: its preset (chosen by the name as
Search-R1 does: e5, bge, or none), prefixes, pooling, normalisation and token caps, and what
the embedder's identity records; with --store, the embedder a store records and the settings
it is reloaded with.`,
		example: `  memory models info e5-base-v2
  memory models info --model-preset bge --query-max-tokens 64 ./my-model
  memory models info --store ./s`,
	},
	"sop": {
		usage: `memory sop match  --dir DIR [--json] [-n N] [--category C] [--strict] QUERY
memory sop list   --dir DIR [--json] [--category C] [--strict]
memory sop render --dir DIR [--query Q] [--strict] NAME`,
		help: `Procedural memory: standard operating procedures (SOPs), each a JSON or YAML file in a
folder, matched to a task by their triggers (match), listed (list), or rendered as the steps
an agent follows (render). Invalid procedure files are reported as warnings; the valid ones
are still used.`,
		example: `  memory sop match --dir examples/sop/procedures "my python script throws an error"
  memory sop list --dir examples/sop/procedures --category devops
  memory sop render --dir examples/sop/procedures debug_python_code`,
	},
	"sop match": {
		usage: `memory sop match --dir DIR [--json] [-n N] [--category C] [--strict] QUERY`,
		help: `Prints the procedures that apply to QUERY, best first (name, score, matched triggers; one
JSON object each with --json). When none applies it prints "no procedure matches QUERY" on
stderr, nothing on stdout, and exits with status 0.`,
		example: `  memory sop match --dir examples/sop/procedures "my python script throws an error"
  memory sop match --dir ./sops --json -n 1 deploy the service`,
	},
	"sop list": {
		usage: `memory sop list --dir DIR [--json] [--category C] [--strict]`,
		help: `Lists the procedures of DIR: name, category, priority and description (each procedure as
one JSON object with --json).`,
		example: `  memory sop list --dir examples/sop/procedures
  memory sop list --dir ./sops --category database --json`,
	},
	"sop render": {
		usage: `memory sop render --dir DIR [--query Q] [--strict] NAME`,
		help:  `Prints the procedure NAME as the steps an agent follows, with the task --query above them.`,
		example: `  memory sop render --dir examples/sop/procedures debug_python_code
  memory sop render --dir ./sops --query "ship v2" deploy_service`,
	},
	"version": {
		usage: `memory version
memory --version`,
		help: `Prints the version of memory (memory.Version; and the module version the go command
built when it is another, such as a pseudo-version), the Go version, and the ONNX Runtime
library that would be loaded.`,
		example: `  memory version
  memory --version`,
	},
	"chunk": {
		usage: `memory chunk [--json] [--budget N] [--language L] FILE...`,
		help: `Splits source files into chunks with tree-sitter (the language from the file extension
unless --language) and prints them, or one JSON chunk per line with --json.`,
		example: `  memory chunk main.go
  memory chunk --json --budget 500 --language python script.txt`,
	},
	"tokenize": {
		usage: `memory tokenize --model NAME_OR_DIR [--pair] TEXT...`,
		help: `Prints the WordPiece token ids of each TEXT with the model's tokenizer (tokenizer.json
or vocab.txt); --pair encodes two texts as a cross-encoder pair. A static (Model2Vec) model
folder (model.safetensors, or config.json with model_type "model2vec") gets the word
pieces alone, without [CLS]/[SEP], since the model never sees them.`,
		example: `  memory tokenize --model all-MiniLM-L6-v2 "Naïve café"
  memory tokenize --model ms-marco-MiniLM-L-6-v2 --pair --tokens $'what is BM25\tBM25 is a ranking function'
  memory tokenize --model ./my-model/tokenizer.json --max-length 32 "a long text"`,
	},
}

// helpWidth is the width the flags' descriptions are wrapped to.
const helpWidth = 100

// helpGroupKey is the flag annotation that files a flag under a group in the help (see
// grouped); a flag without one is listed under "Flags".
const helpGroupKey = "memory_help_group"

// Flag groups, in the order the help lists them after the command's own flags.
const (
	groupStore    = "Store flags"
	groupEmbedder = "Embedder flags"
	groupIndex    = "Dense index flags"
	groupQA       = "Question answering flags (with --qa)"
)

var groupOrder = []string{groupStore, groupEmbedder, groupIndex, groupQA}

// grouped runs add, which adds flags to fs, and files the flags it added under title in the
// help.
func grouped(fs *pflag.FlagSet, title string, add func()) {
	before := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) { before[f.Name] = true })
	add()
	fs.VisitAll(func(f *pflag.Flag) {
		if !before[f.Name] {
			_ = fs.SetAnnotation(f.Name, helpGroupKey, []string{title}) // f exists
		}
	})
}

// printHelp writes the help of c: synopsis, summary, description, subcommands, examples,
// flags (the command's own, then each group) and where flags may go.
func printHelp(w io.Writer, c *cobra.Command) {
	c.InitDefaultHelpFlag()
	fmt.Fprintf(w, "usage: %s\n", strings.Join(synopsis(c), "\n       "))
	if c.Short != "" {
		fmt.Fprintf(w, "\n%s.\n", sentence(c.Short))
	}
	if c.Long != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.Long))
	}
	if subs := availableCommands(c); len(subs) > 0 {
		fmt.Fprintln(w, "\nCommands:")
		for _, s := range subs {
			fmt.Fprintf(w, "  %-12s %s\n", s.Name(), s.Short)
		}
	}
	if c.Example != "" {
		fmt.Fprintf(w, "\nExamples:\n%s\n", strings.TrimRight(c.Example, "\n"))
	}
	for _, g := range flagGroups(c.Flags()) {
		fmt.Fprintf(w, "\n%s:\n%s", g.title, g.flags.FlagUsagesWrapped(helpWidth))
	}
	fmt.Fprintf(w, "\n%s\n", flagsAnywhereHelp)
	if subs := availableCommands(c); len(subs) > 0 {
		fmt.Fprintf(w, "\nRun '%s COMMAND --help' for the help of a command.\n", c.CommandPath())
	}
}

// synopsis is the usage lines of c: its commandHelp's, else cobra's use line.
func synopsis(c *cobra.Command) []string {
	if h, ok := commandHelp[strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ")]; ok && c.HasParent() {
		return strings.Split(strings.TrimSpace(h.usage), "\n")
	}
	return []string{c.UseLine()}
}

// availableCommands is the subcommands of c the help lists (not the hidden ones).
func availableCommands(c *cobra.Command) []*cobra.Command {
	var subs []*cobra.Command
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() || s.Name() == "help" {
			subs = append(subs, s)
		}
	}
	return subs
}

// flagGroup is the flags of fs the help lists under one title.
type flagGroup struct {
	title string
	flags *pflag.FlagSet
}

// flagGroups splits the flags of fs by their group (see grouped): the command's own first,
// then the groups in groupOrder.
func flagGroups(fs *pflag.FlagSet) []flagGroup {
	sets := map[string]*pflag.FlagSet{}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		title := "Flags"
		if g := f.Annotations[helpGroupKey]; len(g) > 0 {
			title = g[0]
		}
		if sets[title] == nil {
			sets[title] = pflag.NewFlagSet(title, pflag.ContinueOnError)
		}
		sets[title].AddFlag(f)
	})
	var out []flagGroup
	for _, title := range append([]string{"Flags"}, groupOrder...) {
		if sets[title] != nil {
			out = append(out, flagGroup{title, sets[title]})
			delete(sets, title)
		}
	}
	rest := make([]string, 0, len(sets))
	for title := range sets {
		rest = append(rest, title)
	}
	slices.Sort(rest)
	for _, title := range rest {
		out = append(out, flagGroup{title, sets[title]})
	}
	return out
}

// sentence is a summary as a sentence: its first letter upper-case, without a final period.
func sentence(s string) string {
	s = strings.TrimSuffix(s, ".")
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
