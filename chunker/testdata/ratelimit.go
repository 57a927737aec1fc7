// Copyright 2026 The Example Authors. All rights reserved.

// Package ratelimit implements a token bucket rate limiter
// shared by the HTTP handlers of the gateway.
package ratelimit

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrLimited is returned when a request exceeds its rate.
var ErrLimited = errors.New("ratelimit: limited")

// Clock abstracts time for tests.
type Clock interface {
	Now() time.Time
	Sleep(ctx context.Context, d time.Duration) error
}

// Bucket is a token bucket. The zero value is not usable; call New.
type Bucket struct {
	mu       sync.Mutex
	rate     float64 // tokens per second
	burst    float64
	tokens   float64
	last     time.Time
	clock    Clock
	observer func(allowed bool)
}

// Option configures a Bucket.
type Option func(*Bucket)

// WithClock replaces the wall clock.
func WithClock(c Clock) Option { return func(b *Bucket) { b.clock = c } }

// New returns a bucket that allows rate events per second with bursts of burst.
func New(rate float64, burst int, opts ...Option) *Bucket {
	b := &Bucket{rate: rate, burst: float64(burst), tokens: float64(burst)}
	for _, o := range opts {
		o(b)
	}
	if b.clock == nil {
		b.clock = wallClock{}
	}
	b.last = b.clock.Now()
	return b
}

// Allow reports whether one event may happen now, consuming a token if so.
func (b *Bucket) Allow() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	ok := b.tokens >= 1
	if ok {
		b.tokens--
	}
	if b.observer != nil {
		b.observer(ok)
	}
	return ok
}

// Wait blocks until an event may happen or ctx is done.
func (b *Bucket) Wait(ctx context.Context) error {
	for {
		if b.Allow() {
			return nil
		}
		b.mu.Lock()
		missing := 1 - b.tokens
		b.mu.Unlock()
		d := time.Duration(missing / b.rate * float64(time.Second))
		if err := b.clock.Sleep(ctx, d); err != nil {
			return errors.Join(ErrLimited, err)
		}
	}
}

// refill adds the tokens earned since the last call. b.mu must be held.
func (b *Bucket) refill() {
	now := b.clock.Now()
	elapsed := now.Sub(b.last).Seconds()
	b.last = now
	b.tokens += elapsed * b.rate
	if b.tokens > b.burst {
		b.tokens = b.burst
	}
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
