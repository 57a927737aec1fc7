package searchr1

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// A Retry-After given as an HTTP date is honoured (the shared httpretry policy reads both
// forms; the generator used to read seconds only), and cancelling while waiting to retry
// ends the call with the context's error and the failure that was being retried.
func TestGeneratorRetryAfterForms(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", time.Now().Add(-time.Second).UTC().Format(http.TimeFormat))
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`{"choices":[{"text":"ok","finish_reason":"stop"}]}`))
	}))
	defer srv.Close()
	g := &OpenAI{BaseURL: srv.URL, Backoff: time.Hour} // only the header can make this quick
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := g.Generate(ctx, "q", nil); err != nil {
		t.Fatalf("after a Retry-After date in the past: %v", err)
	}
	if calls.Load() != 2 {
		t.Fatalf("%d calls, want 2", calls.Load())
	}

	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	defer srv2.Close()
	g = &OpenAI{BaseURL: srv2.URL, Backoff: time.Hour}
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := g.Generate(ctx, "q", nil)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrHTTPStatus) {
		t.Fatalf("err %v, want the deadline and ErrHTTPStatus", err)
	}
}
