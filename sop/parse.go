package sop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Format is the encoding of a procedure file.
type Format int

const (
	// JSON files (".json"): one procedure object or an array of them.
	JSON Format = iota
	// YAML files (".yaml", ".yml"): one procedure mapping or a sequence of them, in one or
	// more documents.
	YAML
)

// formatOf returns the format of a file by its extension and whether it is a procedure file
// at all (".json", ".yaml" or ".yml", any case).
func formatOf(file string) (Format, bool) {
	switch strings.ToLower(filepath.Ext(file)) {
	case ".json":
		return JSON, true
	case ".yaml", ".yml":
		return YAML, true
	}
	return JSON, false
}

// Parse decodes the procedures of one file; file names it in errors and selects the format
// by its extension (JSON unless ".yaml" or ".yml"). It returns every valid procedure and,
// joined, one *ValidationError per invalid one, so a bad entry of an array does not lose the
// good ones. In strict mode unknown fields are errors; otherwise they are ignored.
// Parse does not check names for duplicates across procedures (a [Library] does).
func Parse(file string, data []byte, strict bool) ([]Procedure, error) {
	format, _ := formatOf(file)
	var (
		nodes []node
		err   *ValidationError
	)
	if format == YAML {
		nodes, err = yamlNodes(data)
	} else {
		nodes, err = jsonNodes(data)
	}
	if err != nil {
		err.File = file
		return nil, err
	}
	var (
		out  []Procedure
		errs []error
	)
	single := len(nodes) == 1 && !nodes[0].inArray
	for i, n := range nodes {
		s, verr := build(n, strict)
		if verr == nil {
			verr = s.problem()
		}
		if verr != nil {
			verr.File, verr.Index = file, i
			if single {
				verr.Index = -1
			}
			if verr.Name == "" {
				verr.Name = s.Name
			}
			errs = append(errs, verr)
			continue
		}
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}

// node is one decoded value of either format, decoded further on demand.
type node struct {
	j       json.RawMessage
	y       *yaml.Node
	inArray bool
}

type field struct {
	key string
	val node
}

func (n node) isNull() bool {
	if n.y != nil {
		return n.y.Kind == yaml.ScalarNode && n.y.Tag == "!!null"
	}
	return bytes.Equal(bytes.TrimSpace(n.j), []byte("null"))
}

// object returns the fields of a mapping, sorted by key for deterministic errors.
func (n node) object() ([]field, bool) {
	var out []field
	if n.y != nil {
		if n.y.Kind != yaml.MappingNode {
			return nil, false
		}
		for i := 0; i+1 < len(n.y.Content); i += 2 {
			out = append(out, field{key: n.y.Content[i].Value, val: node{y: resolve(n.y.Content[i+1])}})
		}
	} else {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(n.j, &m); err != nil || m == nil {
			return nil, false
		}
		for k, v := range m {
			out = append(out, field{key: k, val: node{j: v}})
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].key < out[b].key })
	return out, true
}

// array returns the elements of a list.
func (n node) array() ([]node, bool) {
	if n.y != nil {
		if n.y.Kind != yaml.SequenceNode {
			return nil, false
		}
		out := make([]node, len(n.y.Content))
		for i, c := range n.y.Content {
			out[i] = node{y: resolve(c), inArray: true}
		}
		return out, true
	}
	var list []json.RawMessage
	if err := json.Unmarshal(n.j, &list); err != nil {
		return nil, false
	}
	out := make([]node, len(list))
	for i, r := range list {
		out[i] = node{j: r, inArray: true}
	}
	return out, true
}

func (n node) decode(v any) (err error) {
	if n.y != nil {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("yaml: %v", r)
			}
		}()
		return n.y.Decode(v)
	}
	return json.Unmarshal(n.j, v)
}

func (n node) str() (string, bool) {
	if n.isNull() {
		return "", true
	}
	if n.y != nil && n.y.Kind != yaml.ScalarNode {
		return "", false
	}
	var s string
	if n.decode(&s) != nil {
		return "", false
	}
	return s, true
}

// resolve follows YAML aliases (at most a few hops; yaml.v3 rejects cycles).
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && n.Alias != nil && i < 8; i++ {
		n = n.Alias
	}
	return n
}

func jsonNodes(data []byte) ([]node, *ValidationError) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, &ValidationError{Index: -1, Problem: "empty file"}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, &ValidationError{Index: -1, Problem: jsonSyntaxProblem(data, err)}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &ValidationError{Index: -1, Problem: "invalid JSON: data after the top-level value"}
	}
	top := node{j: raw}
	switch trimmed[0] {
	case '{':
		return []node{top}, nil
	case '[':
		list, _ := top.array()
		if len(list) == 0 {
			return nil, &ValidationError{Index: -1, Problem: "empty array"}
		}
		return list, nil
	}
	return nil, &ValidationError{Index: -1, Problem: "not a procedure object or an array of them"}
}

func jsonSyntaxProblem(data []byte, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off := min(int(se.Offset), len(data))
		line := 1 + bytes.Count(data[:off], []byte("\n"))
		return fmt.Sprintf("invalid JSON at line %d: %v", line, se)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "invalid JSON: unexpected end of file"
	}
	return "invalid JSON: " + err.Error()
}

func yamlNodes(data []byte) (nodes []node, verr *ValidationError) {
	defer func() {
		if r := recover(); r != nil {
			nodes, verr = nil, &ValidationError{Index: -1, Problem: fmt.Sprintf("invalid YAML: %v", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []node
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, &ValidationError{Index: -1, Problem: "invalid YAML: " + err.Error()}
		}
		if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
			continue
		}
		top := resolve(doc.Content[0])
		switch top.Kind {
		case yaml.MappingNode:
			out = append(out, node{y: top})
		case yaml.SequenceNode:
			list, _ := node{y: top}.array()
			out = append(out, list...)
		case yaml.ScalarNode:
			if top.Tag == "!!null" {
				continue
			}
			fallthrough
		default:
			return nil, &ValidationError{Index: -1, Problem: "not a procedure mapping or a sequence of them"}
		}
	}
	if len(out) == 0 {
		return nil, &ValidationError{Index: -1, Problem: "empty file"}
	}
	if len(out) > 1 {
		for i := range out {
			out[i].inArray = true
		}
	}
	return out, nil
}

// build decodes one procedure field by field so that errors name the field at fault.
func build(n node, strict bool) (Procedure, *ValidationError) {
	var s Procedure
	fields, ok := n.object()
	if !ok {
		return s, &ValidationError{Problem: "not a procedure object"}
	}
	// Decode the name first so that later errors can carry it.
	for _, f := range fields {
		if strings.EqualFold(f.key, "name") {
			v, ok := f.val.str()
			if !ok {
				return s, &ValidationError{Field: "name", Problem: "must be a string"}
			}
			s.Name = v
		}
	}
	for _, f := range fields {
		key := strings.ToLower(f.key)
		switch key {
		case "name":
		case "description", "category":
			v, ok := f.val.str()
			if !ok {
				return s, &ValidationError{Field: key, Problem: "must be a string"}
			}
			if key == "description" {
				s.Description = v
			} else {
				s.Category = v
			}
		case "trigger":
			if err := f.val.decode(&s.Trigger); err != nil {
				return s, &ValidationError{Field: key, Problem: "must be a string or a list of strings"}
			}
		case "priority":
			if f.val.isNull() {
				continue
			}
			var p float64
			if err := f.val.decode(&p); err != nil || math.IsNaN(p) {
				return s, &ValidationError{Field: key, Problem: "must be a number"}
			}
			if p < MinPriority || p > MaxPriority {
				return s, &ValidationError{Field: key,
					Problem: fmt.Sprintf("%v is outside %d..%d", p, MinPriority, MaxPriority)}
			}
			if p != math.Trunc(p) {
				return s, &ValidationError{Field: key, Problem: fmt.Sprintf("%v is not an integer", p)}
			}
			s.Priority = int(p)
		case "steps":
			steps, verr := buildSteps(f.val, strict)
			if verr != nil {
				return s, verr
			}
			s.Steps = steps
		default:
			if strict {
				return s, &ValidationError{Field: f.key, Problem: "unknown field"}
			}
		}
	}
	return s, nil
}

func buildSteps(n node, strict bool) ([]Step, *ValidationError) {
	if n.isNull() {
		return nil, nil
	}
	list, ok := n.array()
	if !ok {
		return nil, &ValidationError{Field: "steps", Problem: "must be a list of steps"}
	}
	steps := make([]Step, 0, len(list))
	for i, e := range list {
		// A bare string is a step with only an action.
		if a, ok := e.str(); ok && !e.isNull() {
			steps = append(steps, Step{Action: a})
			continue
		}
		fields, ok := e.object()
		if !ok {
			return nil, &ValidationError{Field: fmt.Sprintf("steps[%d]", i), Problem: "must be an object or a string"}
		}
		var st Step
		for _, f := range fields {
			key := strings.ToLower(f.key)
			switch key {
			case "action", "condition":
				v, ok := f.val.str()
				if !ok {
					return nil, &ValidationError{Field: fmt.Sprintf("steps[%d].%s", i, key), Problem: "must be a string"}
				}
				if key == "action" {
					st.Action = v
				} else {
					st.Condition = v
				}
			default:
				if strict {
					return nil, &ValidationError{Field: fmt.Sprintf("steps[%d].%s", i, f.key), Problem: "unknown field"}
				}
			}
		}
		steps = append(steps, st)
	}
	return steps, nil
}
