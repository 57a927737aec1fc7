// Package httpretry holds what the clients of OpenAI-compatible HTTP APIs in this module
// (the hosted embedder in vectorstore, the LLM reranker in rerank, the Search-R1 generator
// in searchr1) share: the wait before a retry (exponential backoff with jitter, or the
// server's Retry-After), the wait itself, and the message of an OpenAI-style error body.
package httpretry

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Backoff is a retry policy: retry n (1-based) waits a random time between half and all of
// Base << (n-1), at most Max; a server's Retry-After replaces it, at most MaxRetryAfter.
type Backoff struct {
	Base, Max, MaxRetryAfter time.Duration
}

// Wait is the time to wait before retry attempt (1-based) after a failure whose response
// asked for retryAfter (0: none).
func (b Backoff) Wait(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, b.MaxRetryAfter)
	}
	wait := b.Max
	if attempt >= 1 && attempt < 63 {
		// past about 35 attempts the shift overflows: stay at Max
		if w := b.Base << (attempt - 1); w > 0 && w < b.Max {
			wait = w
		}
	}
	return wait/2 + rand.N(wait/2+1)
}

// Sleep waits d, or until ctx ends: then it returns ctx's error, naming cause (the error
// that is being retried).
func Sleep(ctx context.Context, d time.Duration, cause error) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("%w (while waiting to retry: %v)", ctx.Err(), cause)
	case <-t.C:
		return nil
	}
}

// RetryAfter reads a Retry-After header (seconds or an HTTP date); 0 when absent or
// unreadable.
func RetryAfter(h string) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(h, 64); err == nil && s >= 0 {
		return max(time.Duration(s*float64(time.Second)), time.Millisecond)
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(time.Until(t), time.Millisecond)
	}
	return 0
}

// ErrorMessage reads the message of an error body as OpenAI, Ollama, vLLM and llama.cpp
// send it ({"error":{"message":...,"type" or "code":...}}), as TEI does ({"error":"...",
// "error_type":...}) or as {"message":...,"type":...}; ok is false when raw is none of
// these (the caller shows the start of the body).
func ErrorMessage(raw []byte) (msg, typ string, ok bool) {
	var shape struct {
		Error     json.RawMessage `json:"error"`
		Message   string          `json:"message"`
		Type      string          `json:"type"`
		ErrorType string          `json:"error_type"`
	}
	if json.Unmarshal(raw, &shape) != nil {
		return "", "", false
	}
	var obj struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	var s string
	switch {
	case len(shape.Error) > 0 && json.Unmarshal(shape.Error, &obj) == nil && obj.Message != "":
		typ = obj.Type
		if typ == "" && len(obj.Code) > 0 && string(obj.Code) != "null" {
			typ = strings.Trim(string(obj.Code), `"`)
		}
		return obj.Message, typ, true
	case len(shape.Error) > 0 && json.Unmarshal(shape.Error, &s) == nil && s != "":
		return s, shape.ErrorType, true
	case shape.Message != "":
		return shape.Message, shape.Type, true
	}
	return "", "", false
}
