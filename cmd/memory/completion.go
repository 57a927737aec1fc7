package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/models"
	"github.com/agentmem/memory/vectorstore"
)

// Shell completion of flag values. The values a flag completes to are recorded on it (an
// annotation) when the command tree is built, and handed to cobra only when the shell asks
// for completions (registerCompletions): cobra keeps completion functions in a table for
// the whole process, which ordinary runs then leave alone.
const (
	completeKey      = "memory_complete"       // the values
	completeFilesKey = "memory_complete_files" // set: file names complete too
)

// completeValues makes the shell complete the value of each flag of names in fs from
// values, and from nothing else.
func completeValues(fs *pflag.FlagSet, values []string, names ...string) {
	for _, n := range names {
		_ = fs.SetAnnotation(n, completeKey, values) // a missing flag is a programming error the tests catch
	}
}

// completeValuesOrFiles is completeValues for a flag that may also name a file or a folder
// (--embedder: a model name or a model folder).
func completeValuesOrFiles(fs *pflag.FlagSet, values []string, names ...string) {
	completeValues(fs, values, names...)
	for _, n := range names {
		_ = fs.SetAnnotation(n, completeFilesKey, []string{"true"})
	}
}

// completeDirs makes the shell complete the value of each flag of names with folder names.
func completeDirs(fs *pflag.FlagSet, names ...string) {
	for _, n := range names {
		_ = cobra.MarkFlagDirname(fs, n)
	}
}

// registerCompletions registers the completion of every annotated flag of the tree of c.
func registerCompletions(c *cobra.Command) {
	c.Flags().VisitAll(func(f *pflag.Flag) {
		values, ok := f.Annotations[completeKey]
		if !ok {
			return
		}
		directive := cobra.ShellCompDirectiveNoFileComp
		if _, files := f.Annotations[completeFilesKey]; files {
			directive = cobra.ShellCompDirectiveDefault
		}
		_ = c.RegisterFlagCompletionFunc(f.Name, cobra.FixedCompletions(values, directive)) // once per flag
	})
	for _, s := range c.Commands() {
		registerCompletions(s)
	}
}

// modelNames are the names of the models memory knows (memory models list), for completion.
func modelNames(kind string) []string {
	var names []string
	for _, m := range models.List() {
		if kind == "" || m.Kind == kind {
			names = append(names, m.Name)
		}
	}
	return names
}

// completeModelArgs completes positional arguments with model names.
func completeModelArgs(_ *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return modelNames(""), cobra.ShellCompDirectiveNoFileComp
}

// Completion values of flags several commands share.
var (
	modeValues      = []string{string(memory.Hybrid), string(memory.BM25), string(memory.Dense)}
	deviceValues    = []string{"cpu", "cuda", "auto"}
	precisionValues = []string{string(memory.Float32), string(memory.Float16), string(memory.Int8)}
	scoringValues   = []string{memory.ScoringClassic, memory.ScoringLucene}
	compatValues    = []string{"native", "search-r1"}
	presetValues    = []string{"auto", "e5", "bge", vectorstore.PresetNone}
)
