package bm25

import "syscall"

// adviseHuge asks for transparent huge pages over b (ignored where they are off).
func adviseHuge(b []byte) { _ = syscall.Madvise(b, syscall.MADV_HUGEPAGE) }
