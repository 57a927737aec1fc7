package vectorstore

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// writeFileAtomic writes what write produces to dst through a temporary file beside it,
// synced, then renamed over dst, then syncs dst's folder: a crash leaves the old file or
// the new one, never a part. what names the writer in errors ("disk", "faiss").
func writeFileAtomic(dst, what string, write func(io.Writer) error) error {
	tmp := dst + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("vectorstore: %s: %w", what, err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("vectorstore: %s: write %s: %w", what, filepath.Base(dst), err)
	}
	if d, err := os.Open(filepath.Dir(dst)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
