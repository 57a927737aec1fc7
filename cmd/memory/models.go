package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/agentmem/memory/models"
)

func init() {
	register(command{
		name:    "models",
		summary: "list, download (pull) and locate pretrained models",
		run:     runModels,
	})
}

const modelsUsage = `usage: memory models list
       memory models pull [--base-url URL] [--cache DIR] [--retries N] NAME...
       memory models path NAME
       memory models info [--model-preset P] [--query-max-tokens N] [--passage-max-tokens N] NAME_OR_DIR
       memory models info --store DIR

pull downloads a model into the cache ($MEMORY_CACHE/models, else the user cache
folder), verifying each file's pinned sha256; interrupted downloads resume.
path prints the folder of a ready model ($MEMORY_MODELS/NAME first, then the cache).
info shows how the ONNX embedder handles text with a model: its preset (chosen by the
name as Search-R1 does: e5, bge, or none), prefixes, pooling, normalisation and token caps;
with --store, the embedder a store records and the settings it is reloaded with.
`

func runModels(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, modelsUsage)
		return errUsage
	}
	switch args[0] {
	case "list", "ls":
		return modelsList(args[1:], stdout, stderr)
	case "pull":
		return modelsPull(ctx, args[1:], stdout, stderr)
	case "path":
		return modelsPath(args[1:], stdout, stderr)
	case "info":
		return modelsInfo(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stderr, modelsUsage)
		return nil
	}
	fmt.Fprintf(stderr, "memory models: unknown subcommand %q\n%s", args[0], modelsUsage)
	return errUsage
}

func modelsList(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("models list", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fmt.Fprint(stderr, modelsUsage)
		return errUsage
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tDIM\tSIZE\tREPOSITORY\tLOCAL")
	for _, m := range models.List() {
		local := "not pulled"
		if dir, err := models.Resolve(m.Name); err == nil {
			local = dir
		} else if errors.Is(err, models.ErrChecksum) {
			local = "damaged: pull again"
		}
		dim := "-"
		if m.Dim > 0 {
			dim = fmt.Sprint(m.Dim)
		}
		size := "?"
		if m.Size() > 0 {
			size = modelsHumanBytes(m.Size())
			if !m.Pinned() {
				size = ">" + size
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", m.Name, m.Kind, dim, size, m.Repo, local)
	}
	return tw.Flush()
}

func modelsPull(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("models pull", stderr)
	base := fs.String("base-url", "", "server root (default $HF_ENDPOINT, else https://huggingface.co)")
	cache := fs.String("cache", "", "cache folder (default $MEMORY_CACHE/models or the user cache folder)")
	retries := fs.Int("retries", 0, "retries per file on transient errors (0 = 5, -1 = none)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fmt.Fprint(stderr, modelsUsage)
		return errUsage
	}
	for _, name := range fs.Args() {
		rep := newModelsReporter(stderr)
		dir, err := models.Pull(ctx, name, models.Options{
			BaseURL: *base, CacheDir: *cache, Retries: *retries, Progress: rep.update,
		})
		rep.close()
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, dir)
	}
	return nil
}

func modelsPath(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("models path", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fmt.Fprint(stderr, modelsUsage)
		return errUsage
	}
	dir, err := models.Resolve(fs.Arg(0))
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, dir)
	return nil
}

// modelsReporter shows download progress: a progress bar per file on a terminal, and a
// plain line per file start, every 25% and completion otherwise.
type modelsReporter struct {
	w       io.Writer
	tty     bool
	bar     *progressbar.ProgressBar
	file    string
	quarter int64
}

func newModelsReporter(w io.Writer) *modelsReporter {
	return &modelsReporter{w: w, tty: modelsIsTerminal(w)}
}

func modelsIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (r *modelsReporter) update(p models.Progress) {
	label := fmt.Sprintf("%s [%d/%d] %s", p.Model, p.FileIndex+1, p.Files, p.File)
	if p.File != r.file {
		r.close()
		r.file = p.File
		r.quarter = -1
		if r.tty {
			r.bar = progressbar.NewOptions64(p.Total,
				progressbar.OptionSetWriter(r.w),
				progressbar.OptionSetDescription(label),
				progressbar.OptionShowBytes(true),
				progressbar.OptionSetWidth(30),
				progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionShowCount(),
				progressbar.OptionOnCompletion(func() { fmt.Fprintln(r.w) }),
			)
		}
	}
	if r.bar != nil {
		r.bar.Set64(p.Done)
		return
	}
	switch {
	case p.Total > 0 && p.Done >= p.Total:
		if r.quarter < 4 {
			fmt.Fprintf(r.w, "%s: done (%s)\n", label, modelsHumanBytes(p.Done))
			r.quarter = 4
		}
	case p.Total > 0:
		if q := p.Done * 4 / p.Total; q > r.quarter {
			fmt.Fprintf(r.w, "%s: %s of %s (%d%%)\n", label, modelsHumanBytes(p.Done), modelsHumanBytes(p.Total), p.Done*100/p.Total)
			r.quarter = q
		}
	case r.quarter < 0:
		fmt.Fprintf(r.w, "%s: downloading (size unknown)\n", label)
		r.quarter = 0
	}
}

func (r *modelsReporter) close() {
	if r.bar != nil {
		r.bar.Finish()
		r.bar = nil
	}
}

func modelsHumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
