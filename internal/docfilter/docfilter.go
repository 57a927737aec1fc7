// Package docfilter compiles the store's filters: a Where over a document's metadata
// (Chroma's operators) into a predicate over a stored record and the same filter over the
// BM25 index's metadata terms, and a WhereDocument over its title and text into a
// predicate. Each filter's size is checked against the caps before anything is built.
package docfilter

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"regexp/syntax"
	"sort"
	"strings"

	"github.com/agentmem/memory/internal/bm25"
	"github.com/agentmem/memory/internal/store"
)

// The errors of a filter; the root package exports them as memory.ErrInvalidFilter and
// memory.ErrFilterTooLarge.
var (
	// ErrInvalid: a filter is malformed (an unknown operator, a bad operand).
	ErrInvalid = errors.New("memory: invalid filter")
	// ErrTooLarge: a filter is over one of the caps; it also matches ErrInvalid.
	ErrTooLarge = fmt.Errorf("%w: too large", ErrInvalid)
)

// Pred is a compiled filter over a stored document.
type Pred func(d *store.Record) bool

// Compiled is a Where compiled once for a search: the predicate over a stored record
// and the same filter over the BM25 index's metadata terms (Compile).
type Compiled struct {
	Pred Pred
	Meta *bm25.MetaFilter
}

func filterErr(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, a...)...)
}

// CompilePred is the predicate of Compile alone.
func CompilePred(w map[string]any) (Pred, error) {
	c, err := Compile(w)
	return c.Pred, err
}

// Compile compiles w twice over: the predicate over a stored record (the
// reference the store's scan runs) and the same filter for the BM25 index's metadata
// terms. A nil filter with a non-nil predicate matches every document. A filter over
// one of the caps (MaxDepth...) is ErrTooLarge, found before anything is
// built.
func Compile(w map[string]any) (Compiled, error) {
	if err := checkFilterSize(w, false); err != nil {
		return Compiled{}, err
	}
	p, m, err := compileWhereNode(w)
	return Compiled{Pred: p, Meta: m}, err
}

// compileWhereNode is Compile below its size check.
func compileWhereNode(w map[string]any) (Pred, *bm25.MetaFilter, error) {
	if len(w) == 0 {
		return nil, nil, nil
	}
	keys := make([]string, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var preds []Pred
	var metas []*bm25.MetaFilter
	for _, k := range keys {
		v := w[k]
		switch {
		case k == "$and" || k == "$or":
			subs, err := subFilters(k, v)
			if err != nil {
				return nil, nil, err
			}
			var ps []Pred
			var ms []*bm25.MetaFilter
			for _, s := range subs {
				p, m, err := compileWhereNode(s)
				if err != nil {
					return nil, nil, err
				}
				if p != nil {
					ps = append(ps, p)
					ms = append(ms, m)
				}
			}
			preds = append(preds, combine(k == "$and", ps))
			metas = append(metas, combineMeta(k == "$and", ms))
		case strings.HasPrefix(k, "$"):
			return nil, nil, filterErr("unknown operator %q at top level (want a metadata key, $and or $or)", k)
		case k == "":
			return nil, nil, filterErr("empty metadata key")
		default:
			p, m, err := compileField(k, v)
			if err != nil {
				return nil, nil, err
			}
			preds = append(preds, p)
			metas = append(metas, m)
		}
	}
	return combine(true, preds), combineMeta(true, metas), nil
}

// matchNone is the metadata filter no document matches ($in with no operands).
var matchNone, _ = bm25.MetaCompare("$none", bm25.MetaIn)

// combineMeta is combine for metadata filters, with combine's meaning of an empty list:
// AND of nothing matches every document (nil), OR of nothing none.
func combineMeta(and bool, ms []*bm25.MetaFilter) *bm25.MetaFilter {
	switch {
	case and:
		return bm25.MetaAnd(ms...)
	case len(ms) == 0:
		return matchNone
	}
	return bm25.MetaOr(ms...)
}

func subFilters(op string, v any) ([]map[string]any, error) {
	var out []map[string]any
	switch list := v.(type) {
	case []any:
		for i, e := range list {
			m, ok := asMap(e)
			if !ok {
				return nil, filterErr("%s[%d] is %T, want an object", op, i, e)
			}
			out = append(out, m)
		}
	case []map[string]any:
		out = list
	default:
		// A list of a named filter type (memory.Where, memory.WhereDocument).
		rv := reflect.ValueOf(v)
		if !rv.IsValid() || rv.Kind() != reflect.Slice {
			return nil, filterErr("%s wants a list of filters, got %T", op, v)
		}
		for i := 0; i < rv.Len(); i++ {
			m, ok := asMap(rv.Index(i).Interface())
			if !ok {
				return nil, filterErr("%s wants a list of filters, got %T", op, v)
			}
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return nil, filterErr("%s with an empty list", op)
	}
	return out, nil
}

// filterMap is the type of a filter object.
var filterMap = reflect.TypeOf(map[string]any(nil))

// asMap is v as a filter object: a map[string]any, or a value of a named map type over it
// (memory.Where, memory.WhereDocument).
func asMap(v any) (map[string]any, bool) {
	if m, ok := v.(map[string]any); ok {
		return m, true
	}
	rv := reflect.ValueOf(v)
	if rv.IsValid() && rv.Kind() == reflect.Map && rv.Type().ConvertibleTo(filterMap) {
		return rv.Convert(filterMap).Interface().(map[string]any), true
	}
	return nil, false
}

func combine(and bool, ps []Pred) Pred {
	if len(ps) == 1 {
		return ps[0]
	}
	if and {
		return func(d *store.Record) bool {
			for _, p := range ps {
				if !p(d) {
					return false
				}
			}
			return true
		}
	}
	return func(d *store.Record) bool {
		for _, p := range ps {
			if p(d) {
				return true
			}
		}
		return false
	}
}

func compileField(key string, v any) (Pred, *bm25.MetaFilter, error) {
	ops, isOps := asMap(v)
	if !isOps {
		return compileOp(key, "$eq", v)
	}
	if len(ops) == 0 {
		return nil, nil, filterErr("%q: empty operator object", key)
	}
	names := make([]string, 0, len(ops))
	for op := range ops {
		names = append(names, op)
	}
	sort.Strings(names)
	var ps []Pred
	var ms []*bm25.MetaFilter
	for _, op := range names {
		p, m, err := compileOp(key, op, ops[op])
		if err != nil {
			return nil, nil, err
		}
		ps = append(ps, p)
		ms = append(ms, m)
	}
	return combine(true, ps), combineMeta(true, ms), nil
}

// scalar normalises a filter operand or metadata value: numbers to float64.
func Scalar(v any) (any, bool) {
	switch x := v.(type) {
	case string, bool:
		return x, true
	case float64:
		return x, !math.IsNaN(x)
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(rv.Uint()), true
	case reflect.Float32:
		f := rv.Float()
		return f, !math.IsNaN(f)
	}
	return nil, false
}

// metaOps are the index's operations of the Where operators.
var metaOps = map[string]bm25.MetaOp{
	"$eq": bm25.MetaEq, "$ne": bm25.MetaNe, "$gt": bm25.MetaGt, "$gte": bm25.MetaGte,
	"$lt": bm25.MetaLt, "$lte": bm25.MetaLte, "$in": bm25.MetaIn, "$nin": bm25.MetaNin,
	"$contains": bm25.MetaEq, "$not_contains": bm25.MetaNe,
}

// compileOp compiles one condition on key into the record predicate and the index filter.
func compileOp(key, op string, operand any) (Pred, *bm25.MetaFilter, error) {
	if op == "$contains" {
		if list, isList := bm25.MetaList(operand); isList {
			return compileContainsAll(key, list)
		}
	}
	p, operands, err := compileOpPred(key, op, operand)
	if err != nil {
		return nil, nil, err
	}
	m, err := bm25.MetaCompare(key, metaOps[op], operands...)
	if err != nil {
		return nil, nil, filterErr("%q %s: %v", key, op, err)
	}
	return p, m, nil
}

// compileContainsAll compiles {"key": {"$contains": [a, b]}}: the value holds every one
// of the operands (Weaviate's ContainsAll), the AND of one $contains each.
func compileContainsAll(key string, list []any) (Pred, *bm25.MetaFilter, error) {
	if len(list) == 0 {
		return nil, nil, filterErr("%q $contains with an empty list", key)
	}
	ps := make([]Pred, 0, len(list))
	ms := make([]*bm25.MetaFilter, 0, len(list))
	for _, e := range list {
		if _, isList := bm25.MetaList(e); isList {
			return nil, nil, filterErr("%q $contains: element %v (%T) is not a string, number or bool", key, e, e)
		}
		p, m, err := compileOp(key, "$eq", e)
		if err != nil {
			return nil, nil, filterErr("%q $contains: %v", key, errors.Unwrap(err))
		}
		ps = append(ps, p)
		ms = append(ms, m)
	}
	return combine(true, ps), bm25.MetaAnd(ms...), nil
}

// anyValue reports whether got (a stored metadata value: a scalar, or a list of
// scalars) is, or holds an element that is, accepted by ok. A list value matches a
// condition when one of its elements does (MongoDB's and Chroma's meaning).
func anyValue(got any, ok func(v any) bool) bool {
	if l, isList := got.([]any); isList {
		for _, e := range l {
			if ok(e) {
				return true
			}
		}
		return false
	}
	return ok(got)
}

// compileOpPred compiles one condition into the record predicate; it also returns the
// normalised operands. On a list value $eq, $contains, the orderings and $in match when
// an element does; $ne, $not_contains and $nin when none does (or the key is absent).
func compileOpPred(key, op string, operand any) (Pred, []any, error) {
	switch op {
	case "$eq", "$ne", "$contains", "$not_contains":
		want, ok := Scalar(operand)
		if !ok {
			if _, isList := bm25.MetaList(operand); isList && (op == "$eq" || op == "$ne") {
				return nil, nil, filterErr("%q %s: operand %v is a list (use $in or $nin for one of several values, $contains with a list for all of them)", key, op, operand)
			}
			return nil, nil, filterErr("%q %s: operand %v (%T) is not a string, number or bool", key, op, operand, operand)
		}
		eq := op == "$eq" || op == "$contains"
		return func(d *store.Record) bool {
			got, present := d.Metadata[key]
			if !present {
				return !eq // $ne matches a document without the key
			}
			return anyValue(got, func(v any) bool { return v == want }) == eq
		}, []any{want}, nil
	case "$gt", "$gte", "$lt", "$lte":
		want, ok := Scalar(operand)
		if !ok {
			return nil, nil, filterErr("%q %s: operand %v (%T) is not a number or string", key, op, operand, operand)
		}
		if _, isBool := want.(bool); isBool {
			return nil, nil, filterErr("%q %s: cannot order booleans", key, op)
		}
		return func(d *store.Record) bool {
			return anyValue(d.Metadata[key], func(v any) bool {
				c, ok := compare(v, want)
				if !ok {
					return false
				}
				switch op {
				case "$gt":
					return c > 0
				case "$gte":
					return c >= 0
				case "$lt":
					return c < 0
				default:
					return c <= 0
				}
			})
		}, []any{want}, nil
	case "$in", "$nin":
		list, ok := bm25.MetaList(operand)
		if !ok {
			return nil, nil, filterErr("%q %s wants a list, got %T", key, op, operand)
		}
		set := make(map[any]bool, len(list))
		operands := make([]any, 0, len(list))
		for _, e := range list {
			s, ok := Scalar(e)
			if !ok {
				return nil, nil, filterErr("%q %s: element %v (%T) is not a string, number or bool", key, op, e, e)
			}
			set[s] = true
			operands = append(operands, s)
		}
		in := op == "$in"
		return func(d *store.Record) bool {
			got, present := d.Metadata[key]
			if !present {
				return !in // $nin matches a document without the key
			}
			return anyValue(got, func(v any) bool {
				switch v.(type) {
				case string, bool, float64: // a damaged record's other types cannot be map keys
					return set[v]
				}
				return false
			}) == in
		}, operands, nil
	}
	return nil, nil, filterErr("%q: unknown operator %q (want $eq $ne $gt $gte $lt $lte $in $nin $contains $not_contains)", key, op)
}

func compare(a, b any) (int, bool) {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		if !ok {
			return 0, false
		}
		switch {
		case x < y:
			return -1, true
		case x > y:
			return 1, true
		}
		return 0, true
	case string:
		y, ok := b.(string)
		if !ok {
			return 0, false
		}
		return strings.Compare(x, y), true
	}
	return 0, false
}

// CompileDocument compiles a WhereDocument into a predicate over a stored record: $contains,
// $not_contains, $regex and $not_regex over the title and the text, $and and $or. A
// filter over one of the caps is ErrTooLarge, found before anything is compiled.
func CompileDocument(w map[string]any) (Pred, error) {
	if err := checkFilterSize(w, true); err != nil {
		return nil, err
	}
	return compileWhereDocNode(w)
}

// compileWhereDocNode is CompileDocument below its size check.
func compileWhereDocNode(w map[string]any) (Pred, error) {
	if len(w) == 0 {
		return nil, nil
	}
	keys := make([]string, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var ps []Pred
	for _, k := range keys {
		v := w[k]
		switch k {
		case "$contains", "$not_contains":
			s, ok := v.(string)
			if !ok || s == "" {
				return nil, filterErr("where_document %s wants a non-empty string, got %v (%T)", k, v, v)
			}
			want := k == "$contains"
			ps = append(ps, func(d *store.Record) bool {
				return (strings.Contains(d.Text, s) || strings.Contains(d.Title, s)) == want
			})
		case "$regex", "$not_regex":
			re, err := compileRegex(k, v)
			if err != nil {
				return nil, err
			}
			want := k == "$regex"
			ps = append(ps, func(d *store.Record) bool {
				return (re.MatchString(d.Text) || re.MatchString(d.Title)) == want
			})
		case "$and", "$or":
			subs, err := subFilters(k, v)
			if err != nil {
				return nil, err
			}
			var sub []Pred
			for _, s := range subs {
				p, err := compileWhereDocNode(s)
				if err != nil {
					return nil, err
				}
				if p != nil {
					sub = append(sub, p)
				}
			}
			ps = append(ps, combine(k == "$and", sub))
		default:
			return nil, filterErr("where_document: unknown operator %q (want $contains, $not_contains, $regex, $not_regex, $and, $or)", k)
		}
	}
	return combine(true, ps), nil
}

// compileRegex compiles the operand of a where_document $regex or $not_regex: RE2 syntax
// (Go's regexp: no backreferences or lookaround, matching in time linear in the text),
// at most MaxRegexBytes long and compiling to at most MaxRegexInsts instructions, which
// bounds the work of one match to the text's length times that cap.
func compileRegex(op string, v any) (*regexp.Regexp, error) {
	s, ok := v.(string)
	if !ok || s == "" {
		return nil, filterErr("where_document %s wants a non-empty RE2 pattern, got %v (%T)", op, v, v)
	}
	if len(s) > MaxRegexBytes {
		return nil, fmt.Errorf("%w: where_document %s pattern of %d bytes (max %d)", ErrTooLarge, op, len(s), MaxRegexBytes)
	}
	parsed, err := syntax.Parse(s, syntax.Perl)
	if err != nil {
		return nil, filterErr("where_document %s: %v", op, err)
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return nil, filterErr("where_document %s: %v", op, err)
	}
	if len(prog.Inst) > MaxRegexInsts {
		return nil, fmt.Errorf("%w: where_document %s pattern compiles to %d instructions (max %d: fewer or smaller repetitions)", ErrTooLarge, op, len(prog.Inst), MaxRegexInsts)
	}
	re, err := regexp.Compile(s)
	if err != nil {
		return nil, filterErr("where_document %s: %v", op, err)
	}
	return re, nil
}

// Caps on the size of one Where or WhereDocument filter. A filter over any of them is
// ErrTooLarge (which also matches ErrInvalid), found by a walk of the filter
// before anything is compiled, so a hostile filter costs no more than its own decoding.
const (
	// MaxDepth caps the nesting of $and/$or lists (a flat filter has depth 0).
	MaxDepth = 32
	// MaxClauses caps the conditions of a filter: each operator on a metadata key
	// ({"k": v} counts as one $eq; a $contains list one an element), each
	// where_document operator, and each $and/$or.
	MaxClauses = 1024
	// MaxInItems caps the operands of one $in or $nin list.
	MaxInItems = 100_000
	// MaxRegexBytes caps the length of one where_document $regex pattern.
	MaxRegexBytes = 1024
	// MaxRegexInsts caps the compiled size of one $regex pattern (its instructions), which
	// bounds one match's cost to the text's length times this.
	MaxRegexInsts = 2000
	// MaxBytes caps the total size of a filter: the bytes of its keys and string
	// operands, with 8 bytes for each other operand.
	MaxBytes = 4 << 20
)

// filterSize is the walk of checkFilterSize.
type filterSize struct {
	doc            bool // a WhereDocument
	clauses, bytes int
}

// checkFilterSize walks w (a Where, or a WhereDocument when doc is set) the way the
// compiler will, and returns ErrTooLarge naming the first cap it exceeds. Shapes
// the compiler rejects are left to it; the walk only counts.
func checkFilterSize(w map[string]any, doc bool) error {
	fs := &filterSize{doc: doc}
	return fs.node(w, 0)
}

func (fs *filterSize) tooLarge(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrTooLarge}, a...)...)
}

func (fs *filterSize) addBytes(n int) error {
	fs.bytes += n
	if fs.bytes > MaxBytes {
		return fs.tooLarge("over %d bytes of keys and operands (the filter byte cap)", MaxBytes)
	}
	return nil
}

func (fs *filterSize) clause() error {
	fs.clauses++
	if fs.clauses > MaxClauses {
		return fs.tooLarge("more than %d conditions (the filter condition cap)", MaxClauses)
	}
	return nil
}

// node counts one filter object at the given $and/$or depth.
func (fs *filterSize) node(w map[string]any, depth int) error {
	for k, v := range w {
		if err := fs.addBytes(len(k)); err != nil {
			return err
		}
		if k == "$and" || k == "$or" {
			if err := fs.clause(); err != nil {
				return err
			}
			if depth+1 > MaxDepth {
				return fs.tooLarge("$and/$or nested more than %d deep (MaxFilterDepth)", MaxDepth)
			}
			if n := listLen(v); n > MaxClauses {
				return fs.tooLarge("%s of %d filters, more than %d conditions (the filter condition cap)", k, n, MaxClauses)
			}
			subs, err := subFilters(k, v)
			if err != nil {
				continue // a shape the compiler rejects
			}
			for _, sub := range subs {
				if err := fs.node(sub, depth+1); err != nil {
					return err
				}
			}
			continue
		}
		if fs.doc {
			if err := fs.clause(); err != nil {
				return err
			}
			if err := fs.operand(v); err != nil {
				return err
			}
			continue
		}
		ops, isOps := asMap(v)
		if !isOps {
			if err := fs.clause(); err != nil {
				return err
			}
			if err := fs.operand(v); err != nil {
				return err
			}
			continue
		}
		for op, operand := range ops {
			if err := fs.clause(); err != nil {
				return err
			}
			if err := fs.addBytes(len(op)); err != nil {
				return err
			}
			if _, isList := bm25.MetaList(operand); !isList {
				if err := fs.operand(operand); err != nil {
					return err
				}
				continue
			}
			if op == "$contains" { // a list: one condition an element (compileContainsAll)
				for i := 1; i < listLen(operand); i++ {
					if err := fs.clause(); err != nil {
						return err
					}
				}
			}
			if n := listLen(operand); n > MaxInItems {
				return fs.tooLarge("%q %s has %d items, more than %d (MaxFilterInItems)", k, op, n, MaxInItems)
			}
			if err := fs.inItems(operand); err != nil {
				return err
			}
		}
	}
	return nil
}

// inItems counts the operands of a $in or $nin list: a string's bytes, 8 for anything else.
func (fs *filterSize) inItems(v any) error {
	switch l := v.(type) {
	case []any:
		for _, e := range l {
			if err := fs.operand(e); err != nil {
				return err
			}
		}
		return nil
	case []string:
		for _, e := range l {
			if err := fs.addBytes(len(e)); err != nil {
				return err
			}
		}
		return nil
	}
	// Other slices ($in of []int, []float64...): 8 bytes an element.
	return fs.addBytes(8 * listLen(v))
}

// operand counts one operand: a string's bytes, 8 for anything else.
func (fs *filterSize) operand(v any) error {
	if s, ok := v.(string); ok {
		return fs.addBytes(len(s))
	}
	return fs.addBytes(8)
}

// listLen is the length of a slice operand, 0 for anything else.
func listLen(v any) int {
	if l, ok := v.([]any); ok {
		return len(l)
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice {
		return rv.Len()
	}
	return 0
}
