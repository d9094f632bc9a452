// Package tmplkey explains a failed text/template execution over JSON data
// in the data's own words: which key the template reads that the data
// lacks or holds as null. The config loader and the command handler share
// it, so a missing key reads the same at -check and at run time.
package tmplkey

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"
)

// Problem is a key a template reads that its data lacks or holds as null.
type Problem struct {
	Path []string // from the data's top: ["customer"], or ["db", "name"] for {{.db.name}}
	Have []string // when missing: the keys at that level, sorted
	Null bool     // the key is there with the value null
}

// Key is the path of the key, dotted: "db.name".
func (p *Problem) Key() string { return strings.Join(p.Path, ".") }

// Holder says what a missing key's level holds: `it has customer,
// format`, `"db" has no keys`.
func (p *Problem) Holder() string {
	has := "it has "
	if len(p.Path) > 1 {
		has = fmt.Sprintf("%q has ", strings.Join(p.Path[:len(p.Path)-1], "."))
	}
	if len(p.Have) == 0 {
		return has + "no keys"
	}
	return has + strings.Join(p.Have, ", ")
}

// Find returns the first key, in template order, that t reads (.a.b or
// $.a.b) and data lacks or holds as null, or nil. It explains a failed
// Execute; it does not decide whether Execute fails.
func Find(t *template.Template, data map[string]any) *Problem {
	var found *Problem
	walkKeys(t.Tree.Root, false, func(path []string) bool {
		found = lookupKey(data, path)
		return found != nil
	})
	return found
}

// walkKeys calls visit with each key path node reads from the data until
// visit returns true. Inside range and with only $ paths count.
func walkKeys(node parse.Node, rootOnly bool, visit func([]string) bool) bool {
	switch n := node.(type) {
	case *parse.ListNode:
		if n == nil {
			return false
		}
		for _, c := range n.Nodes {
			if walkKeys(c, rootOnly, visit) {
				return true
			}
		}
	case *parse.ActionNode:
		return walkKeys(n.Pipe, rootOnly, visit)
	case *parse.TemplateNode:
		return walkKeys(n.Pipe, rootOnly, visit)
	case *parse.IfNode:
		return walkKeys(n.Pipe, rootOnly, visit) || walkKeys(n.List, rootOnly, visit) || walkKeys(n.ElseList, rootOnly, visit)
	case *parse.RangeNode:
		return walkKeys(n.Pipe, rootOnly, visit) || walkKeys(n.List, true, visit) || walkKeys(n.ElseList, rootOnly, visit)
	case *parse.WithNode:
		return walkKeys(n.Pipe, rootOnly, visit) || walkKeys(n.List, true, visit) || walkKeys(n.ElseList, rootOnly, visit)
	case *parse.PipeNode:
		if n == nil {
			return false
		}
		for _, c := range n.Cmds {
			if walkKeys(c, rootOnly, visit) {
				return true
			}
		}
	case *parse.CommandNode:
		for _, a := range n.Args {
			if walkKeys(a, rootOnly, visit) {
				return true
			}
		}
	case *parse.FieldNode:
		return !rootOnly && visit(n.Ident)
	case *parse.VariableNode:
		return len(n.Ident) > 1 && n.Ident[0] == "$" && visit(n.Ident[1:])
	}
	return false
}

// lookupKey reports path's first missing or null step; a step into a
// non-object is the template's error, not a key problem.
func lookupKey(data map[string]any, path []string) *Problem {
	m := data
	for i, k := range path {
		v, ok := m[k]
		switch {
		case !ok:
			return &Problem{Path: path[:i+1], Have: slices.Sorted(maps.Keys(m))}
		case v == nil:
			return &Problem{Path: path[:i+1], Null: true}
		case i == len(path)-1:
			return nil
		}
		if m, ok = v.(map[string]any); !ok {
			return nil
		}
	}
	return nil
}
