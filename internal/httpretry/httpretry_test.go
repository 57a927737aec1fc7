package httpretry

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestBackoffWait(t *testing.T) {
	b := Backoff{Base: 100 * time.Millisecond, Max: 2 * time.Second, MaxRetryAfter: 5 * time.Second}
	cases := []struct {
		attempt    int
		retryAfter time.Duration
		lo, hi     time.Duration
	}{
		{1, 0, 50 * time.Millisecond, 100 * time.Millisecond},
		{3, 0, 200 * time.Millisecond, 400 * time.Millisecond},
		{10, 0, time.Second, 2 * time.Second}, // capped at Max
		{70, 0, time.Second, 2 * time.Second}, // the shift overflows: still Max
		{0, 0, time.Second, 2 * time.Second},  // no attempt number: Max
		{2, 3 * time.Second, 3 * time.Second, 3 * time.Second},
		{2, time.Minute, 5 * time.Second, 5 * time.Second}, // Retry-After capped
	}
	for _, c := range cases {
		for range 50 {
			if w := b.Wait(c.attempt, c.retryAfter); w < c.lo || w > c.hi {
				t.Fatalf("Wait(%d, %v) = %v, want %v..%v", c.attempt, c.retryAfter, w, c.lo, c.hi)
			}
		}
	}
}

func TestSleep(t *testing.T) {
	if err := Sleep(context.Background(), time.Millisecond, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cause := errors.New("503")
	err := Sleep(ctx, time.Hour, cause)
	if !errors.Is(err, context.Canceled) || err.Error() != "context canceled (while waiting to retry: 503)" {
		t.Fatalf("Sleep after cancel: %v", err)
	}
}

func TestRetryAfter(t *testing.T) {
	for h, want := range map[string]time.Duration{"2": 2 * time.Second, "1.5": 1500 * time.Millisecond, "": 0, "soon": 0, "-3": 0, "0": time.Millisecond} {
		if got := RetryAfter(h); got != want {
			t.Errorf("RetryAfter(%q) = %v, want %v", h, got, want)
		}
	}
	future := time.Now().Add(3 * time.Second).UTC().Format("Mon, 02 Jan 2006 15:04:05 GMT")
	if d := RetryAfter(future); d < time.Second || d > 4*time.Second {
		t.Errorf("RetryAfter(date) = %v", d)
	}
}

func TestErrorMessage(t *testing.T) {
	cases := []struct {
		body, msg, typ string
		ok             bool
	}{
		{`{"error":{"message":"bad model","type":"invalid_request_error"}}`, "bad model", "invalid_request_error", true},
		{`{"error":{"message":"slow down","code":429}}`, "slow down", "429", true},
		{`{"error":"Input validation error","error_type":"Validation"}`, "Input validation error", "Validation", true},
		{`{"message":"overloaded","type":"server"}`, "overloaded", "server", true},
		{`{"error":{}}`, "", "", false},
		{`<html>502 Bad Gateway</html>`, "", "", false},
	}
	for _, c := range cases {
		msg, typ, ok := ErrorMessage([]byte(c.body))
		if msg != c.msg || typ != c.typ || ok != c.ok {
			t.Errorf("ErrorMessage(%s) = %q, %q, %v; want %q, %q, %v", c.body, msg, typ, ok, c.msg, c.typ, c.ok)
		}
	}
}
