// Package parallelize runs the scheduler's per-node work (Filter in findNodesThatFitPod, Score
// in prioritizeNodes, preemption's dry runs) over a bounded number of goroutines.
//
// The pieces are cut into chunks of about sqrt(pieces) so that a worker takes a chunk at a
// time (one atomic add per chunk, not per piece) while the chunks stay small enough to keep
// every worker busy until the end.
//
// A panic in a worker stops the work and is raised again in the caller's goroutine, once every
// worker has returned: the caller (the framework's Run* method of the plugin that asked for
// the parallel work) recovers it there and turns it into an Error status, which it could not
// do for a panic on another goroutine.
package parallelize

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	"github.com/berth-cluster/berth/pkg/scheduler/metrics"
)

// DefaultParallelism is kube-scheduler's default number of workers.
const DefaultParallelism = 16

// Parallelizer runs work on at most parallelism goroutines.
type Parallelizer struct {
	parallelism int
}

var _ framework.Parallelizer = Parallelizer{}

// NewParallelizer returns a Parallelizer with parallelism workers (DefaultParallelism when
// parallelism is not positive).
func NewParallelizer(parallelism int) Parallelizer {
	if parallelism <= 0 {
		parallelism = DefaultParallelism
	}
	return Parallelizer{parallelism: parallelism}
}

// chunkSizeFor is max(1, min(sqrt(n), n/parallelism+1)).
func chunkSizeFor(n, parallelism int) int {
	s := int(math.Sqrt(float64(n)))
	if r := n/parallelism + 1; s > r {
		s = r
	}
	if s < 1 {
		s = 1
	}
	return s
}

// Until calls do(i) once for every i in [0, pieces), on up to parallelism goroutines, and
// returns when all calls have returned. Once ctx is done no new piece starts. operation labels
// the scheduler_goroutines metric.
func (p Parallelizer) Until(ctx context.Context, pieces int, do func(i int), operation string) {
	if pieces <= 0 {
		return
	}
	parallelism := p.parallelism
	if parallelism <= 0 {
		parallelism = DefaultParallelism
	}
	// The work is CPU-bound: goroutines beyond the Go runtime's processors only add hand-offs.
	if procs := runtime.GOMAXPROCS(0); parallelism > procs {
		parallelism = procs
	}
	chunkSize := chunkSizeFor(pieces, parallelism)
	chunks := (pieces + chunkSize - 1) / chunkSize
	workers := min(chunks, parallelism)

	gauge := metrics.Goroutines.WithLabelValues(operation)
	gauge.Add(float64(workers))
	defer gauge.Add(-float64(workers))

	done := ctx.Done()
	var next atomic.Int64
	var panicked atomic.Pointer[WorkerPanic]
	work := func() {
		defer func() {
			if r := recover(); r != nil {
				panicked.CompareAndSwap(nil, &WorkerPanic{Value: r, Stack: debug.Stack()})
				next.Store(int64(chunks)) // no worker starts another chunk
			}
		}()
		for {
			c := int(next.Add(1) - 1)
			if c >= chunks {
				return
			}
			end := min((c+1)*chunkSize, pieces)
			for i := c * chunkSize; i < end; i++ {
				if done != nil {
					select {
					case <-done:
						return
					default:
					}
				}
				do(i)
			}
		}
	}

	// The caller is one of the workers: one goroutine fewer to start, none for small inputs.
	var wg sync.WaitGroup
	wg.Add(workers - 1)
	for range workers - 1 {
		go func() {
			defer wg.Done()
			work()
		}()
	}
	work()
	wg.Wait()
	if p := panicked.Load(); p != nil {
		panic(p)
	}
}

// WorkerPanic is what Until raises in its caller when do panicked on a worker: the value the
// worker's panic carried and the worker's stack (the caller's stack ends at Until).
type WorkerPanic struct {
	Value any
	Stack []byte
}

// String is the original panic's value, so that a recovered WorkerPanic reads as the panic
// it carries.
func (p *WorkerPanic) String() string { return fmt.Sprint(p.Value) }
