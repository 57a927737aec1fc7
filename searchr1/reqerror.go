package searchr1

import (
	"errors"
	"fmt"
	"net/http"
)

// RequestError is a request body that the retrieval server refuses: malformed JSON, a
// field missing, of the wrong type or out of range, too many queries, a query over the
// byte cap. It says where (Loc) and what (Type, Msg), and matches its kind under
// errors.Is: [ErrInvalidRequest], or [ErrTooManyQueries], [ErrQueryTooLong],
// [ErrNoReranker] or [ErrBodyTooLarge] for those limits.
//
// The native dialect answers {"detail": Msg}; the [CompatSearchR1] dialect answers 422
// with FastAPI's validation error body, as the original servers do:
// {"detail": [{"type": Type, "loc": Loc, "msg": ...}]}.
type RequestError struct {
	// Loc is where the problem is, as FastAPI writes it: "body", then the field and the
	// list indexes that lead to it (["body", "queries", 2]); for malformed JSON, "body" and
	// the byte offset where decoding failed.
	Loc []any
	// Type names the problem as pydantic does: "json_invalid", "model_attributes_type"
	// (the body is not an object), "missing", "list_type", "string_type", "int_type",
	// "int_from_float", "bool_type", or "value_error" for a value out of this server's
	// range; "too_large" (413) and "read_failed" (400) for a body over the cap or one that
	// could not be read, which are not validation errors.
	Type string
	// Msg is the message, naming the field or the limit.
	Msg string
	// Err is the kind of the error.
	Err error
}

// Error returns Msg.
func (e *RequestError) Error() string { return e.Msg }

// Unwrap returns Err.
func (e *RequestError) Unwrap() error { return e.Err }

// Pydantic's names of the problems of RequestError.Type.
const (
	typeJSONInvalid  = "json_invalid"
	typeNotObject    = "model_attributes_type"
	typeMissing      = "missing"
	typeListType     = "list_type"
	typeStringType   = "string_type"
	typeIntType      = "int_type"
	typeIntFromFloat = "int_from_float"
	typeBoolType     = "bool_type"
	typeValueError   = "value_error"
	typeTooLarge     = "too_large"
	typeReadFailed   = "read_failed"
)

// pydanticMsgs are pydantic's messages for the problems the original servers' FastAPI
// reports itself; the others ("value_error": this server's limits) carry Msg.
var pydanticMsgs = map[string]string{
	typeJSONInvalid:  "JSON decode error",
	typeNotObject:    "Input should be a valid dictionary or object to extract fields from",
	typeMissing:      "Field required",
	typeListType:     "Input should be a valid list",
	typeStringType:   "Input should be a valid string",
	typeIntType:      "Input should be a valid integer",
	typeIntFromFloat: "Input should be a valid integer, got a number with a fractional part",
	typeBoolType:     "Input should be a valid boolean",
}

// compatMsg is the "msg" of the FastAPI body: pydantic's message for a problem pydantic
// reports, "Value error, " and Msg for this server's limits (as pydantic words a
// validator's ValueError).
func (e *RequestError) compatMsg() string {
	if m, ok := pydanticMsgs[e.Type]; ok {
		return m
	}
	return "Value error, " + e.Msg
}

// reqErr is a RequestError of kind ErrInvalidRequest at body.loc.
func reqErr(typ, msg string, loc ...any) *RequestError {
	return &RequestError{Loc: append([]any{"body"}, loc...), Type: typ, Msg: msg, Err: ErrInvalidRequest}
}

// limitErr is a RequestError of kind kind (a limit of the server) at body.loc, its
// message kind's text, ": " and the text of format.
func limitErr(kind error, loc []any, format string, args ...any) *RequestError {
	return &RequestError{Loc: append([]any{"body"}, loc...), Type: typeValueError,
		Msg: kind.Error() + ": " + fmt.Sprintf(format, args...), Err: kind}
}

// validationItem is one item of FastAPI's validation error body, in pydantic's key order.
type validationItem struct {
	Type string `json:"type"`
	Loc  []any  `json:"loc"`
	Msg  string `json:"msg"`
}

// fail answers err with status: in the [CompatSearchR1] dialect a RequestError that is a
// validation error (422, or malformed JSON, which FastAPI also answers 422) gets FastAPI's
// {"detail": [{"type", "loc", "msg"}]}; everything else {"detail": "..."}.
func (h *retrieveHandler) fail(w http.ResponseWriter, status int, err error) {
	var re *RequestError
	if h.o.Compat == CompatSearchR1 && errors.As(err, &re) && (status == http.StatusUnprocessableEntity || re.Type == typeJSONInvalid) {
		setKind(w, errorKind(status, err))
		writeJSON(w, http.StatusUnprocessableEntity, map[string][]validationItem{
			"detail": {{Type: re.Type, Loc: re.Loc, Msg: re.compatMsg()}},
		})
		return
	}
	fail(w, status, err)
}
