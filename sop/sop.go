// Package sop is procedural memory for agents: standard operating procedures (SOPs) that say
// how to do a kind of task, step by step, and the machinery to load, validate, match and
// render them.
//
// A procedure is a small JSON (or YAML) document:
//
//	{"name": "debug_python_code",
//	 "description": "Find and fix the cause of a bug in Python code.",
//	 "trigger": "debug, bug, error, not working",
//	 "category": "coding",
//	 "priority": 8,
//	 "steps": [{"action": "Reproduce the problem."},
//	           {"action": "Run the tests again.", "condition": "fix proposed"}]}
//
// "trigger" is a comma-separated string or a list of strings. A file holds one procedure or
// an array of them. A [Library] holds procedures by unique name, loads and saves directories
// of them, and matches a user query against their triggers ([Library.Match]); [Render] turns
// a procedure into prompt text.
package sop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

var (
	_ json.Unmarshaler = (*Triggers)(nil)
	_ json.Marshaler   = Triggers(nil)
	_ yaml.Unmarshaler = (*Triggers)(nil)
	_ error            = (*ValidationError)(nil)
)

// MinPriority and MaxPriority bound Procedure.Priority.
const (
	MinPriority = 0
	MaxPriority = 10
)

// maxNameLen bounds the length of a procedure name in bytes.
const maxNameLen = 200

// Step is one step of a procedure. A step with a Condition applies only when the condition
// holds (for example "fix proposed").
type Step struct {
	Action    string `json:"action" yaml:"action"`
	Condition string `json:"condition,omitempty" yaml:"condition,omitempty"`
}

// Triggers are the words and phrases that select a procedure. In a file they are either one
// comma-separated string ("debug, bug, error") or a list of strings; they are written back
// as a comma-separated string when no trigger contains a comma, else as a list.
//
// A trigger matches a query on word boundaries, ignoring case and accents and simple
// inflections ("errors" matches "error"); a multi-word trigger matches the same words in a
// row. A trailing "*" on a word makes it a prefix ("debug*" matches "debugger").
type Triggers []string

// splitTriggers splits a comma-separated trigger string, trimming blanks and dropping empty
// entries.
func splitTriggers(s string) Triggers {
	var out Triggers
	for part := range strings.SplitSeq(s, ",") {
		if p := strings.TrimSpace(part); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// UnmarshalJSON accepts a comma-separated string, a list of strings or null.
func (t *Triggers) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*t = nil
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*t = splitTriggers(s)
		return nil
	case len(b) > 0 && b[0] == '[':
		var list []string
		if err := json.Unmarshal(b, &list); err != nil {
			return errors.New("must be a string or a list of strings")
		}
		*t = cleanList(list)
		return nil
	}
	return errors.New("must be a string or a list of strings")
}

// MarshalJSON writes a comma-separated string, or a list when a trigger contains a comma.
func (t Triggers) MarshalJSON() ([]byte, error) {
	for _, s := range t {
		if strings.Contains(s, ",") {
			return json.Marshal([]string(t))
		}
	}
	return json.Marshal(strings.Join(t, ", "))
}

// UnmarshalYAML accepts a scalar (comma-separated) or a sequence of scalars.
func (t *Triggers) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			*t = nil
			return nil
		}
		*t = splitTriggers(n.Value)
		return nil
	case yaml.SequenceNode:
		list := make([]string, 0, len(n.Content))
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode {
				return errors.New("must be a string or a list of strings")
			}
			list = append(list, c.Value)
		}
		*t = cleanList(list)
		return nil
	}
	return errors.New("must be a string or a list of strings")
}

func cleanList(list []string) Triggers {
	var out Triggers
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Procedure is one standard operating procedure.
type Procedure struct {
	// Name identifies the procedure in its library (required, unique).
	Name string `json:"name" yaml:"name"`
	// Description says what the procedure is for.
	Description string `json:"description,omitempty" yaml:"description,omitempty"`
	// Trigger lists the words and phrases that select the procedure.
	Trigger Triggers `json:"trigger" yaml:"trigger"`
	// Category groups procedures ("coding", "devops").
	Category string `json:"category,omitempty" yaml:"category,omitempty"`
	// Priority, 0..10, breaks ties between matching procedures (higher first) and adds
	// 0.5 per point to the match score.
	Priority int `json:"priority" yaml:"priority"`
	// Steps are the procedure itself, in order (at least one).
	Steps []Step `json:"steps" yaml:"steps"`
}

// Clone returns a deep copy of s.
func (s Procedure) Clone() Procedure {
	s.Trigger = append(Triggers(nil), s.Trigger...)
	s.Steps = append([]Step(nil), s.Steps...)
	return s
}

// Validate checks s and returns a *ValidationError (with an empty File) for its first
// problem, or nil.
func (s Procedure) Validate() error {
	if p := s.problem(); p != nil {
		p.Name, p.Index = s.Name, -1
		return p
	}
	return nil
}

func (s Procedure) problem() *ValidationError {
	name := strings.TrimSpace(s.Name)
	switch {
	case name == "":
		return &ValidationError{Field: "name", Problem: "missing name"}
	case len(s.Name) > maxNameLen:
		return &ValidationError{Field: "name", Problem: fmt.Sprintf("longer than %d bytes", maxNameLen)}
	case !utf8.ValidString(s.Name) || strings.IndexFunc(s.Name, unicode.IsControl) >= 0:
		return &ValidationError{Field: "name", Problem: "contains invalid or control characters"}
	case name != s.Name:
		return &ValidationError{Field: "name", Problem: "has leading or trailing blanks"}
	case s.Priority < MinPriority || s.Priority > MaxPriority:
		return &ValidationError{Field: "priority",
			Problem: fmt.Sprintf("%d is outside %d..%d", s.Priority, MinPriority, MaxPriority)}
	case len(s.Steps) == 0:
		return &ValidationError{Field: "steps", Problem: "no steps"}
	}
	for i, st := range s.Steps {
		if strings.TrimSpace(st.Action) == "" {
			return &ValidationError{Field: fmt.Sprintf("steps[%d].action", i), Problem: "empty action"}
		}
	}
	return nil
}

// ValidationError describes one invalid procedure: the file it came from (empty when it did
// not come from a file), its position in that file's array (-1 for a single procedure or
// the whole file), its name when known, the field at fault ("priority", "steps[2].action";
// empty for the whole file) and the problem.
type ValidationError struct {
	File    string
	Index   int
	Name    string
	Field   string
	Problem string
	// Err is a more specific sentinel (ErrDuplicateName) or nil.
	Err error
}

// Error formats the problem as "sop: FILE: [INDEX] NAME: FIELD: PROBLEM", leaving out
// what is unknown.
func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("sop: ")
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if e.Index >= 0 && e.File != "" {
		fmt.Fprintf(&b, "[%d] ", e.Index)
	}
	if e.Name != "" {
		fmt.Fprintf(&b, "procedure %q: ", e.Name)
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Problem)
	return b.String()
}

// Is reports whether target is ErrInvalid or the more specific Err.
func (e *ValidationError) Is(target error) bool {
	return target == ErrInvalid || (e.Err != nil && target == e.Err)
}
