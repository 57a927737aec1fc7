// Command memory indexes, searches, evaluates and serves a memory store.
//
//	memory index       --store DIR [--collection C] [--sync] [--strict] PATH... | --code DIR
//	memory search      --store DIR [--json] [--where JSON] QUERY
//	memory get         --store DIR [--collection C] [--json] ID...
//	memory delete      --store DIR [--collection C] ID... | --where JSON | --source PATH
//	memory count       --store DIR [--collection C]
//	memory check       --store DIR [--repair]
//	memory backup      --store DIR OUT
//	memory restore     ARCHIVE --store NEWDIR [--check]
//	memory export      --store DIR [--collection C] OUT.jsonl
//	memory import      --store DIR [--collection C] IN.jsonl
//	memory collections --store DIR [--json] | --create NAME | --set-metadata NAME JSON | --set-analyzer NAME X | --delete NAME | --rename OLD NEW
//	memory eval        --data DIR --mode bm25|dense|hybrid [--embedder M] [--reranker M] [--run-out FILE]
//	memory serve       --store DIR [--retrieve ADDR] [--mcp | --mcp-http ADDR]
//	memory models      list | pull NAME | path NAME
//	memory runtime     pull | path
//	memory tokenize    --model NAME_OR_DIR [--pair] TEXT...
//	memory chunk       [--json] FILE...
//	memory sop         match | list | render --dir DIR ...
//	memory version     (or memory --version)
//	memory completion  bash|zsh|fish|powershell
//	memory help        [COMMAND]
//
// Read commands (search, get, count, collections, eval --store, serve) never create a store
// or a collection. Every command's -h explains its flags and input formats and exits 0;
// `memory completion bash|zsh|fish|powershell` prints a shell completion script.
//
// The CLI is built on cobra (cli.go): each subcommand lives in its own file, which builds
// its *cobra.Command (newCountCmd...) with exactly the flags it uses.
package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(runMain(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// runMain runs the CLI with args, writing to stdout and stderr, and returns its exit
// status: 0, 1 when the command failed, 2 for a bad flag or argument.
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	switch err := execute(ctx, args, stdout, stderr); {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		return 2
	default:
		return 1
	}
}
