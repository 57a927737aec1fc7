package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/agentmem/memory"
)

func init() {
	register(command{
		name:    "check",
		summary: "verify every derived index against the store of record; --repair rebuilds what disagrees",
		run:     runCheck,
	})
	commandHelp["check"] = helpText{
		usage: `memory check --store DIR [--repair]`,
		help: `Compares each collection's derived indexes (BM25, vectors) with the store of record
(store.db): the change each reflects, how many ids each holds, and whether a sample of
stored ids is in it (100 for BM25; 20 for vectors, each searched for by its own vector).
It also reads the store of record itself: bbolt's consistency check of store.db, and per
collection every record decoded, counted, and its vectors sized. Prints one line per entry:
"ok", "DISAGREES" or "REPAIRED", with the figures. Damage to store.db itself cannot be
repaired (the line says to restore it from a backup).

Without --repair the store is opened read-only and nothing is written (an index that cannot
be trusted is rebuilt in memory only, and reported). With --repair the store is opened for
writing (no other process may hold it) and every index that disagrees is rebuilt from the
store of record, then checked again.

Exit status: 0 when every index agrees (or was repaired), 1 when one disagrees and was not
repaired (or the store cannot be opened: a damaged store.db or manifest is reported as
corrupt, naming the file).

` + storeHelp,
	}
}

// errDisagrees: an index disagrees with the store of record and was not repaired.
var errDisagrees = errors.New("derived indexes disagree with the store of record (run memory check --repair)")

func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("check", stderr)
	var sf storeFlags
	sf.register(fs, true)
	repair := fs.Bool("repair", false, "rebuild every index that disagrees with the store of record (opens the store for writing)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if sf.dir == "" || fs.NArg() != 0 {
		fs.Usage()
		return errUsage
	}
	var extra []memory.Option
	if !*repair {
		extra = append(extra, memory.ReadOnly())
	}
	m, err := sf.open(sf.dir, stderr, extra...)
	if err != nil {
		return err
	}
	defer m.Close()
	rep, err := m.Check(ctx, *repair)
	if err != nil {
		return err
	}
	for _, ix := range rep.Indexes {
		fmt.Fprintln(stdout, ix)
	}
	if len(rep.Indexes) == 0 {
		fmt.Fprintln(stdout, "no collections")
	}
	if !rep.OK() {
		return errDisagrees
	}
	return nil
}
