package sop

import "errors"

// Errors returned by this package. Validation problems are reported as *[ValidationError],
// which matches ErrInvalid (and ErrDuplicateName for a duplicate) with errors.Is.
var (
	// ErrInvalid is matched by every validation or parse problem of a procedure.
	ErrInvalid = errors.New("sop: invalid procedure")
	// ErrDuplicateName is matched by the error of a procedure whose name is already taken.
	ErrDuplicateName = errors.New("sop: duplicate procedure name")
	// ErrNotFound is returned for a name the library does not hold.
	ErrNotFound = errors.New("sop: procedure not found")
)

// ErrNoEmbedder is returned by MatchContext when a semantic fallback is asked for and the
// library has no embedder (see [Options.Embedder]).
var ErrNoEmbedder = errors.New("sop: semantic fallback needs an embedder")
