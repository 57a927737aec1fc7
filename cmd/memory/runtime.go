package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/agentmem/memory/internal/onnx"
)

func init() {
	register(command{
		name:    "runtime",
		summary: "download (pull) the pinned ONNX Runtime library, or show which one is used",
		run:     runRuntime,
	})
}

const runtimeHelp = `pull downloads ONNX Runtime ` + onnx.RuntimeVersion + ` for linux/x64 (the npm package
onnxruntime-node@` + onnx.RuntimeVersion + ` from registry.npmjs.org), extracts
libonnxruntime.so.1, checks its pinned sha256 and installs it atomically into the user cache
($MEMORY_CACHE/onnxruntime/` + onnx.RuntimeVersion + `, else ~/.cache/memory/onnxruntime/` + onnx.RuntimeVersion + `),
where the library and the CLI look for it. A verified copy already there is kept (--force
downloads again).

path prints the library that would be loaded: $MEMORY_ORT_LIB, else .deps/onnxruntime in a
checkout, else the user cache, else the system's libonnxruntime.so.1.`

// runtimePullOptions are the options of `runtime pull` (tests point them at a fake server).
var runtimePullOptions = onnx.PullOptions{}

func runRuntime(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		printCommandHelp(stderr, "runtime", nil)
		return errUsage
	}
	switch args[0] {
	case "pull":
		return runtimePull(ctx, args[1:], stdout, stderr)
	case "path":
		fs := newFlags("runtime", stderr)
		if err := parseFlags(fs, args[1:]); err != nil {
			return err
		}
		p := onnx.ResolveLibrary("")
		fmt.Fprintln(stdout, p)
		if p == onnx.SystemLibrary {
			fmt.Fprintf(stderr, "no library file found; the dynamic loader will search for %s (run `%s` to install the pinned build)\n", p, onnx.PullCommand)
		}
		return nil
	case "help", "-h", "-help", "--help":
		printCommandHelp(stdout, "runtime", nil)
		return nil
	}
	fmt.Fprintf(stderr, "memory runtime: unknown subcommand %q\n", args[0])
	printCommandHelp(stderr, "runtime", nil)
	return errUsage
}

func runtimePull(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("runtime", stderr)
	url := fs.String("url", "", "tarball URL (default "+onnx.RuntimeURL+")")
	dir := fs.String("dir", "", "install folder (default the user cache)")
	force := fs.Bool("force", false, "download even when a verified copy is installed")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return errUsage
	}
	opts := runtimePullOptions
	if *url != "" {
		opts.URL = *url
	}
	if *dir != "" {
		opts.Dir = *dir
	}
	opts.Force = opts.Force || *force
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
