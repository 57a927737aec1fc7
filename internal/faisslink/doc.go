// Package faisslink supplies the link flags go-faiss leaves out when libfaiss_c.a is a static
// archive that embeds Debian's libfaiss.a (OpenMP, OpenBLAS, the C++ runtime), and a few C++
// shims for faiss 1.7.3 features its C API does not expose (HNSW efConstruction, the IVF
// hashtable direct map).
//
// Everything but this comment is behind the "faiss" build tag: import the package for its side
// effect (and its helpers) only from code built with that tag. The linker must find
// libfaiss_c.a, e.g. CGO_LDFLAGS="-L<repo>/.deps/faiss/lib" (the Makefile sets it).
package faisslink
