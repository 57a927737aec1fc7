package sop

import (
	"fmt"
	"strings"
)

// RenderContext tunes Render. The zero value renders a title line and the numbered steps.
type RenderContext struct {
	// Query, when set, is shown after the title as "Task: ...".
	Query string
	// Vars replaces each "{{key}}" in actions and conditions by its value; placeholders
	// without a value are left as written.
	Vars map[string]string
	// NoTitle leaves out the title line (name and description).
	NoTitle bool
}

// Render writes the procedure as prompt text: a title line "Procedure NAME: DESCRIPTION",
// the task, then the steps numbered from 1, a conditional step marked "[if CONDITION]":
//
//	Procedure debug_python_code: Find and fix the cause of a bug.
//	1. Reproduce the problem.
//	2. [if fix proposed] Run the tests again.
//
// Continuation lines of a multi-line step are indented under its text.
func Render(s Procedure, ctx RenderContext) string {
	var b strings.Builder
	if !ctx.NoTitle {
		b.WriteString("Procedure ")
		b.WriteString(s.Name)
		if d := oneLine(s.Description); d != "" {
			b.WriteString(": ")
			b.WriteString(d)
		}
		b.WriteByte('\n')
	}
	if q := oneLine(ctx.Query); q != "" {
		b.WriteString("Task: ")
		b.WriteString(q)
		b.WriteByte('\n')
	}
	for i, st := range s.Steps {
		prefix := fmt.Sprintf("%d. ", i+1)
		b.WriteString(prefix)
		if c := oneLine(expand(st.Condition, ctx.Vars)); c != "" {
			b.WriteString("[if ")
			b.WriteString(c)
			b.WriteString("] ")
		}
		lines := strings.Split(strings.TrimSpace(expand(st.Action, ctx.Vars)), "\n")
		indent := strings.Repeat(" ", len(prefix))
		for j, line := range lines {
			line = strings.TrimRight(line, " \t\r")
			if j > 0 {
				b.WriteByte('\n')
				if line != "" {
					b.WriteString(indent)
				}
			}
			b.WriteString(line)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// oneLine trims s and joins its lines with spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// expand replaces "{{key}}" placeholders (with optional blanks inside the braces).
func expand(s string, vars map[string]string) string {
	if len(vars) == 0 || !strings.Contains(s, "{{") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "{{")
		if i < 0 {
			break
		}
		j := strings.Index(s[i+2:], "}}")
		if j < 0 {
			break
		}
		key := strings.TrimSpace(s[i+2 : i+2+j])
		b.WriteString(s[:i])
		if v, ok := vars[key]; ok {
			b.WriteString(v)
		} else {
			b.WriteString(s[i : i+2+j+2])
		}
		s = s[i+2+j+2:]
	}
	b.WriteString(s)
	return b.String()
}
