package vectorstore

import (
	"context"
	"fmt"
)

// VectorsOnly is the identity of an embedder whose vectors were computed elsewhere (on a
// GPU, by another program) and are supplied with each document, without the model itself:
// a store can record and index them under the id the user names (for example
// "e5-base-v2"), and embed queries with the matching model once it is loaded. Embed fails
// with ErrNoModel.
type VectorsOnly struct {
	id  string
	dim int
}

// NewVectorsOnly is the identity of vectors of dimension dim made by the model named id.
func NewVectorsOnly(id string, dim int) *VectorsOnly { return &VectorsOnly{id: id, dim: dim} }

// ID is the model's name, as the user gave it.
func (v *VectorsOnly) ID() string { return v.id }

// Dim is the vectors' dimension.
func (v *VectorsOnly) Dim() int { return v.dim }

// Embed fails with ErrNoModel: there is no model to embed texts with.
func (v *VectorsOnly) Embed(context.Context, []string) ([][]float32, error) {
	return nil, fmt.Errorf("%w: %q stands for vectors computed elsewhere (give each document its vector, or load the model)", ErrNoModel, v.id)
}
