package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentmem/memory"
	"github.com/spf13/cobra"
)

func init() {
	commandHelp["check"] = helpText{
		usage: `memory check --store DIR [--repair]`,
		help: `Compares each collection's derived indexes (BM25, vectors) with the store of record
(store.db): the change each reflects, how many ids each holds, and whether a sample of
stored ids is in it (100 for BM25; 20 for vectors, each searched for by its own vector), and
for the disk vector index every vector read back against its block checksums.
It also reads the store of record itself: every page of store.db and its freelist checked
(read directly, not through bbolt, so a damaged page is reported, never a crash), and per
collection every record decoded, counted, and its vectors sized. Prints one line per entry:
"ok", "DISAGREES" or "REPAIRED", with the figures. Damage to store.db itself (a record or
vector that fails its checksum, under its key or a damaged one; a page bbolt cannot read)
cannot be repaired: the report names the damaged keys and says to restore store.db from a
backup. A collection's counters are derived from its records: damaged ones are counted
again (persisted by --repair).

Without --repair the store is opened read-only and nothing is written (an index that cannot
be trusted is rebuilt in memory only, and reported). With --repair the store is opened for
writing (no other process may hold it) and every index that disagrees is rebuilt from the
store of record, then checked again.

Exit status: 0 when every index agrees (or was repaired), 1 when one disagrees and was not
repaired, or the store of record is damaged (or the store cannot be opened: a damaged store.db or manifest is reported as
corrupt, naming the file).

` + readStoreHelp,
		example: `  memory check --store ./s
  memory check --store ./s --repair`,
	}
}

// errDisagrees: an index (or a collection's counters) disagrees with the store of record
// and was not repaired.
var errDisagrees = errors.New("derived indexes or counters disagree with the store of record (run memory check --repair)")

// errStillDisagrees: a repair ran and something still disagrees.
var errStillDisagrees = errors.New("derived indexes or counters still disagree with the store of record after the repair")

// errStoreDamaged: the store of record itself is damaged.
var errStoreDamaged = errors.New("the store of record (store.db) is damaged")

// checkError is what a check that is not OK ends with: damage to the store of record says
// so, names what is damaged and what a repair can and cannot do; the hint to run --repair
// appears only where a repair would help.
func checkError(rep memory.CheckReport, repaired bool) error {
	if !rep.StoreDamaged() {
		if repaired {
			return errStillDisagrees
		}
		return errDisagrees
	}
	var b strings.Builder
	if keys := rep.DamagedKeys(); len(keys) > 0 {
		fmt.Fprintf(&b, ": damaged records or vectors %q", keys)
	}
	b.WriteString("; check --repair cannot rebuild the store of record: restore store.db from a backup")
	if rep.Repairable() && !repaired {
		b.WriteString(" (check --repair can still rebuild the derived indexes and count the counters again)")
	}
	return fmt.Errorf("%w%s", errStoreDamaged, b.String())
}

func newCheckCmd() *cobra.Command {
	var sf storeFlags
	var repair bool
	c := newCommand("check", "verify every derived index against the store of record; --repair rebuilds what disagrees",
		func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			if err := sf.need(); err != nil {
				return err
			}
			if err := noArgs(args); err != nil {
				return err
			}
			return runCheck(ctx, &sf, repair, stdout, stderr)
		})
	fs := c.Flags()
	sf.addStore(fs)
	fs.BoolVar(&repair, "repair", false, "rebuild every index that disagrees with the store of record (opens the store for writing)")
	return c
}

func runCheck(ctx context.Context, sf *storeFlags, repair bool, stdout, stderr io.Writer) error {
	var extra []memory.Option
	if !repair {
		extra = append(extra, memory.ReadOnly())
	}
	m, err := sf.open(sf.dir, stderr, extra...)
	if err != nil {
		return err
	}
	defer m.Close()
	rep, err := m.Check(ctx, repair)
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
		return checkError(rep, repair)
	}
	return nil
}
