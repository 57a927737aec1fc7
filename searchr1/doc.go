// Package searchr1 runs Search-R1 style agentic retrieval: a language model reasons, asks
// for a search with <search>query</search>, reads the passages injected between
// <context> and </context> (or <information> for original Search-R1 checkpoints), and
// finishes with <answer>…</answer>.
//
// The package provides:
//
//   - [Loop]: the generate → parse → search → inject loop, with a [Trace] of every turn;
//   - [Sanitize]: neutralises tag look-alikes in retrieved text, so a document can never
//     open or close a tag the loop parses;
//   - rewards as plain functions ([ExactMatch], [SubstringMatch], [ExtractSolution],
//     [EMReward], [FormatReward]) with Search-R1's answer normalisation;
//   - generators: [OpenAI] (an OpenAI-compatible completions/chat client for vLLM,
//     llama.cpp or a hosted API) and [Scripted] (canned outputs for tests);
//   - [HyDE]: a [Searcher] wrapper that also searches a generated hypothetical answer;
//   - [NewRetrieveHandler]: an HTTP handler speaking the original Search-R1 retrieval
//     server protocol (POST /retrieve, GET /health).
//
// Both *memory.Memory and *memory.Collection satisfy [Searcher].
package searchr1
