package searchr1

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// TestOpenAIReusesConnections: 32 concurrent episodes of 10 generations each reuse their
// connections. With http.DefaultClient (2 idle connections a host) most of the 320
// requests opened a new connection: a rollout runner at 64 in flight churned through
// thousands of sockets (TIME_WAIT) a step.
func TestOpenAIReusesConnections(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"choices":[{"text":"<answer> x </answer>"}]}`))
	}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	g := &OpenAI{BaseURL: srv.URL + "/v1"}
	const workers, calls = 32, 10
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for j := 0; j < calls; j++ {
				if _, err := g.Generate(context.Background(), "p", nil); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	if n := conns.Load(); n > 2*workers {
		t.Errorf("%d connections for %d requests from %d workers, want at most %d", n, workers*calls, workers, 2*workers)
	}
}
