// Package testcluster starts and stops, for the tests of a package (its TestMain), the
// three-node Weaviate cluster of scripts/weaviate-cluster.sh, and gives each test a store
// address on it with a class prefix of its own (issue #41). The root package's tests have
// their own harness (cluster_behaviour_test.go); this is the one the other packages share.
//
// The script reads WEAVIATE_IP_PREFIX, WEAVIATE_GRPC_BASE, WEAVIATE_DATA_BASE and the
// other variables it documents from the environment, so that several clusters run on one
// machine. MEMORY_WEAVIATE_URL, when set, names a running cluster to use instead: nothing
// is started or stopped then.
package testcluster

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentmem/memory/internal/weaviate"
)

// Cluster is a running cluster.
type Cluster struct {
	// Addr is its weaviate:// address (the nodes' HTTP endpoints, no class prefix).
	Addr   string
	script string
	dir    string // "" when not started here
	stop   sync.Once
	sig    chan os.Signal
}

// Start starts a cluster with the script under root (the repository's root) in a new
// temporary directory, waiting up to 5 minutes, or returns the one MEMORY_WEAVIATE_URL
// names. A cluster that cannot start is an error carrying the script's output. Until Stop,
// SIGINT, SIGTERM and SIGHUP stop the cluster and exit the process with status 1.
func Start(root string) (*Cluster, error) {
	if u := os.Getenv("MEMORY_WEAVIATE_URL"); u != "" {
		return &Cluster{Addr: u}, nil
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "memory-weaviate-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{script: filepath.Join(abs, "scripts", "weaviate-cluster.sh"), dir: dir, sig: make(chan os.Signal, 1)}
	signal.Notify(c.sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s, ok := <-c.sig
		if !ok {
			return
		}
		slog.Error("stopping the weaviate cluster", "signal", s, "dir", c.dir)
		c.Stop(false)
		os.Exit(1)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, c.script, "start", dir).CombinedOutput()
	if err != nil {
		c.Stop(false)
		return nil, fmt.Errorf("could not start the weaviate cluster (%s start %s): %v\n%s", c.script, dir, err, out)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], "weaviate://") {
			c.Addr = f[0]
		}
	}
	if c.Addr == "" {
		c.Stop(false)
		return nil, fmt.Errorf("no endpoint line from the cluster script:\n%s", out)
	}
	return c, nil
}

// Stop stops a cluster Start started (once; nothing for one MEMORY_WEAVIATE_URL named).
// Its directory is removed when passed is set, else kept with the nodes' logs, and its
// path is returned in the error.
func (c *Cluster) Stop(passed bool) error {
	if c.dir == "" {
		return nil
	}
	var err error
	c.stop.Do(func() {
		signal.Stop(c.sig)
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		if out, serr := exec.CommandContext(ctx, c.script, "stop", c.dir).CombinedOutput(); serr != nil {
			err = fmt.Errorf("%s stop %s: %v\n%s", c.script, c.dir, serr, out)
			return
		}
		if passed {
			os.RemoveAll(c.dir)
		} else {
			err = fmt.Errorf("weaviate cluster data and logs kept in %s", c.dir)
		}
	})
	return err
}

var seq atomic.Int64

// Store returns the address of a new store on the cluster: Addr with a class prefix of
// its own, whose classes are deleted when t ends.
func (c *Cluster) Store(t testing.TB) string {
	t.Helper()
	prefix := fmt.Sprintf("T%dx%d", time.Now().UnixNano()%1e9, seq.Add(1))
	t.Cleanup(func() {
		if err := c.drop(prefix); err != nil {
			t.Errorf("dropping the classes of %s: %v", prefix, err)
		}
	})
	return c.Addr + "/" + prefix
}

// drop deletes the classes whose names begin with prefix_.
func (c *Cluster) drop(prefix string) error {
	var nodes []string
	for _, n := range strings.Split(strings.TrimPrefix(c.Addr, "weaviate://"), ",") {
		if n = strings.TrimSpace(n); n != "" {
			nodes = append(nodes, n)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	wc, err := weaviate.New(ctx, weaviate.Config{Endpoints: nodes})
	if err != nil {
		return err
	}
	infos, err := wc.Classes(ctx, prefix+"_")
	if err != nil {
		return err
	}
	for _, ci := range infos {
		if err := wc.DeleteClass(ctx, ci.Name); err != nil {
			return err
		}
	}
	return nil
}
