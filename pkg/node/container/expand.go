package container

import "strings"

// Expand replaces the $(VAR) references in s the way Kubernetes does in command, args and
// env values:
//
//   - $(VAR) becomes lookup(VAR) when it is defined, and stays "$(VAR)" when it is not;
//   - $$ is an escaped "$", so "$$(VAR)" is the literal text "$(VAR)";
//   - a "$" before anything else, an unterminated "$(" and a trailing "$" stay as they are.
func Expand(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch next := s[i+1]; next {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// LookupIn looks names up in the maps in order.
func LookupIn(maps ...map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		for _, m := range maps {
			if v, ok := m[name]; ok {
				return v, true
			}
		}
		return "", false
	}
}
