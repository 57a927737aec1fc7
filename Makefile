# memory — build, demo and test. `make demo` and `make test` work on a fresh machine:
# they install what they need into .deps/ (idempotent) and run from there.
SHELL  := /bin/bash
GO     ?= go
ROOT   := $(CURDIR)
DEPS   := $(ROOT)/.deps

# Native libraries fetched by scripts/deps.sh: ONNX Runtime (npm onnxruntime-node@1.30.0) and
# the FAISS C API (built from Debian's faiss source package), both under .deps/; and, when node
# is installed, the MCP Node SDK the MCP interoperability test drives (scripts/deps-node.sh).
export MEMORY_ORT_LIB ?= $(DEPS)/onnxruntime/libonnxruntime.so.1
export CGO_LDFLAGS    := -L$(DEPS)/faiss/lib $(CGO_LDFLAGS)
# Model fixtures (tokenizers, tiny ONNX graphs, goldens) live in ../shared/models beside the
# clone; when they are there, tests that need them must not skip.
export MEMORY_MODELS  ?= $(abspath $(ROOT)/../shared/models)
export MEMORY_REQUIRE_FIXTURES ?= $(if $(wildcard $(MEMORY_MODELS)/golden),1,)

# Framework adapters, each its own Go module under adapters/ (so the core module does not
# depend on the frameworks); `vet` and `test` run in each with the same environment. The root's
# ./... does not descend into them (a folder with its own go.mod is another module). Each
# adapter's go.mod requires the core's release; the go.work beside it builds it against the
# core of this checkout (see CONTRIBUTING.md), which `cd adapters/NAME && go ...` picks up.
ADAPTERS := langchaingo eino genkit

.PHONY: all build deps demo test test-short test-adapters test-weaviate vet vet-adapters bench eval-scifact clean

all: build

deps:
	@bash scripts/deps.sh
	@bash scripts/deps-node.sh
	@if [ -f scripts/deps-chromium.sh ]; then bash scripts/deps-chromium.sh; fi
	@bash scripts/weaviate.sh >/dev/null

build:
	$(GO) build ./...

demo:
	$(GO) run ./examples/quickstart

vet: deps vet-adapters
	$(GO) vet ./...
	$(GO) vet -tags faiss ./...

vet-adapters: deps
	@set -e; for a in $(ADAPTERS); do echo "cd adapters/$$a && $(GO) vet ./..."; (cd adapters/$$a && $(GO) vet ./...); done

test: deps vet test-adapters
	$(GO) test -race -count=1 -timeout 30m ./...
	$(GO) test -race -count=1 -timeout 30m -tags faiss . ./vectorstore/...
	$(MAKE) test-weaviate

test-adapters: deps
	@set -e; for a in $(ADAPTERS); do echo "cd adapters/$$a && $(GO) test -race -count=1 ./..."; (cd adapters/$$a && $(GO) test -race -count=1 ./...); done

# Integration tests against a real three-node Weaviate cluster (issue #41), part of `make
# test`: the client (internal/weaviate), the memory API's behaviour suite on the cluster and
# the fault tests (TestClusterFault*: node kills during an ingest, leader kill, a node cut
# off; each on a cluster of its own; MEMORY_FAULT_DOCS=100000 for the issue's size).
# Builds/caches the server (scripts/weaviate.sh, ~12 min the first time); the tests start
# and stop the cluster themselves (scripts/weaviate-cluster.sh) and fail, never skip, if it
# cannot start.
test-weaviate:
	bash scripts/weaviate.sh >/dev/null
	$(GO) test -tags weaviate -count=1 -timeout 20m ./internal/weaviate/
	$(GO) test -race -tags weaviate -count=1 -timeout 40m -run 'Cluster' .
	$(GO) test -tags weaviate -count=1 -timeout 20m -run 'TestCluster' ./cmd/memory

test-short: deps
	$(GO) test -short -count=1 ./...

bench: deps
	$(GO) test -run '^$$' -bench . -benchmem ./...

eval-scifact:
	$(GO) run ./cmd/memory eval --data $(ROOT)/../shared/data/beir/scifact --mode bm25 --run-out /tmp/scifact-bm25.run

clean:
	rm -rf $(DEPS) bin
