package vectorstore

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/agentmem/memory/internal/atomicfile"
)

// writeFileAtomic replaces dst whole with what write produces (internal/atomicfile: a
// synced temporary file renamed over dst, then the folder synced): a crash leaves the old
// file or the new one, never a part. what names the writer in errors ("disk", "faiss").
func writeFileAtomic(dst, what string, write func(io.Writer) error) error {
	if err := atomicfile.Write(dst, atomicfile.Options{}, write); err != nil {
		return fmt.Errorf("vectorstore: %s: write %s: %w", what, filepath.Base(dst), err)
	}
	return nil
}
