package memory

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
)

// Where filters documents on metadata, with Chroma's operators:
//
//	{"source": "wiki"}                          // equality
//	{"year": {"$gte": 2020}}                    // $eq $ne $gt $gte $lt $lte
//	{"lang": {"$in": ["go", "rust"]}}           // $in $nin
//	{"$and": [{...}, {...}]}, {"$or": [...]}    // combinations
//
// Several keys in one object are combined with AND. Comparisons ($gt...) take numbers or
// strings (compared as such); a document without the key matches no condition on it,
// $ne and $nin included (as in Chroma). Numbers compare by value (1 == 1.0).
type Where map[string]any

// WhereDocument filters on the document's title and text:
//
//	{"$contains": "needle"}, {"$not_contains": "needle"}, {"$and": [...]}, {"$or": [...]}
type WhereDocument map[string]any

// ParseWhere decodes a JSON Where filter and checks it.
func ParseWhere(data []byte) (Where, error) {
	var w Where
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("%w: where: %v", ErrInvalidFilter, err)
	}
	if _, err := compileWhere(w); err != nil {
		return nil, err
	}
	return w, nil
}

// ParseWhereDocument decodes a JSON WhereDocument filter and checks it.
func ParseWhereDocument(data []byte) (WhereDocument, error) {
	var w WhereDocument
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("%w: where_document: %v", ErrInvalidFilter, err)
	}
	if _, err := compileWhereDocument(w); err != nil {
		return nil, err
	}
	return w, nil
}

// docPred is a compiled filter over a stored document.
type docPred func(d *record) bool

func filterErr(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidFilter}, a...)...)
}

func compileWhere(w map[string]any) (docPred, error) {
	if len(w) == 0 {
		return nil, nil
	}
	keys := make([]string, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var preds []docPred
	for _, k := range keys {
		v := w[k]
		switch {
		case k == "$and" || k == "$or":
			subs, err := subFilters(k, v)
			if err != nil {
				return nil, err
			}
			var ps []docPred
			for _, s := range subs {
				p, err := compileWhere(s)
				if err != nil {
					return nil, err
				}
				if p != nil {
					ps = append(ps, p)
				}
			}
			preds = append(preds, combine(k == "$and", ps))
		case strings.HasPrefix(k, "$"):
			return nil, filterErr("unknown operator %q at top level (want a metadata key, $and or $or)", k)
		case k == "":
			return nil, filterErr("empty metadata key")
		default:
			p, err := compileField(k, v)
			if err != nil {
				return nil, err
			}
			preds = append(preds, p)
		}
	}
	return combine(true, preds), nil
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
	case []Where:
		for _, e := range list {
			out = append(out, e)
		}
	case []WhereDocument:
		for _, e := range list {
			out = append(out, e)
		}
	case []map[string]any:
		out = list
	default:
		return nil, filterErr("%s wants a list of filters, got %T", op, v)
	}
	if len(out) == 0 {
		return nil, filterErr("%s with an empty list", op)
	}
	return out, nil
}

func asMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case Where:
		return m, true
	case WhereDocument:
		return m, true
	}
	return nil, false
}

func combine(and bool, ps []docPred) docPred {
	if len(ps) == 1 {
		return ps[0]
	}
	if and {
		return func(d *record) bool {
			for _, p := range ps {
				if !p(d) {
					return false
				}
			}
			return true
		}
	}
	return func(d *record) bool {
		for _, p := range ps {
			if p(d) {
				return true
			}
		}
		return false
	}
}

func compileField(key string, v any) (docPred, error) {
	ops, isOps := asMap(v)
	if !isOps {
		return compileOp(key, "$eq", v)
	}
	if len(ops) == 0 {
		return nil, filterErr("%q: empty operator object", key)
	}
	names := make([]string, 0, len(ops))
	for op := range ops {
		names = append(names, op)
	}
	sort.Strings(names)
	var ps []docPred
	for _, op := range names {
		p, err := compileOp(key, op, ops[op])
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return combine(true, ps), nil
}

// scalar normalises a filter operand or metadata value: numbers to float64.
func scalar(v any) (any, bool) {
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

func compileOp(key, op string, operand any) (docPred, error) {
	switch op {
	case "$eq", "$ne":
		want, ok := scalar(operand)
		if !ok {
			return nil, filterErr("%q %s: operand %v (%T) is not a string, number or bool", key, op, operand, operand)
		}
		eq := op == "$eq"
		return func(d *record) bool {
			got, present := d.Metadata[key]
			if !present {
				return false
			}
			return (got == want) == eq
		}, nil
	case "$gt", "$gte", "$lt", "$lte":
		want, ok := scalar(operand)
		if !ok {
			return nil, filterErr("%q %s: operand %v (%T) is not a number or string", key, op, operand, operand)
		}
		if _, isBool := want.(bool); isBool {
			return nil, filterErr("%q %s: cannot order booleans", key, op)
		}
		return func(d *record) bool {
			c, ok := compare(d.Metadata[key], want)
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
		}, nil
	case "$in", "$nin":
		list, ok := operand.([]any)
		if !ok {
			rv := reflect.ValueOf(operand)
			if rv.Kind() != reflect.Slice {
				return nil, filterErr("%q %s wants a list, got %T", key, op, operand)
			}
			for i := 0; i < rv.Len(); i++ {
				list = append(list, rv.Index(i).Interface())
			}
		}
		set := make(map[any]bool, len(list))
		for _, e := range list {
			s, ok := scalar(e)
			if !ok {
				return nil, filterErr("%q %s: element %v (%T) is not a string, number or bool", key, op, e, e)
			}
			set[s] = true
		}
		in := op == "$in"
		return func(d *record) bool {
			got, present := d.Metadata[key]
			if !present {
				return false
			}
			return set[got] == in
		}, nil
	}
	return nil, filterErr("%q: unknown operator %q (want $eq $ne $gt $gte $lt $lte $in $nin)", key, op)
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

func compileWhereDocument(w map[string]any) (docPred, error) {
	if len(w) == 0 {
		return nil, nil
	}
	keys := make([]string, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var ps []docPred
	for _, k := range keys {
		v := w[k]
		switch k {
		case "$contains", "$not_contains":
			s, ok := v.(string)
			if !ok || s == "" {
				return nil, filterErr("where_document %s wants a non-empty string, got %v (%T)", k, v, v)
			}
			want := k == "$contains"
			ps = append(ps, func(d *record) bool {
				return (strings.Contains(d.Text, s) || strings.Contains(d.Title, s)) == want
			})
		case "$and", "$or":
			subs, err := subFilters(k, v)
			if err != nil {
				return nil, err
			}
			var sub []docPred
			for _, s := range subs {
				p, err := compileWhereDocument(s)
				if err != nil {
					return nil, err
				}
				if p != nil {
					sub = append(sub, p)
				}
			}
			ps = append(ps, combine(k == "$and", sub))
		default:
			return nil, filterErr("where_document: unknown operator %q (want $contains, $not_contains, $and, $or)", k)
		}
	}
	return combine(true, ps), nil
}
