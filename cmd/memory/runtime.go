package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/agentmem/memory/internal/onnx"
	"github.com/spf13/cobra"
)

// The help of memory runtime and its subcommands.
const (
	runtimePullHelp = `Downloads ONNX Runtime ` + onnx.RuntimeVersion + ` for linux/x64 (the npm package
onnxruntime-node@` + onnx.RuntimeVersion + ` from registry.npmjs.org), extracts
libonnxruntime.so.1, checks its pinned sha256 and installs it atomically into the user cache
($MEMORY_CACHE/onnxruntime/` + onnx.RuntimeVersion + `, else ~/.cache/memory/onnxruntime/` + onnx.RuntimeVersion + `),
where the library and the CLI look for it. A verified copy already there is kept (--force
downloads again).`
	runtimePathHelp = `Prints the library that would be loaded: $MEMORY_ORT_LIB, else .deps/onnxruntime in a
checkout, else the user cache, else the system's libonnxruntime.so.1.`
	runtimeHelp = `The ONNX Runtime library the embedders and rerankers run on: pull downloads the pinned
build, path shows which one is loaded.

pull: ` + runtimePullHelp + `

path: ` + runtimePathHelp
)

func newRuntimeCmd() *cobra.Command {
	var force bool
	var url, dir string
	pull := newCommand("runtime pull", "download and install the pinned ONNX Runtime library", func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if err := noArgs(args); err != nil {
			return err
		}
		return runtimePull(ctx, url, dir, force, stdout, stderr)
	})
	fs := pull.Flags()
	fs.StringVar(&url, "url", "", "tarball `URL` (default "+onnx.RuntimeURL+")")
	fs.StringVar(&dir, "dir", "", "install folder `DIR` (default the user cache)")
	fs.BoolVar(&force, "force", false, "download even when a verified copy is installed")
	completeDirs(fs, "dir")
	path := newCommand("runtime path", "print the ONNX Runtime library that would be loaded", func(_ context.Context, args []string, stdout, stderr io.Writer) error {
		if err := noArgs(args); err != nil {
			return err
		}
		p := onnx.ResolveLibrary("")
		fmt.Fprintln(stdout, p)
		if p == onnx.SystemLibrary {
			fmt.Fprintf(stderr, "no library file found; the dynamic loader will search for %s (run `%s` to install the pinned build)\n", p, onnx.PullCommand)
		}
		return nil
	})
	return newParentCommand("runtime", "download (pull) the pinned ONNX Runtime library, or show which one is used", pull, path)
}

// runtimePullOptions are the options of `runtime pull` (tests point them at a fake server).
var runtimePullOptions = onnx.PullOptions{}

func runtimePull(ctx context.Context, url, dir string, force bool, stdout, stderr io.Writer) error {
	opts := runtimePullOptions
	if url != "" {
		opts.URL = url
	}
	if dir != "" {
		opts.Dir = dir
	}
	opts.Force = opts.Force || force
	last := time.Now()
	opts.Progress = func(done, total int64) {
		if time.Since(last) < 2*time.Second {
			return
		}
		last = time.Now()
		if total > 0 {
			fmt.Fprintf(stderr, "downloading onnxruntime-node %s: %d/%d MB\n", onnx.RuntimeVersion, done>>20, total>>20)
		} else {
			fmt.Fprintf(stderr, "downloading onnxruntime-node %s: %d MB\n", onnx.RuntimeVersion, done>>20)
		}
	}
	p, err := onnx.PullRuntime(ctx, opts)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, p)
	if env := os.Getenv(onnx.LibraryEnv); env != "" && env != p {
		fmt.Fprintf(stderr, "note: %s=%s takes precedence over this copy\n", onnx.LibraryEnv, env)
	}
	return nil
}
