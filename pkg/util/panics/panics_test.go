package panics

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

func TestCallTurnsAPanicIntoAnErrorAndCountsIt(t *testing.T) {
	before := testutil.ToFloat64(Recovered.WithLabelValues("test"))
	var m map[string]int
	err := Call(context.Background(), "test", func() error { m["x"] = 1; return nil })
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("Call returned %v, want a *panics.Error", err)
	}
	if pe.Component != "test" || len(pe.Stack) == 0 {
		t.Errorf("error = %+v, want the component and a stack", pe)
	}
	if got := testutil.ToFloat64(Recovered.WithLabelValues("test")); got != before+1 {
		t.Errorf("berth_recovered_panics_total{component=test} = %v, want %v", got, before+1)
	}
	if err := Call(context.Background(), "test", func() error { return errors.New("plain") }); err == nil || err.Error() != "plain" {
		t.Errorf("Call of a plain error returned %v", err)
	}
}

func TestForeverRestartsAPanickingLoopUntilTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	runs := 0
	Forever(ctx, "test-loop", func(ctx context.Context) {
		runs++
		if runs == 2 {
			cancel()
			return
		}
		panic("boom")
	})
	if runs != 2 {
		t.Errorf("the loop ran %d times, want 2 (a panic, then a run that ends the context)", runs)
	}
}

func TestContainLibraryPanicsRecoversHandleCrash(t *testing.T) {
	reallyCrash, handlers := utilruntime.ReallyCrash, utilruntime.PanicHandlers
	t.Cleanup(func() { utilruntime.ReallyCrash, utilruntime.PanicHandlers = reallyCrash, handlers })
	ContainLibraryPanics()
	before := testutil.ToFloat64(Recovered.WithLabelValues("library"))
	func() {
		defer utilruntime.HandleCrash()
		panic("in a library goroutine")
	}()
	if got := testutil.ToFloat64(Recovered.WithLabelValues("library")); got != before+1 {
		t.Errorf("berth_recovered_panics_total{component=library} = %v, want %v", got, before+1)
	}
	// An aborted HTTP response is no panic to count (and utilruntime logs no stack for it).
	func() {
		defer utilruntime.HandleCrash()
		panic(http.ErrAbortHandler)
	}()
	if got := testutil.ToFloat64(Recovered.WithLabelValues("library")); got != before+1 {
		t.Errorf("after http.ErrAbortHandler berth_recovered_panics_total{component=library} = %v, want %v", got, before+1)
	}
}
