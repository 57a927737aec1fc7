package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/onnx"
	"github.com/spf13/cobra"
)

func newVersionCmd() *cobra.Command {
	c := newCommand("version", "print the version of memory (also memory --version), Go and the ONNX Runtime library in use",
		func(_ context.Context, args []string, stdout, _ io.Writer) error {
			if err := noArgs(args); err != nil {
				return err
			}
			return runVersion(stdout)
		})
	c.ValidArgsFunction = cobra.NoFileCompletions
	return c
}

func runVersion(stdout io.Writer) error {
	module, revision := "", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		// The version the go command built (a tag, a pseudo-version or "(devel)"), shown
		// when it is not the tag of memory.Version.
		if v := bi.Main.Version; v != "" && v != "(devel)" && v != "v"+memory.Version {
			module = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					revision += " (modified)"
				}
			}
		}
	}
	fmt.Fprintf(stdout, "memory       %s\n", memory.Version)
	if module != "" {
		fmt.Fprintf(stdout, "module       %s\n", module)
	}
	if revision != "" {
		fmt.Fprintf(stdout, "revision     %s\n", revision)
	}
	fmt.Fprintf(stdout, "go           %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	lib := onnx.ResolveLibrary("")
	state := "found"
	if lib == onnx.SystemLibrary {
		state = fmt.Sprintf("no file found: left to the system loader; set %s or run `%s`", onnx.LibraryEnv, onnx.PullCommand)
	} else if _, err := os.Stat(lib); err != nil {
		state = fmt.Sprintf("missing: set %s or run `%s`", onnx.LibraryEnv, onnx.PullCommand)
	}
	fmt.Fprintf(stdout, "onnxruntime  %s wanted; library %s (%s)\n", onnx.RuntimeVersion, lib, state)
	return nil
}
