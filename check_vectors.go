package memory

import (
	"context"
	"errors"

	"github.com/agentmem/memory/internal/store"
	"github.com/agentmem/memory/vectorstore"
)

// verifyVectors reads back every vector of a vector index that keeps them in files it
// does not read whole when opened (vectorstore.Verifier: the disk index checks each block
// of its files against its checksum) and returns the problem in a report's words, "" when
// they are sound or the index cannot tell. Check's vector sample (vectorSample ids) sees a
// damaged row only when it happens to pick it; this sees every one. Damage is a problem of
// the derived index, so a repair rebuilds it from the store of record's vectors.
func verifyVectors(ix store.Index) string {
	vd, ok := ix.(*vectorDerived)
	if !ok {
		return ""
	}
	v, ok := vd.ix.(vectorstore.Verifier)
	if !ok {
		return ""
	}
	err := v.Verify(context.Background())
	switch {
	case err == nil:
		return ""
	case errors.Is(err, vectorstore.ErrCorrupt):
		return "its vector files are damaged (every vector read back): " + oneLine(err)
	}
	return "its vectors cannot be read back: " + oneLine(err)
}
