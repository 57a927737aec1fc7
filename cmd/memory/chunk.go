package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/agentmem/memory/chunker"
	"github.com/spf13/cobra"
)

func newChunkCmd() *cobra.Command {
	var asJSON bool
	var budget int
	var lang string
	c := newCommand("chunk", "split source files into chunks: chunk FILE... [--json] [--budget N] [--language L]",
		func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			switch {
			case len(args) == 0:
				return usagef("no FILE given")
			case budget <= 0:
				return usagef("--budget %d: must be at least 1", budget)
			}
			return runChunk(ctx, asJSON, budget, lang, args, stdout)
		})
	fs := c.Flags()
	fs.BoolVar(&asJSON, "json", false, "print one JSON object per chunk")
	fs.IntVar(&budget, "budget", chunker.DefaultBudget, "chunk budget in non-whitespace characters")
	fs.StringVar(&lang, "language", "", "`LANGUAGE` override (default: from the file extension)")
	return c
}

// chunkLine is the JSON form of one chunk (end_byte is exclusive).
type chunkLine struct {
	Path          string `json:"path"`
	Language      string `json:"language"`
	Kind          string `json:"kind"`
	Name          string `json:"name,omitempty"`
	QualifiedName string `json:"qualified_name,omitempty"`
	StartByte     int    `json:"start_byte"`
	EndByte       int    `json:"end_byte"`
	StartLine     int    `json:"start_line"`
	EndLine       int    `json:"end_line"`
	Size          int    `json:"size"`
}

func runChunk(ctx context.Context, asJSON bool, budget int, lang string, files []string, stdout io.Writer) error {
	enc := json.NewEncoder(stdout)
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		src, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		chunks, err := chunker.Code(f, src, chunker.CodeOptions{Budget: budget, Language: lang})
		if err != nil {
			return err
		}
		for _, c := range chunks {
			if asJSON {
				if err := enc.Encode(chunkLine{
					Path: c.Path, Language: c.Language, Kind: c.Kind, Name: c.Name,
					QualifiedName: c.QualifiedName, StartByte: c.StartByte, EndByte: c.EndByte,
					StartLine: c.StartLine, EndLine: c.EndLine, Size: c.Size,
				}); err != nil {
					return err
				}
				continue
			}
			name := c.QualifiedName
			if name == "" {
				name = "-"
			}
			fmt.Fprintf(stdout, "%s:%d-%d\t%s\t%s\t%s\t%d\n", c.Path, c.StartLine, c.EndLine, c.Language, c.Kind, name, c.Size)
		}
	}
	return nil
}
