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
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agentmem/memory/models"
)

func newModelsCmd() *cobra.Command {
	list := newCommand("models list", "list the models memory knows and where each one is", func(_ context.Context, args []string, stdout, _ io.Writer) error {
		if err := noArgs(args); err != nil {
			return err
		}
		return modelsList(stdout)
	})
	list.Aliases = []string{"ls"}
	list.ValidArgsFunction = cobra.NoFileCompletions

	var po models.Options
	pull := newCommand("models pull", "download models into the cache, verifying their pinned checksums", func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if len(args) == 0 {
			return usagef("no model NAME given (memory models list names them)")
		}
		return modelsPull(ctx, po, args, stdout, stderr)
	})
	pull.ValidArgsFunction = completeModelArgs
	fs := pull.Flags()
	fs.StringVar(&po.BaseURL, "base-url", "", "server root `URL` (default $HF_ENDPOINT, else https://huggingface.co)")
	fs.StringVar(&po.CacheDir, "cache", "", "cache folder `DIR` (default $MEMORY_CACHE/models or the user cache folder)")
	fs.IntVar(&po.Retries, "retries", 0, "retries per file on transient errors (0 = 5, -1 = none)")
	completeDirs(fs, "cache")

	path := newCommand("models path", "print the folder of a ready model", func(_ context.Context, args []string, stdout, _ io.Writer) error {
		if len(args) != 1 {
			return usagef("want one model NAME, not %d", len(args))
		}
		return modelsPath(args[0], stdout)
	})
	path.ValidArgsFunction = completeModelArgs

	return newParentCommand("models", "list, download (pull) and locate pretrained models", list, pull, path, newModelsInfoCmd())
}

func modelsList(stdout io.Writer) error {
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

func modelsPull(ctx context.Context, opts models.Options, names []string, stdout, stderr io.Writer) error {
	for _, name := range names {
		rep := newModelsReporter(stderr)
		opts.Progress = rep.update
		dir, err := models.Pull(ctx, name, opts)
		rep.close()
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, dir)
	}
	return nil
}

func modelsPath(name string, stdout io.Writer) error {
	dir, err := models.Resolve(name)
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
