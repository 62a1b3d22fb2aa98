// Package expectations is how a controller that creates or deletes pods (ReplicaSet, Job,
// ...) waits for its own writes to reach its informer before it acts again. Between a
// controller's create and the pod's arrival in the shared informer's cache there is a window
// in which a second sync would see too few pods and create more; the controller records what
// it expects (ExpectCreations, ExpectDeletions), its informer handlers record what arrives
// (CreationObserved, DeletionObserved), and a sync acts on the cached pods only once the key
// is Satisfied. This is upstream's ControllerExpectations and
// UIDTrackingControllerExpectations (pkg/controller/controller_utils.go) as one type.
//
// A record's lifecycle, per controller key:
//
//	no record ──Expect*──► waiting ──all observed / Lower*──► fulfilled
//	    ▲                     │                                   │
//	    └────── Delete ───────┴──── older than Timeout: expired ──┘
//
// Satisfied is true in every state but waiting. Expiry guards against a watch event that
// never comes (a dropped delete, say): the controller then wakes up after Timeout and
// recounts rather than sleeping forever. Expect* replaces the record (and restarts its
// clock); it does not add to it.
package expectations

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
)

// Timeout is how long a record waits for its observations before it counts as satisfied:
// upstream's ExpectationsTimeout, sized to the latency of watch events at scale.
const Timeout = 5 * time.Minute

// Expectations records, per controller key ("namespace/name"), the creations and deletions
// a controller is waiting to observe. It is safe for concurrent use: the sync and the
// informer handlers run on different goroutines.
type Expectations struct {
	clock clock.PassiveClock

	mu      sync.Mutex
	records map[string]*record
}

// record is one key's expectations.
type record struct {
	// adds is how many creations are still to be observed; it may go below zero when more
	// pods arrive than were expected (an adoption, say), which counts as fulfilled.
	adds int
	// dels are the UIDs of the pods whose deletion is still to be observed. Tracking UIDs
	// rather than a count is what lets a pod that is first marked for deletion (graceful
	// deletion sets its deletionTimestamp) and later removed count once, not twice.
	dels sets.Set[types.UID]
	// at is when the record was set.
	at time.Time
}

// New returns empty expectations on the real clock.
func New() *Expectations { return NewWithClock(clock.RealClock{}) }

// NewWithClock returns empty expectations whose records expire on c (tests inject a fake).
func NewWithClock(c clock.PassiveClock) *Expectations {
	return &Expectations{clock: c, records: map[string]*record{}}
}

// ExpectCreations records that key waits for n creations, replacing its record.
func (e *Expectations) ExpectCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.records[key] = &record{adds: n, dels: sets.New[types.UID](), at: e.clock.Now()}
}

// ExpectDeletions records that key waits for the deletion of the pods with uids, replacing
// its record.
func (e *Expectations) ExpectDeletions(key string, uids []types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.records[key] = &record{dels: sets.New(uids...), at: e.clock.Now()}
}

// CreationObserved records one creation seen for key (a pod it controls arrived).
func (e *Expectations) CreationObserved(key string) { e.LowerCreations(key, 1) }

// DeletionObserved records that the pod with uid is gone or going for key; a uid key did not
// expect is ignored, so that one pod is counted once however many events tell of it.
func (e *Expectations) DeletionObserved(key string, uid types.UID) {
	e.LowerDeletions(key, []types.UID{uid})
}

// LowerCreations takes n off the creations key waits for: creates that failed or were never
// attempted, whose pods will therefore never be observed.
func (e *Expectations) LowerCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r, ok := e.records[key]; ok {
		r.adds -= n
	}
}

// LowerDeletions stops key waiting for the deletion of the pods with uids (deletes that
// failed, or were observed).
func (e *Expectations) LowerDeletions(key string, uids []types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r, ok := e.records[key]; ok {
		r.dels.Delete(uids...)
	}
}

// Satisfied reports whether key's controller may act on its cached pods: it has no record,
// everything it expected was observed, or its record expired.
func (e *Expectations) Satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.records[key]
	if !ok {
		return true
	}
	return r.fulfilled() || e.clock.Since(r.at) > Timeout
}

// Pending returns what key still waits for: the creations and the number of deletions, and
// whether it has a record at all (for logs and tests).
func (e *Expectations) Pending(key string) (adds, dels int, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.records[key]
	if !ok {
		return 0, 0, false
	}
	return r.adds, r.dels.Len(), true
}

// Delete forgets key's record (its controller was deleted).
func (e *Expectations) Delete(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.records, key)
}

func (r *record) fulfilled() bool { return r.adds <= 0 && r.dels.Len() == 0 }
