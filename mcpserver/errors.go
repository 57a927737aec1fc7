package mcpserver

import (
	"errors"
	"fmt"
)

// Errors of the tools; they reach the client as tool errors (isError) naming the bad value.
var (
	// ErrInvalidInput: a tool argument is missing or out of range.
	ErrInvalidInput = errors.New("mcpserver: invalid input")
	// ErrNoSOPs: sop_match was called on a server started without a procedure library.
	ErrNoSOPs = errors.New("mcpserver: no SOP library loaded")
	// ErrTooLarge: a tool call is over one of the caps of Options (MaxArgBytes,
	// MaxAddBytes, MaxAddDocs, MaxDeleteIDs, MaxQueryBytes); the error names the cap and
	// the value. It also matches ErrInvalidInput.
	ErrTooLarge = fmt.Errorf("%w: too large", ErrInvalidInput)
)
