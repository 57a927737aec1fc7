package chunker

import "errors"

// Errors returned for input that cannot be chunked.
var (
	// ErrBinary reports a file that looks binary (it holds NUL bytes).
	ErrBinary = errors.New("chunker: binary content")
	// ErrInvalidUTF8 reports content that is not valid UTF-8.
	ErrInvalidUTF8 = errors.New("chunker: invalid UTF-8")
	// ErrUnknownLanguage reports an explicit CodeOptions.Language this package does not know.
	ErrUnknownLanguage = errors.New("chunker: unknown language")
)
