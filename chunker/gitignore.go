package chunker

import (
	"path"
	"strings"
)

// ignore matches paths against .gitignore rules. Rules from several files stack: a file's
// rules apply below its directory, later rules override earlier ones, and "!" re-includes.
// The zero value ignores nothing.
type ignore struct {
	rules []ignoreRule
}

type ignoreRule struct {
	base     string   // directory of the .gitignore, slash-separated, relative ("" = root)
	segs     []string // pattern split at "/"
	negate   bool
	dirOnly  bool
	anchored bool // the pattern holds a slash before its end: match from base
}

// Add parses the content of a .gitignore found in directory dir (slash-separated, relative
// to the walk root, "" for the root).
func (ig *ignore) Add(dir, content string) {
	dir = strings.Trim(dir, "/")
	for _, line := range strings.Split(content, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		// trailing spaces are ignored unless escaped
		for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, "\\ ") {
			line = line[:len(line)-1]
		}
		r := ignoreRule{base: dir}
		if strings.HasPrefix(line, "!") {
			r.negate = true
			line = line[1:]
		} else if strings.HasPrefix(line, "\\!") || strings.HasPrefix(line, "\\#") {
			line = line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly = true
			line = strings.TrimRight(line, "/")
		}
		if line == "" {
			continue
		}
		if strings.Contains(line, "/") {
			r.anchored = true
			line = strings.TrimPrefix(line, "/")
		}
		if line == "" {
			continue
		}
		line = strings.ReplaceAll(line, "[!", "[^")
		r.segs = strings.Split(line, "/")
		if !r.anchored && r.segs[0] != "**" {
			// a bare name matches at any depth
			r.segs = append([]string{"**"}, r.segs...)
		}
		ig.rules = append(ig.rules, r)
	}
}

// Match reports whether rel (slash-separated, relative to the walk root) is ignored, by its
// own rules or because a directory above it is; isDir says whether it is a directory.
func (ig *ignore) Match(rel string, isDir bool) bool {
	rel = strings.Trim(rel, "/")
	for i := 0; i < len(rel); i++ {
		if rel[i] == '/' && ig.match(rel[:i], true) {
			return true
		}
	}
	return ig.match(rel, isDir)
}

func (ig *ignore) match(rel string, isDir bool) bool {
	ignored := false
	for _, r := range ig.rules {
		if r.dirOnly && !isDir {
			continue
		}
		sub := rel
		if r.base != "" {
			if !strings.HasPrefix(rel, r.base+"/") {
				continue
			}
			sub = rel[len(r.base)+1:]
		}
		if matchSegs(r.segs, strings.Split(sub, "/")) {
			ignored = !r.negate
		}
	}
	return ignored
}

// matchSegs matches path segments against pattern segments where "**" matches any number
// of segments (a trailing "**" at least one).
func matchSegs(p, s []string) bool {
	for len(p) > 0 {
		if p[0] == "**" {
			rest := p[1:]
			if len(rest) == 0 {
				return len(s) > 0
			}
			for i := 0; i <= len(s); i++ {
				if matchSegs(rest, s[i:]) {
					return true
				}
			}
			return false
		}
		if len(s) == 0 {
			return false
		}
		ok, err := path.Match(p[0], s[0])
		if err != nil || !ok {
			return false
		}
		p, s = p[1:], s[1:]
	}
	return len(s) == 0
}
