// Package errkind makes sentinel errors that refine a broader one: a package's own error,
// with its own text, that errors.Is also matches to the public kind it belongs to (for
// example a disk index's "files are damaged" that is a vectorstore.ErrCorrupt).
package errkind

// New returns a sentinel error with the text msg that matches base under errors.Is.
func New(msg string, base error) error { return &kindError{msg: msg, base: base} }

type kindError struct {
	msg  string
	base error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.base }
