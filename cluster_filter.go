package memory

import (
	"context"
	"fmt"
	"reflect"
	"sort"

	"github.com/agentmem/memory/internal/bm25"
	"github.com/agentmem/memory/internal/docfilter"
	"github.com/agentmem/memory/internal/weaviate"
)

// clusterFilter is a Where translated for Weaviate: a filter, or a constant (all: every
// document matches; none: none does, e.g. a condition on a key no document has).
type clusterFilter struct {
	f         weaviate.Filter
	all, none bool
}

var (
	matchAll  = clusterFilter{all: true}
	matchNone = clusterFilter{none: true}
)

// filter translates where (checked as the embedded store checks it) into cc's filter.
// $ne, $nin and $not_contains, which match documents without the key, are ErrNotSupported
// naming the operator: Weaviate's filters have no negation that also matches a missing
// property.
func (cs *clusterStore) filter(ctx context.Context, cc *clusterClass, where Where) (clusterFilter, error) {
	if len(where) == 0 {
		return matchAll, nil
	}
	if _, err := docfilter.Compile(where); err != nil {
		return clusterFilter{}, err
	}
	props, err := cs.filterProps(ctx, cc, where)
	if err != nil {
		return clusterFilter{}, err
	}
	return translateWhere(where, props)
}

// filterProps returns the class's properties, read again when where names a key this
// process has not seen (another process may have added it).
func (cs *clusterStore) filterProps(ctx context.Context, cc *clusterClass, where Where) (map[string]weaviate.DataType, error) {
	cc.mu.Lock()
	props := cc.props
	cc.mu.Unlock()
	missing := false
	walkKeys(where, func(k string) {
		if _, ok := props[metaProp(k, 's')]; !ok {
			if _, ok := props[metaProp(k, 'n')]; !ok {
				if _, ok := props[metaProp(k, 'b')]; !ok {
					missing = true
				}
			}
		}
	})
	if !missing {
		return props, nil
	}
	ci, err := cs.wc.Class(ctx, cc.name)
	if err != nil {
		return nil, cs.classErr(err)
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.props = ci.Properties
	return ci.Properties, nil
}

// walkKeys calls fn with every metadata key of a (valid) Where.
func walkKeys(w map[string]any, fn func(string)) {
	for k, v := range w {
		if k == "$and" || k == "$or" {
			for _, sub := range subMaps(v) {
				walkKeys(sub, fn)
			}
			continue
		}
		fn(k)
	}
}

// subMaps is the list of filters of a (valid) $and / $or.
func subMaps(v any) []map[string]any {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() || rv.Kind() != reflect.Slice {
		return nil
	}
	out := make([]map[string]any, 0, rv.Len())
	for i := 0; i < rv.Len(); i++ {
		if m, ok := filterObject(rv.Index(i).Interface()); ok {
			out = append(out, m)
		}
	}
	return out
}

// filterObject is v as a filter object (a map[string]any or a named map type over it).
func filterObject(v any) (map[string]any, bool) {
	if m, ok := v.(map[string]any); ok {
		return m, true
	}
	rv := reflect.ValueOf(v)
	t := reflect.TypeOf(map[string]any(nil))
	if rv.IsValid() && rv.Kind() == reflect.Map && rv.Type().ConvertibleTo(t) {
		return rv.Convert(t).Interface().(map[string]any), true
	}
	return nil, false
}

// translateWhere translates a valid Where given the class's properties.
func translateWhere(w map[string]any, props map[string]weaviate.DataType) (clusterFilter, error) {
	keys := make([]string, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []clusterFilter
	for _, k := range keys {
		v := w[k]
		if k == "$and" || k == "$or" {
			var subs []clusterFilter
			for _, sub := range subMaps(v) {
				f, err := translateWhere(sub, props)
				if err != nil {
					return clusterFilter{}, err
				}
				subs = append(subs, f)
			}
			parts = append(parts, combineFilters(k == "$and", subs))
			continue
		}
		f, err := translateField(k, v, props)
		if err != nil {
			return clusterFilter{}, err
		}
		parts = append(parts, f)
	}
	return combineFilters(true, parts), nil
}

// combineFilters is the AND (and) or OR of fs, with the constants folded.
func combineFilters(and bool, fs []clusterFilter) clusterFilter {
	var ops []weaviate.Filter
	for _, f := range fs {
		switch {
		case and && f.none || !and && f.all:
			return f
		case f.all || f.none: // neutral
		default:
			ops = append(ops, f.f)
		}
	}
	switch len(ops) {
	case 0:
		if and {
			return matchAll
		}
		return matchNone
	case 1:
		return clusterFilter{f: ops[0]}
	}
	if and {
		return clusterFilter{f: weaviate.AllOf(ops...)}
	}
	return clusterFilter{f: weaviate.AnyOf(ops...)}
}

// translateField translates the conditions on one key.
func translateField(key string, v any, props map[string]weaviate.DataType) (clusterFilter, error) {
	ops, isOps := filterObject(v)
	if !isOps {
		return translateOp(key, "$eq", v, props)
	}
	names := make([]string, 0, len(ops))
	for op := range ops {
		names = append(names, op)
	}
	sort.Strings(names)
	parts := make([]clusterFilter, 0, len(names))
	for _, op := range names {
		f, err := translateOp(key, op, ops[op], props)
		if err != nil {
			return clusterFilter{}, err
		}
		parts = append(parts, f)
	}
	return combineFilters(true, parts), nil
}

// kindOf is the kind ('s', 'n', 'b') of a normalised scalar.
func kindOf(x any) byte {
	switch x.(type) {
	case float64:
		return 'n'
	case bool:
		return 'b'
	}
	return 's'
}

// translateOp translates one condition. A list value matches when one of its values does,
// as each kind of value is an array property: Weaviate's Equal and comparisons on an array
// match when an element does.
func translateOp(key, op string, operand any, props map[string]weaviate.DataType) (clusterFilter, error) {
	has := func(t byte) (string, bool) {
		p := metaProp(key, t)
		_, ok := props[p]
		return p, ok
	}
	switch op {
	case "$ne", "$nin", "$not_contains":
		return clusterFilter{}, unsupported(fmt.Sprintf("the Where operator %s (on %q: a document without the key matches it, which Weaviate's filters cannot say)", op, key))
	case "$eq", "$contains":
		if list, isList := bm25.MetaList(operand); isList && op == "$contains" { // every value
			parts := make([]clusterFilter, 0, len(list))
			for _, e := range list {
				f, err := translateOp(key, "$eq", e, props)
				if err != nil {
					return clusterFilter{}, err
				}
				parts = append(parts, f)
			}
			return combineFilters(true, parts), nil
		}
		x, _ := docfilter.Scalar(operand)
		p, ok := has(kindOf(x))
		if !ok {
			return matchNone, nil
		}
		return clusterFilter{f: weaviate.Where(p, weaviate.Equal, x)}, nil
	case "$gt", "$gte", "$lt", "$lte":
		x, _ := docfilter.Scalar(operand)
		if _, isString := x.(string); isString {
			return clusterFilter{}, unsupported(fmt.Sprintf("the Where operator %s on a string (on %q: Weaviate orders text its own way)", op, key))
		}
		p, ok := has(kindOf(x))
		if !ok {
			return matchNone, nil
		}
		wop := map[string]weaviate.Operator{"$gt": weaviate.GreaterThan, "$gte": weaviate.GreaterThanEqual,
			"$lt": weaviate.LessThan, "$lte": weaviate.LessThanEqual}[op]
		return clusterFilter{f: weaviate.Where(p, wop, x)}, nil
	case "$in":
		list, _ := bm25.MetaList(operand)
		var strs []string
		var nums []float64
		var bools []bool
		for _, e := range list {
			switch x, _ := docfilter.Scalar(e); y := x.(type) {
			case string:
				strs = append(strs, y)
			case float64:
				nums = append(nums, y)
			case bool:
				bools = append(bools, y)
			}
		}
		var parts []clusterFilter
		if p, ok := has('s'); ok && len(strs) > 0 {
			parts = append(parts, clusterFilter{f: weaviate.Where(p, weaviate.ContainsAny, strs)})
		}
		if p, ok := has('n'); ok && len(nums) > 0 {
			parts = append(parts, clusterFilter{f: weaviate.Where(p, weaviate.ContainsAny, nums)})
		}
		if p, ok := has('b'); ok && len(bools) > 0 {
			parts = append(parts, clusterFilter{f: weaviate.Where(p, weaviate.ContainsAny, bools)})
		}
		return combineFilters(false, parts), nil
	}
	return clusterFilter{}, unsupported("the Where operator " + op)
}
