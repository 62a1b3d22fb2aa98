package podworkers

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// WorkQueue holds pods to sync again at a time: a worker enqueues its pod after each sync (the
// resync interval on success, the back-off on error) and syncLoop's syncCh takes the due pods
// every second.
type WorkQueue interface {
	// GetWork removes and returns the pods that are due.
	GetWork() []types.UID
	// Enqueue makes uid due after delay, replacing an earlier entry of it.
	Enqueue(uid types.UID, delay time.Duration)
}

type workQueue struct {
	clock clock.Clock
	mu    sync.Mutex
	due   map[types.UID]time.Time
}

// NewWorkQueue returns an empty work queue on clk.
func NewWorkQueue(clk clock.Clock) WorkQueue {
	return &workQueue{clock: clk, due: map[types.UID]time.Time{}}
}

func (q *workQueue) GetWork() []types.UID {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	var uids []types.UID
	for uid, t := range q.due {
		if !t.After(now) {
			uids = append(uids, uid)
			delete(q.due, uid)
		}
	}
	return uids
}

func (q *workQueue) Enqueue(uid types.UID, delay time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.due[uid] = q.clock.Now().Add(delay)
}
