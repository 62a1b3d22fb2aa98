package proxy

import (
	"cmp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/knftables"
)

// elementTable is what the shared sets and maps hold, and which Services claim each
// element. Two Services may claim one key (two Services with one external IP and port, two
// ports whose endpoints meet in the hairpin set): the element is written once, with the
// value of the claim of the Service whose name sorts first, and it stays until no Service
// claims it; when that Service lets go, the next one's value takes its place. So no input
// makes a transaction add an element twice, which nft refuses.
type elementTable struct {
	entries map[elemKey]*elemEntry
}

type elemEntry struct {
	claims map[types.NamespacedName]string
	// written is the value in the table, when present.
	written string
	present bool
}

func newElementTable() *elementTable { return &elementTable{entries: map[elemKey]*elemEntry{}} }

// reset forgets everything: the containers are being flushed.
func (t *elementTable) reset() { clear(t.entries) }

// replace makes owner claim exactly the elements of next (instead of those of prev) and
// returns the keys whose element may have to change.
func (t *elementTable) replace(owner types.NamespacedName, prev, next map[elemKey]string) []elemKey {
	var touched []elemKey
	for k := range prev {
		if _, keep := next[k]; keep {
			continue
		}
		if e := t.entries[k]; e != nil {
			delete(e.claims, owner)
			touched = append(touched, k)
		}
	}
	for k, v := range next {
		e := t.entries[k]
		if e == nil {
			e = &elemEntry{claims: map[types.NamespacedName]string{}}
			t.entries[k] = e
		}
		if old, ok := e.claims[owner]; ok && old == v && e.present {
			continue
		}
		e.claims[owner] = v
		touched = append(touched, k)
	}
	return touched
}

// write adds to tx what makes the elements of keys match their claims, in a stable order.
func (t *elementTable) write(tx *knftables.Transaction, keys []elemKey) {
	slices.SortFunc(keys, func(a, b elemKey) int {
		return cmp.Or(strings.Compare(a.container, b.container), strings.Compare(a.key, b.key))
	})
	keys = slices.Compact(keys)
	for _, k := range keys {
		e := t.entries[k]
		if e == nil {
			continue
		}
		want, wanted := e.winner()
		switch {
		case !wanted && e.present:
			tx.Delete(elementKey(k))
		case wanted && !e.present:
			tx.Add(element(k, want))
		case wanted && e.written != want:
			tx.Delete(elementKey(k))
			tx.Add(element(k, want))
		}
		e.written, e.present = want, wanted
		if !wanted {
			delete(t.entries, k)
		}
	}
}

// winner is the value of the claim of the Service that sorts first.
func (e *elemEntry) winner() (string, bool) {
	var best types.NamespacedName
	found := false
	for owner := range e.claims {
		if !found || owner.String() < best.String() {
			best, found = owner, true
		}
	}
	return e.claims[best], found
}

func element(k elemKey, value string) *knftables.Element {
	el := elementKey(k)
	if el.Map != "" {
		el.Value = []string{value}
	}
	return el
}

// elementKey is the element of k without its value, as a delete names it.
func elementKey(k elemKey) *knftables.Element {
	if isSet(k.container) {
		return &knftables.Element{Set: k.container, Key: k.parts()}
	}
	return &knftables.Element{Map: k.container, Key: k.parts()}
}
