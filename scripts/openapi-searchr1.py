#!/usr/bin/env python3
"""Writes searchr1/openapi/native.json and search-r1.json, the OpenAPI 3.1 descriptions
the /retrieve server embeds and serves at /openapi.json.

Request examples are written here; the response example of the same name is the real
handler's answer, recorded by the test:

    python3 scripts/openapi-searchr1.py searchr1/openapi            # answers left null
    MEMORY_OPENAPI_RECORD=/tmp/answers.json go test -run TestOpenAPIExamples ./searchr1
    python3 scripts/openapi-searchr1.py searchr1/openapi /tmp/answers.json
    go test -run TestOpenAPI ./searchr1                              # checks them

Usage: openapi-searchr1.py OUTDIR [ANSWERS.json]
"""
import json, sys
OUT = sys.argv[1]

def ex(summary, value, server=None, invalid=False):
    e = {"summary": summary, "value": value}
    if server: e["x-server"] = server
    if invalid: e["x-schema-invalid"] = True
    return e

def resp(desc, schema, examples):
    return {"description": desc, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/" + schema}, "examples": examples}}}

PLACE = None  # response example values are filled by the test with -update

SERVERS_DESC = ("Examples carry `x-server`, the test server they were recorded on: `bm25` (a store of three "
    "documents searched in BM25 mode, no reranker; the default), `dense` (the same store searched by its "
    "vectors), `rerank` (`bm25` with a cross-encoder), `not-ready` (a server whose store is not ready). "
    "A request example marked `x-schema-invalid` is one this description rejects, sent to show the server "
    "rejects it too. A response example answers the request example of the same name.")

common_schemas = {
  "Error": {"type": "object", "required": ["detail"], "properties": {"detail": {"type": "string", "description": "What is wrong, naming the field or limit."}}},
  "Health": {"type": "object", "required": ["status"], "properties": {"status": {"const": "ok"}}},
  "Ready": {"type": "object", "required": ["status"], "properties": {
      "status": {"enum": ["ready", "not ready"]},
      "detail": {"type": "string", "description": "Why the server is not ready."}}},
  "Queries": {"type": "array", "items": {"type": "string"},
      "description": "The queries, answered in order. At most the server's --max-queries (8,192) items of at most --max-query-bytes (8 KiB) each (more: 422); a blank query gets an empty list."},
}

def health_paths():
    return {
      "/health": {"get": {"operationId": "health", "summary": "Liveness: the process answers.",
        "responses": {"200": resp("Alive.", "Health", {"ok": ex("Alive", PLACE)})}}},
      "/ready": {"get": {"operationId": "ready", "summary": "Readiness: the store is open and the served collection's indexes are open and caught up with the store of record.",
        "responses": {
          "200": resp("Ready to answer searches.", "Ready", {"ready": ex("Ready", PLACE)}),
          "503": {"description": "Not ready yet (opening or catching up indexes) or no longer (store closed); Retry-After: 1.",
                  "headers": {"Retry-After": {"schema": {"type": "string"}}},
                  "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Ready"}, "examples": {"not-ready": ex("Indexes still catching up", PLACE, "not-ready")}}}}}}},
    }

def error_responses(examples):
    out = {}
    descs = {"400": "Malformed JSON, or data after the object.",
             "413": "Body over the server's cap, or queries x topk x --max-passage-bytes over --max-response-bytes.",
             "422": "A field missing, of the wrong type or out of range; too many queries; a query over the byte cap; query_vectors not one per query, not of the store's dimension, or sent to a server that cannot search by vector.",
             "500": "The search failed before the answer began (a failure midway cuts the connection).",
             "501": "/rerank on a server started without a reranker.",
             "503": "Busy: no request slot (--max-concurrent) within the queue timeout; Retry-After: 1."}
    for code, exs in examples.items():
        out[code] = resp(descs[code], "Error", exs)
    return out

static_errors = {
  "400": {"malformed": ex("Malformed JSON (as `{\"queries\": [` would get)", {"detail": "malformed JSON: unexpected EOF"})},
  "500": {"search-failed": ex("The store's search failed", {"detail": "search failed"})},
  "503": {"busy": ex("Every request slot taken for the queue timeout", {"detail": "server busy"})},
}
def merge(a, b):
    out = {k: dict(v) for k, v in a.items()}
    for k, v in b.items():
        out.setdefault(k, {}).update(v)
    return dict(sorted(out.items()))

def native():
    s = dict(common_schemas)
    s.update({
      "RetrieveRequest": {"type": "object", "anyOf": [{"required": ["queries"]}, {"required": ["query_vectors"]}], "properties": {
          "queries": {"$ref": "#/components/schemas/Queries"},
          "topk": {"type": ["integer", "null"], "minimum": 1, "description": "Passages per query; null or missing: the server's --topk (3). At most the server's max topk (100): more get 422."},
          "return_scores": {"type": ["boolean", "null"], "description": "Wrap each passage as {document, score} (default false)."},
          "query_vectors": {"type": ["array", "null"], "description": "An extension of Search-R1's request: the queries' own embeddings, made by the client (with the model of the store's vectors), searched as they are instead of embedding the texts. query_vectors[i] belongs to queries[i] (as many as queries; null: that query's text is embedded); without queries, each vector is a query of its own, searched by dense recall alone. A hybrid server's BM25 still searches the texts. Every vector has the store's dimension, finite values and is not all zeros; all of them hold at most the server's max-query-vector-values (10,485,760: 2,560 x 4,096) values. Otherwise 422. A BM25 server, or a store without a dense index, answers 422; a server with a reranker needs the texts too.",
              "items": {"anyOf": [{"type": "array", "items": {"type": "number"}, "minItems": 1}, {"type": "null"}]}},
          "query_embedder": {"type": ["string", "null"], "description": "The id of the embedder that made query_vectors (e5-base-v2, or the store's embedder id): another than the store's gets 422. Missing or null: not checked."}}},
      "RetrievedDoc": {"type": "object", "required": ["id", "contents"], "properties": {
          "id": {"type": "string"},
          "contents": {"type": "string", "description": "\"Title\"\\ntext, as the original corpus stores it, cut to --max-passage-bytes at a UTF-8 boundary."}}},
      "ScoredDoc": {"type": "object", "required": ["document", "score"], "properties": {
          "document": {"$ref": "#/components/schemas/RetrievedDoc"},
          "score": {"type": "number", "description": "The search's score (RRF in hybrid mode, BM25 or cosine in a single mode, sigmoid(logit) when reranked)."}}},
      "RetrieveResponse": {"type": "object", "required": ["result"], "properties": {
          "result": {"type": "array", "description": "One list per query, in the order of the queries, best passage first.",
              "items": {"anyOf": [{"type": "array", "items": {"$ref": "#/components/schemas/ScoredDoc"}},
                                  {"type": "array", "items": {"$ref": "#/components/schemas/RetrievedDoc"}}]}}}},
      "RerankDocument": {"description": "A passage: a bare contents string, a {id, contents} object, or a /retrieve hit wrapped as {document, score}.",
          "anyOf": [{"type": "string"},
                    {"type": "object", "required": ["contents"], "properties": {"id": {"type": ["string", "number", "null"]}, "contents": {"type": "string"}}},
                    {"type": "object", "required": ["document"], "properties": {
                        "document": {"type": "object", "required": ["contents"], "properties": {"id": {"type": ["string", "number", "null"]}, "contents": {"type": "string"}}},
                        "score": {"type": "number"}}}]},
      "RerankRequest": {"type": "object", "required": ["queries", "documents"], "properties": {
          "queries": {"$ref": "#/components/schemas/Queries"},
          "documents": {"type": "array", "description": "documents[i] are the passages of queries[i] (as many lists as queries; at most 65,536 pairs in all).",
              "items": {"type": "array", "items": {"$ref": "#/components/schemas/RerankDocument"}}},
          "rerank_topk": {"type": ["integer", "null"], "minimum": 1, "description": "Passages kept per query; null or missing: the server's --topk."},
          "return_scores": {"type": ["boolean", "null"]}}},
    })
    q = "What is the capital of France?"
    q2 = "Where is Berlin?"
    AXIS = [1.0] + [0.0] * 31  # a query vector of the test store's dimension (32)
    paths = {
      "/retrieve": {"post": {"operationId": "retrieve", "summary": "Search the store for each query (Search-R1's retrieval protocol).",
        "description": "The queries of a request are searched in parallel and the answer is streamed query by query. With a reranker (serve --reranker) each query's --rerank-depth candidates are reranked and the best topk are scored sigmoid(logit). query_vectors (an extension) searches embeddings the client made.",
        "requestBody": {"required": True, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RetrieveRequest"}, "examples": {
            "scored": ex("Two queries, top 2 with scores", {"queries": [q, q2], "topk": 2, "return_scores": True}),
            "unscored": ex("The server's default topk, documents only", {"queries": [q]}),
            "blank-query": ex("A blank query gets an empty list", {"queries": ["  ", q2], "topk": 1, "return_scores": False}),
            "reranked": ex("With a reranker: the best passage first, sigmoid(logit) scores", {"queries": [q], "topk": 2, "return_scores": True}, "rerank"),
            "topk-over-max": ex("topk over the server's max", {"queries": [q], "topk": 1000}),
            "missing-queries": ex("No queries field", {"topk": 3}, invalid=True),
            "topk-zero": ex("topk 0 (the search-r1 dialect takes it as the default)", {"queries": [q], "topk": 0}, invalid=True),
            "queries-not-strings": ex("queries is not a list of strings", {"queries": [1, 2]}, invalid=True),
            "by-vector": ex("Query vectors alone (an extension): a dense search of each", {"query_vectors": [AXIS], "topk": 2, "return_scores": True}, "dense"),
            "vectors-mismatch": ex("Fewer query vectors than queries", {"queries": [q, q2], "query_vectors": [AXIS]}, "dense"),
            "vector-dimension": ex("A query vector of another dimension than the store's", {"query_vectors": [[0.6, 0.8]]}, "dense"),
        }}}},
        "responses": merge({"200": resp("One list per query.", "RetrieveResponse", {k: ex(v, PLACE, srv) for k, v, srv in [
                ("scored", "Scored passages", None), ("unscored", "Documents only", None), ("blank-query", "An empty list for the blank query", None), ("reranked", "Reranked", "rerank"), ("by-vector", "The passages nearest the vector", "dense")]})},
            error_responses(merge(static_errors, {
              "413": {"over-budget": ex("Over the response budget", {"detail": "searchr1: request over the response budget: 8192 queries x topk 100 x 16384 passage bytes = 13421772800 bytes, over the response budget of 1073741824 bytes; send fewer queries or a smaller topk"})},
              "422": {k: ex(v, PLACE, srv) for k, v, srv in [("topk-over-max", "topk out of range", None), ("missing-queries", "queries missing", None), ("topk-zero", "topk out of range", None), ("queries-not-strings", "queries of the wrong type", None),
                  ("vectors-mismatch", "Not one vector per query", "dense"), ("vector-dimension", "Not the store's dimension", "dense")]}})))}},
      "/rerank": {"post": {"operationId": "rerank", "summary": "Rerank given passages for each query with the server's cross-encoder (the layout of Search-R1's reranker server).",
        "requestBody": {"required": True, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RerankRequest"}, "examples": {
            "rerank-scored": ex("/retrieve hits reranked, with scores", {"queries": [q], "documents": [[
                {"document": {"id": "de", "contents": "\"Germany\"\nBerlin is the capital of Germany."}, "score": 1.2},
                {"document": {"id": "fr", "contents": "\"France\"\nParis is the capital of France."}, "score": 0.9}]], "rerank_topk": 2, "return_scores": True}, "rerank"),
            "rerank-strings": ex("Bare strings and objects, top 1 without scores", {"queries": [q, q2], "documents": [
                ["\"Italy\"\nRome is the capital of Italy.", "\"France\"\nParis is the capital of France."],
                [{"id": "de", "contents": "\"Germany\"\nBerlin is the capital of Germany."}]], "rerank_topk": 1}, "rerank"),
            "documents-mismatch": ex("Fewer document lists than queries", {"queries": [q, q2], "documents": [["Paris"]]}, "rerank"),
            "no-reranker": ex("A server without a reranker", {"queries": [q], "documents": [["Paris"]]}),
            "missing-documents": ex("No documents field", {"queries": [q]}, "rerank", invalid=True),
        }}}},
        "responses": merge({"200": resp("One list per query, best passage first, scored sigmoid(logit), contents as given.", "RetrieveResponse", {
                "rerank-scored": ex("Reranked with scores", PLACE, "rerank"), "rerank-strings": ex("Best passage of each query", PLACE, "rerank")})},
            error_responses(merge({k: v for k, v in static_errors.items() if k != "500"}, {
              "413": {"body-too-large": ex("Body over the cap", {"detail": "request body over 33554432 bytes"})},
              "422": {"documents-mismatch": ex("Lists and queries differ", PLACE, "rerank"), "missing-documents": ex("documents missing", PLACE, "rerank")},
              "501": {"no-reranker": ex("No reranker", PLACE)}})))}},
    }
    paths.update(health_paths())
    return {"openapi": "3.1.0",
      "info": {"title": "memory retrieval server", "version": "1",
        "summary": "Search-R1's retrieval protocol over a memory store (memory serve --retrieve).",
        "description": "The native dialect. A server started with --compat search-r1 serves the original servers' shapes and describes them at its own /openapi.json. /metrics (Prometheus text format) and, with --pprof, /debug/pprof/ are served beside these endpoints by memory serve.\n\n" + SERVERS_DESC},
      "paths": paths, "components": {"schemas": s}}

# The search-r1 dialect answers every bad request (malformed JSON included) with 422 and
# FastAPI's validation error body, as the original servers do.
VALIDATION_SCHEMAS = {
  "ValidationError": {"type": "object", "required": ["type", "loc", "msg"], "properties": {
      "type": {"type": "string", "description": "The problem, as pydantic names it: json_invalid, model_attributes_type, missing, list_type, string_type, int_type, int_from_float, bool_type, or value_error (a value out of this server's range)."},
      "loc": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}, "description": "\"body\", then the field and list indexes (for malformed JSON: the byte offset where decoding failed)."},
      "msg": {"type": "string", "description": "pydantic's message, or \"Value error, \" and what is out of range, naming the field or limit."}}},
  "HTTPValidationError": {"type": "object", "required": ["detail"], "description": "FastAPI's validation error body, which the original servers answer with 422.", "properties": {
      "detail": {"type": "array", "items": {"$ref": "#/components/schemas/ValidationError"}}}},
}
COMPAT_422_DESC = ("Malformed JSON; the body not an object; a field missing, of the wrong type or out of range; "
    "too many queries; a query over the byte cap. The body is FastAPI's validation error, as the original servers answer.")
COMPAT_MALFORMED = {"malformed": ex("Malformed JSON (as `{\"queries\": [` would get)",
    {"detail": [{"type": "json_invalid", "loc": ["body", 13], "msg": "JSON decode error"}]})}

def compat_errors(examples):
    """error_responses for the search-r1 dialect: 422 in FastAPI's shape, no 400."""
    out = error_responses({k: v for k, v in examples.items() if k not in ("400", "422")})
    out["422"] = {"description": COMPAT_422_DESC, "content": {"application/json": {
        "schema": {"$ref": "#/components/schemas/HTTPValidationError"},
        "examples": merge({"x": COMPAT_MALFORMED}, {"x": examples.get("422", {})})["x"]}}}
    return dict(sorted(out.items()))

def compat():
    s = {"Error": common_schemas["Error"], "HTTPValidationError": VALIDATION_SCHEMAS["HTTPValidationError"],
         "ValidationError": VALIDATION_SCHEMAS["ValidationError"]}
    s.update(common_schemas)
    s.update({
      "RetrieveRequest": {"type": "object", "required": ["queries"], "properties": {
          "queries": {"$ref": "#/components/schemas/Queries"},
          "topk": {"type": ["integer", "null"], "minimum": 0, "description": "Passages per query; 0, null or missing: the server's --topk. Ignored by a server with a reranker."},
          "return_scores": {"type": ["boolean", "null"]},
          "topk_retrieval": {"type": ["integer", "null"], "minimum": 0, "description": "Only with a reranker: candidates retrieved and reranked per query; 0, null or missing: --rerank-depth (10). Without a reranker: 422."},
          "topk_rerank": {"type": ["integer", "null"], "minimum": 0, "description": "Only with a reranker: passages kept per query; missing: --topk; null: all candidates; 0: none. Without a reranker: 422."}}},
      "BM25Doc": {"type": "object", "required": ["title", "text", "contents"], "description": "A BM25 hit of retrieval_server.py.", "properties": {
          "title": {"type": "string"}, "text": {"type": "string"}, "contents": {"type": "string"}}},
      "DenseDoc": {"type": "object", "required": ["id", "contents"], "description": "A dense hit of retrieval_server.py.", "properties": {
          "id": {"type": "string"}, "contents": {"type": "string"}}},
      "RerankedDoc": {"type": "string", "description": "A reranked hit: the \"(Title: t) text\" string the cross-encoder scored (on /retrieve converted back to \"t\"\\ntext as convert_title_format does)."},
      "Doc": {"anyOf": [{"$ref": "#/components/schemas/BM25Doc"}, {"$ref": "#/components/schemas/DenseDoc"}, {"$ref": "#/components/schemas/RerankedDoc"}]},
      "ScoredDoc": {"type": "object", "required": ["document", "score"], "properties": {
          "document": {"$ref": "#/components/schemas/Doc"},
          "score": {"type": "number", "description": "The raw score: BM25, inner product, or the cross-encoder's logit. Written as Python writes floats (9.0, 1e-05)."}}},
      "RetrieveResponse": {"type": "object", "required": ["result"], "properties": {
          "result": {"type": "array", "items": {"anyOf": [{"type": "array", "items": {"$ref": "#/components/schemas/ScoredDoc"}},
                                                           {"type": "array", "items": {"$ref": "#/components/schemas/Doc"}}]}}}},
      "RerankRequest": {"type": "object", "required": ["queries", "documents"], "properties": {
          "queries": {"$ref": "#/components/schemas/Queries"},
          "documents": {"type": "array", "items": {"type": "array", "items": {"anyOf": [{"type": "string"},
              {"type": "object", "required": ["contents"], "properties": {"id": {"type": ["string", "number", "null"]}, "contents": {"type": "string"}}},
              {"type": "object", "required": ["document"], "properties": {"document": {"type": "object", "required": ["contents"], "properties": {"contents": {"type": "string"}}}, "score": {"type": "number"}}}]}}},
          "rerank_topk": {"type": ["integer", "null"], "minimum": 0, "description": "0, null or missing: --topk."},
          "return_scores": {"type": ["boolean", "null"]}}},
    })
    q = "What is the capital of France?"
    q2 = "Where is Berlin?"
    paths = {
      "/retrieve": {"post": {"operationId": "retrieve", "summary": "retrieval_server.py's /retrieve, or retrieval_rerank_server.py's combined request on a server with a reranker.",
        "requestBody": {"required": True, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RetrieveRequest"}, "examples": {
            "bm25-scored": ex("BM25: {title, text, contents} hits with raw BM25 scores", {"queries": [q, q2], "topk": 2, "return_scores": True}),
            "bm25-topk-zero": ex("topk 0: the server's --topk", {"queries": [q], "topk": 0, "return_scores": False}),
            "dense-scored": ex("Dense: {id, contents} hits with inner products", {"queries": [q], "topk": 2, "return_scores": True}, "dense"),
            "rerank-combined": ex("With a reranker: retrieve 3, keep the best 2, raw logits", {"queries": [q], "topk_retrieval": 3, "topk_rerank": 2, "return_scores": True}, "rerank"),
            "rerank-fields-without-reranker": ex("topk_retrieval on a server without a reranker", {"queries": [q], "topk_retrieval": 10}),
            "missing-queries": ex("No queries field", {"topk": 3}, invalid=True),
        }}}},
        "responses": merge({"200": resp("One list per query.", "RetrieveResponse", {
                "bm25-scored": ex("BM25 hits", PLACE), "bm25-topk-zero": ex("The default topk", PLACE),
                "dense-scored": ex("Dense hits", PLACE, "dense"), "rerank-combined": ex("Reranked strings and logits", PLACE, "rerank")})},
            compat_errors(merge(static_errors, {
              "413": {"over-budget": ex("Over the response budget", {"detail": "searchr1: request over the response budget: 8192 queries x topk 100 x 16384 passage bytes = 13421772800 bytes, over the response budget of 1073741824 bytes; send fewer queries or a smaller topk"})},
              "422": {"rerank-fields-without-reranker": ex("Needs a reranker", PLACE), "missing-queries": ex("queries missing", PLACE)}})))}},
      "/rerank": {"post": {"operationId": "rerank", "summary": "rerank_server.py's /rerank: each query's documents scored by the cross-encoder.",
        "description": "Unlike the original, each query is reranked against its own documents only, and a query without documents keeps an empty list.",
        "requestBody": {"required": True, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RerankRequest"}, "examples": {
            "rerank-scored": ex("Documents as /retrieve returned them, best 1 with its logit", {"queries": [q], "documents": [[
                {"document": {"id": "de", "contents": "\"Germany\"\nBerlin is the capital of Germany."}, "score": 1.2},
                {"document": {"id": "fr", "contents": "\"France\"\nParis is the capital of France."}, "score": 0.9}]], "rerank_topk": 1, "return_scores": True}, "rerank"),
            "rerank-topk-zero": ex("rerank_topk 0: the server's --topk", {"queries": [q2], "documents": [["\"Germany\"\nBerlin is the capital of Germany.", "\"Italy\"\nRome is the capital of Italy."]], "rerank_topk": 0}, "rerank"),
            "no-reranker": ex("A server without a reranker", {"queries": [q], "documents": [["Paris"]]}),
        }}}},
        "responses": merge({"200": resp("One list per query: the strings scored, best first.", "RetrieveResponse", {
                "rerank-scored": ex("The best passage and its logit", PLACE, "rerank"), "rerank-topk-zero": ex("The default topk", PLACE, "rerank")})},
            compat_errors(merge({k: v for k, v in static_errors.items() if k != "500"}, {
              "501": {"no-reranker": ex("No reranker", PLACE)}})))}},
    }
    paths.update(health_paths())
    return {"openapi": "3.1.0",
      "info": {"title": "memory retrieval server, search-r1 dialect", "version": "1",
        "summary": "The original Search-R1 retrieval servers' shapes (memory serve --retrieve --compat search-r1).",
        "description": "Answers as search_r1/search/retrieval_server.py, retrieval_rerank_server.py and rerank_server.py do: one retriever with its raw score, BM25 hits as {title, text, contents}, topk 0 = the server's default, floats as Python writes them. /metrics and, with --pprof, /debug/pprof/ are served beside these endpoints by memory serve.\n\n" + SERVERS_DESC},
      "paths": paths, "components": {"schemas": s}}

import os
rec = json.load(open(sys.argv[2])) if len(sys.argv) > 2 else {}
def fill(doc, dialect):
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            for code, r in op["responses"].items():
                for name, e in r.get("content", {}).get("application/json", {}).get("examples", {}).items():
                    if e["value"] is None:
                        key = " ".join([dialect, method.upper(), path, code, name])
                        if key not in rec:
                            print("no recorded answer yet for", key, file=sys.stderr)
                            continue
                        e["value"] = rec[key]
    return doc
for name, doc in [("native.json", fill(native(), "")), ("search-r1.json", fill(compat(), "search-r1"))]:
    with open(OUT + "/" + name, "w") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")
