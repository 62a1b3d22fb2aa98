package parallelize

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/berth-cluster/berth/pkg/scheduler/metrics"
)

func TestChunkSizeFor(t *testing.T) {
	tests := []struct {
		n, parallelism, want int
	}{
		{n: 0, parallelism: 16, want: 1},
		{n: 1, parallelism: 16, want: 1},
		{n: 10, parallelism: 16, want: 1},    // sqrt 3, n/p+1 = 1
		{n: 100, parallelism: 16, want: 7},   // sqrt 10, n/p+1 = 7
		{n: 1000, parallelism: 16, want: 31}, // sqrt 31, n/p+1 = 63
		{n: 5000, parallelism: 16, want: 70},
		{n: 5000, parallelism: 1, want: 70},
		{n: 1000000, parallelism: 16, want: 1000},
	}
	for _, tt := range tests {
		if got := chunkSizeFor(tt.n, tt.parallelism); got != tt.want {
			t.Errorf("chunkSizeFor(%d, %d) = %d, want %d", tt.n, tt.parallelism, got, tt.want)
		}
	}
}

func TestUntilCoversEveryPieceOnce(t *testing.T) {
	for _, tt := range []struct {
		name                string
		pieces, parallelism int
	}{
		{"none", 0, 16},
		{"one", 1, 16},
		{"fewer than workers", 7, 16},
		{"one worker", 1000, 1},
		{"uneven chunks", 1001, 16},
		{"many", 5000, 16},
		{"default parallelism", 333, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			counts := make([]atomic.Int32, tt.pieces)
			NewParallelizer(tt.parallelism).Until(context.Background(), tt.pieces, func(i int) {
				counts[i].Add(1)
			}, "test")
			for i := range counts {
				if c := counts[i].Load(); c != 1 {
					t.Fatalf("piece %d ran %d times", i, c)
				}
			}
		})
	}
}

func TestUntilStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ran atomic.Int32
	const pieces = 10000
	NewParallelizer(4).Until(ctx, pieces, func(i int) {
		if ran.Add(1) == 10 {
			cancel()
		}
	}, "test")
	// Each worker may finish the piece it is on; none starts another once it sees the cancel.
	if n := ran.Load(); n >= pieces/2 {
		t.Errorf("ran %d of %d pieces after cancel", n, pieces)
	}

	ran.Store(0)
	NewParallelizer(4).Until(ctx, pieces, func(int) { ran.Add(1) }, "test")
	if n := ran.Load(); n != 0 {
		t.Errorf("already cancelled: ran %d pieces", n)
	}
}

func TestUntilGoroutinesMetric(t *testing.T) {
	g := metrics.Goroutines.WithLabelValues("metric-test")
	var during float64
	NewParallelizer(4).Until(context.Background(), 100, func(i int) {
		if i == 0 {
			during = testutil.ToFloat64(g)
		}
	}, "metric-test")
	// Workers are capped at the Go runtime's processors.
	want := float64(min(4, runtime.GOMAXPROCS(0)))
	if during != want {
		t.Errorf("goroutines while running = %v, want %v", during, want)
	}
	if after := testutil.ToFloat64(g); after != 0 {
		t.Errorf("goroutines after = %v, want 0", after)
	}
}

func TestResultChannelKeepsFirst(t *testing.T) {
	r := NewResultChannel[error]()
	if got := r.Receive(); got != nil {
		t.Fatalf("empty channel returned %v", got)
	}
	first, second := errors.New("first"), errors.New("second")
	cancelled := false
	r.SendWithCancel(first, func() { cancelled = true })
	r.Send(second)
	if got := r.Receive(); got != first {
		t.Errorf("Receive() = %v, want first", got)
	}
	if !cancelled {
		t.Error("SendWithCancel did not cancel")
	}
}

func TestUntilRaisesAWorkersPanicInTheCaller(t *testing.T) {
	var ran atomic.Int32
	var got any
	func() {
		defer func() { got = recover() }()
		NewParallelizer(4).Until(context.Background(), 1000, func(i int) {
			ran.Add(1)
			if i == 500 {
				panic("boom")
			}
		}, "test")
	}()
	wp, ok := got.(*WorkerPanic)
	if !ok {
		t.Fatalf("recovered %v (%T), want a *WorkerPanic", got, got)
	}
	if wp.String() != "boom" || len(wp.Stack) == 0 {
		t.Errorf("WorkerPanic = %q with %d bytes of stack, want boom and the worker's stack", wp.String(), len(wp.Stack))
	}
	if n := ran.Load(); n == 1000 {
		t.Logf("every piece ran before the panic stopped the work (possible with a fast worker)")
	}
}
