package bm25

// Missing returns the ids among ids that the index does not hold, in their order. The store
// uses it to check a sample of its ids against the index when it opens.
func (b *Index) Missing(ids []string) ([]string, error) {
	if err := b.flushHeld(); err != nil {
		return nil, err
	}
	var out []string
	for _, id := range ids {
		d, err := b.idx.Document(id)
		if err != nil {
			return nil, err
		}
		if d == nil {
			out = append(out, id)
		}
	}
	return out, nil
}
