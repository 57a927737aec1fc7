// Package searchr1 runs Search-R1 style agentic retrieval: a language model reasons, asks
// for a search with <search>query</search>, reads the passages injected between
// <context> and </context> (or <information> for original Search-R1 checkpoints), and
// finishes with <answer>…</answer>.
//
// The package provides:
//
//   - [Loop]: the generate → parse → search → inject loop, with a [Trace] of every turn;
//   - [Runner]: rollouts at training scale (N questions x G rollouts in lockstep, one
//     batch search per turn, bounded concurrency), every episode streamed as a JSONL
//     [Trajectory] with its rewards and timings;
//   - [Sanitize]: neutralises tag look-alikes and chat-template special tokens in
//     retrieved text, in linear time, so a document can never open or close a tag the
//     loop parses or start a chat turn; [FormatPassagesCapped] cuts a context block to a
//     cap without leaving an element open;
//   - rewards as plain functions ([ExactMatch], [SubstringMatch], [TokenF1],
//     [ExtractSolution], [emReward], [formatReward], [Reward] with a search bonus, search_reward
//     [MetricSearchReward]: Search-R1's format-aware reward over an episode) with
//     Search-R1's answer normalisation, never counting the loop's own messages;
//   - generators: [OpenAI] (an OpenAI-compatible completions/chat client for vLLM,
//     llama.cpp or a hosted API) and [Scripted] (canned outputs for tests);
//   - [HyDE]: a [Searcher] wrapper that also searches a generated hypothetical answer;
//   - [NewRetrieveHandler] and [NewRetrieveServer]: the original Search-R1 retrieval
//     server protocol (POST /retrieve, POST /rerank, GET /health) for training: batches of
//     up to 8,192 queries searched in parallel and streamed back in order, an optional
//     cross-encoder rerank, a response budget and every HTTP timeout set; with
//     [CompatSearchR1] it answers exactly as the original servers (raw scores, their
//     fields and defaults, the retrieve-and-rerank and rerank servers' requests, FastAPI's
//     422 bodies); [StoreOptions] opens a store to score BM25 as pyserini does, and
//     [CorpusDocument] stores a corpus row so that it comes back byte for byte;
//   - [PrepareQuestion] and the loop's observations give the original's prompt and
//     observation bytes; [NormalizeAnswer] and the answer checks equal the original's
//     qa_em.py on every input (Python's str and re semantics, held to CPython by
//     testdata/qa_em_cases.py).
//
// Both *memory.Memory and *memory.Collection satisfy [Searcher] and [BatchSearcher].
package searchr1
