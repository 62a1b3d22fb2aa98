package container

import "testing"

func TestExpand(t *testing.T) {
	vars := map[string]string{"VAR_A": "A", "VAR_B": "B", "EMPTY": "", "NESTED": "$(VAR_A)", "DOLLAR": "$"}
	tests := []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"$(VAR_A)", "A"},
		{"___$(VAR_A)___", "___A___"},
		{"$(VAR_A)$(VAR_B)", "AB"},
		{"$(VAR_A)-$(VAR_B)-$(VAR_A)", "A-B-A"},
		{"$(EMPTY)", ""},
		{"$(MISSING)", "$(MISSING)"},
		{"x$(MISSING)y$(VAR_A)", "x$(MISSING)yA"},
		{"$$(VAR_A)", "$(VAR_A)"}, // escaped
		{"$$$(VAR_A)", "$A"},
		{"$$$$(VAR_A)", "$$(VAR_A)"},
		{"$$", "$"},
		{"$$$", "$$"},
		{"$", "$"},
		{"a$", "a$"},
		{"$VAR_A", "$VAR_A"},      // not a reference
		{"$x$(VAR_A)", "$xA"},     // "$" before anything else stays
		{"$(VAR_A", "$(VAR_A"},    // unterminated
		{"$(", "$("},              // unterminated
		{"$()", "$()"},            // empty name: undefined
		{"$(NESTED)", "$(VAR_A)"}, // values are not expanded again
		{"$(DOLLAR)(VAR_A)", "$(VAR_A)"},
		{"$($(VAR_A))", "$($(VAR_A))"}, // the name is "$(VAR_A": undefined; then ")"
		{"héllo $(VAR_A) wörld", "héllo A wörld"},
		{"$é", "$é"},
	}
	lookup := LookupIn(vars)
	for _, tt := range tests {
		if got := Expand(tt.in, lookup); got != tt.want {
			t.Errorf("Expand(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLookupInOrder(t *testing.T) {
	lookup := LookupIn(map[string]string{"A": "first"}, map[string]string{"A": "second", "B": "b"})
	if v, _ := lookup("A"); v != "first" {
		t.Errorf("A = %q, want the first map's", v)
	}
	if v, ok := lookup("B"); !ok || v != "b" {
		t.Errorf("B = %q, %v", v, ok)
	}
	if _, ok := lookup("C"); ok {
		t.Errorf("C found")
	}
}
