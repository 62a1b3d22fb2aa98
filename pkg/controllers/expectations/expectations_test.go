package expectations

import (
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

const key = "default/web"

func TestNoRecordIsSatisfied(t *testing.T) {
	e := New()
	if !e.Satisfied(key) {
		t.Fatal("a key without a record must be satisfied")
	}
	// Observations of a key without a record create none.
	e.CreationObserved(key)
	e.DeletionObserved(key, "a")
	if _, _, ok := e.Pending(key); ok {
		t.Fatal("an observation created a record")
	}
}

func TestCreations(t *testing.T) {
	e := New()
	e.ExpectCreations(key, 3)
	for i := range 2 {
		e.CreationObserved(key)
		if e.Satisfied(key) {
			t.Fatalf("satisfied after %d of 3 creations", i+1)
		}
	}
	e.CreationObserved(key)
	if !e.Satisfied(key) {
		t.Fatal("not satisfied after all 3 creations")
	}
	// More creations than expected (an adoption) stay satisfied.
	e.CreationObserved(key)
	if !e.Satisfied(key) {
		t.Fatal("an extra creation unsatisfied the key")
	}
}

func TestLowerCreations(t *testing.T) {
	e := New()
	e.ExpectCreations(key, 5)
	e.CreationObserved(key)
	e.CreationObserved(key)
	e.LowerCreations(key, 2) // two creates failed
	if adds, _, _ := e.Pending(key); adds != 1 || e.Satisfied(key) {
		t.Fatalf("pending adds %d, satisfied %v; want 1, false", adds, e.Satisfied(key))
	}
	e.LowerCreations(key, 1)
	if !e.Satisfied(key) {
		t.Fatal("not satisfied once every create was observed or lowered")
	}
}

func TestDeletionsTrackUIDs(t *testing.T) {
	e := New()
	e.ExpectDeletions(key, []types.UID{"a", "b"})
	e.DeletionObserved(key, "other")
	if _, dels, _ := e.Pending(key); dels != 2 {
		t.Fatalf("an unexpected uid changed the pending deletions to %d", dels)
	}
	e.DeletionObserved(key, "a")
	// The same pod seen twice (marked for deletion, then removed) counts once.
	e.DeletionObserved(key, "a")
	if e.Satisfied(key) {
		t.Fatal("satisfied with b's deletion unobserved")
	}
	e.DeletionObserved(key, "b")
	if !e.Satisfied(key) {
		t.Fatal("not satisfied after both deletions")
	}
}

func TestLowerDeletions(t *testing.T) {
	e := New()
	e.ExpectDeletions(key, []types.UID{"a", "b", "c"})
	e.LowerDeletions(key, []types.UID{"b", "c"})
	if _, dels, _ := e.Pending(key); dels != 1 {
		t.Fatalf("pending deletions %d, want 1", dels)
	}
	e.LowerDeletions(key, []types.UID{"a"})
	if !e.Satisfied(key) {
		t.Fatal("not satisfied once every delete was lowered")
	}
}

func TestExpectReplaces(t *testing.T) {
	e := New()
	e.ExpectDeletions(key, []types.UID{"a"})
	e.ExpectCreations(key, 1)
	adds, dels, _ := e.Pending(key)
	if adds != 1 || dels != 0 {
		t.Fatalf("pending %d adds, %d dels; want the new record's 1, 0", adds, dels)
	}
	e.CreationObserved(key)
	if !e.Satisfied(key) {
		t.Fatal("the replaced deletion is still waited for")
	}
}

func TestExpiry(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := NewWithClock(clock)
	e.ExpectCreations(key, 1)

	clock.SetTime(clock.Now().Add(Timeout))
	if e.Satisfied(key) {
		t.Fatal("satisfied at exactly the timeout; upstream expires only past it")
	}
	clock.SetTime(clock.Now().Add(time.Second))
	if !e.Satisfied(key) {
		t.Fatal("not satisfied past the timeout")
	}

	// A new expectation restarts the clock.
	e.ExpectDeletions(key, []types.UID{"a"})
	if e.Satisfied(key) {
		t.Fatal("a fresh record counts as expired")
	}
}

func TestDelete(t *testing.T) {
	e := New()
	e.ExpectCreations(key, 2)
	e.ExpectCreations("default/other", 1)
	e.Delete(key)
	if !e.Satisfied(key) {
		t.Fatal("a deleted record still waits")
	}
	if e.Satisfied("default/other") {
		t.Fatal("deleting one key's record satisfied another's")
	}
}

// TestConcurrentUse runs a sync's and informer handlers' calls at once (go test -race finds
// unguarded state).
func TestConcurrentUse(t *testing.T) {
	e := New()
	e.ExpectCreations(key, 100)
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			e.CreationObserved(key)
			e.Satisfied(key)
		})
	}
	wg.Wait()
	if !e.Satisfied(key) {
		adds, _, _ := e.Pending(key)
		t.Fatalf("%d creations lost", adds)
	}
}
