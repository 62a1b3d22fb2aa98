package portallocator

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apiserver/pkg/storage"
)

// fakeStorage keeps one RangeAllocation at Key. Its GuaranteedUpdate is etcd3's loop: read
// the current object, run tryUpdate on it, and write the result only if nothing was written
// meanwhile; a write in between (queued with conflictWith) makes it read again and run
// tryUpdate again.
type fakeStorage struct {
	mu     sync.Mutex
	stored *corev1.RangeAllocation // nil: nothing stored yet
	rv     int
	// conflicts are writes of another API server, each landing between one run of tryUpdate
	// and its compare-and-swap.
	conflicts []func(*corev1.RangeAllocation)
	tries     int   // tryUpdate runs
	writes    int   // successful writes
	getErr    error // Get and GuaranteedUpdate fail with it
}

func (f *fakeStorage) current() *corev1.RangeAllocation {
	if f.stored == nil {
		return &corev1.RangeAllocation{}
	}
	return f.stored.DeepCopy()
}

func (f *fakeStorage) Get(_ context.Context, key string, opts storage.GetOptions, objPtr runtime.Object) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.getErr != nil {
		return f.getErr
	}
	if key != Key {
		return fmt.Errorf("key %q, want %q", key, Key)
	}
	if f.stored == nil && !opts.IgnoreNotFound {
		return storage.NewKeyNotFoundError(key, 0)
	}
	*objPtr.(*corev1.RangeAllocation) = *f.current()
	return nil
}

func (f *fakeStorage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	_ *storage.Preconditions, tryUpdate storage.UpdateFunc, _ runtime.Object) error {
	if key != Key {
		return fmt.Errorf("key %q, want %q", key, Key)
	}
	for {
		f.mu.Lock()
		if f.getErr != nil {
			f.mu.Unlock()
			return f.getErr
		}
		if f.stored == nil && !ignoreNotFound {
			f.mu.Unlock()
			return storage.NewKeyNotFoundError(key, 0)
		}
		in, rv := f.current(), f.rv
		f.tries++
		f.mu.Unlock()

		out, _, err := tryUpdate(in, storage.ResponseMeta{})
		if err != nil {
			return err
		}

		f.mu.Lock()
		if len(f.conflicts) > 0 {
			other := f.current()
			f.conflicts[0](other)
			f.conflicts = f.conflicts[1:]
			f.stored, f.rv = other, f.rv+1
		}
		if f.rv != rv { // the compare-and-swap fails: read again, try again
			f.mu.Unlock()
			continue
		}
		f.rv++
		f.stored = out.(*corev1.RangeAllocation).DeepCopy()
		f.stored.ResourceVersion = strconv.Itoa(f.rv)
		f.writes++
		*destination.(*corev1.RangeAllocation) = *f.stored.DeepCopy()
		f.mu.Unlock()
		return nil
	}
}

// conflictWith queues writes of another API server.
func (f *fakeStorage) conflictWith(writes ...func(*corev1.RangeAllocation)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.conflicts = append(f.conflicts, writes...)
}

func (f *fakeStorage) stats() (tries, writes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tries, f.writes
}

// set is a write of bitmap ports (of pr) by someone else.
func set(pr net.PortRange, ports ...int) func(*corev1.RangeAllocation) {
	return func(ra *corev1.RangeAllocation) {
		bits := new(big.Int).SetBytes(ra.Data)
		for _, p := range ports {
			bits.SetBit(bits, p-pr.Base, 1)
		}
		ra.Range, ra.Data = pr.String(), bits.Bytes()
	}
}

func mustRange(t *testing.T, s string) net.PortRange {
	t.Helper()
	pr, err := ParseRange(s)
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

// storedPorts are the ports set in the stored bitmap, which must be of pr.
func storedPorts(t *testing.T, f *fakeStorage, pr net.PortRange) []int {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stored == nil {
		return nil
	}
	if f.stored.Range != pr.String() {
		t.Fatalf("stored range %q, want %q", f.stored.Range, pr.String())
	}
	bits := new(big.Int).SetBytes(f.stored.Data)
	var out []int
	for i := range bits.BitLen() {
		if bits.Bit(i) == 1 {
			out = append(out, pr.Base+i)
		}
	}
	return out
}

func has(t *testing.T, a *Allocator, port int) bool {
	t.Helper()
	ok, err := a.Has(context.Background(), port)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func used(t *testing.T, a *Allocator) int {
	t.Helper()
	n, err := a.Used(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestAllocate(t *testing.T) {
	ctx := context.Background()
	store := &fakeStorage{}
	a := New(DefaultRange, store)
	if a.Range() != DefaultRange {
		t.Errorf("Range() = %v", a.Range())
	}
	if used(t, a) != 0 || has(t, a, 30000) {
		t.Fatal("a new allocator has ports allocated")
	}
	for _, p := range []int{30000, 31000, 32767} {
		if err := a.Allocate(ctx, p); err != nil {
			t.Fatalf("Allocate(%d): %v", p, err)
		}
		if !has(t, a, p) {
			t.Errorf("Has(%d) = false after Allocate", p)
		}
	}
	if err := a.Allocate(ctx, 31000); !errors.Is(err, ErrAllocated) || err.Error() != "provided port is already allocated" {
		t.Errorf("second Allocate: %v, want ErrAllocated", err)
	}
	for _, p := range []int{29999, 32768, 80, 0, -1} {
		err := a.Allocate(ctx, p)
		var notInRange *ErrNotInRange
		if !errors.As(err, &notInRange) || err.Error() != "provided port is not in the valid range. The range of valid ports is 30000-32767" {
			t.Errorf("Allocate(%d): %v", p, err)
		}
		if has(t, a, p) {
			t.Errorf("Has(%d) = true outside the range", p)
		}
	}
	if n := used(t, a); n != 3 {
		t.Errorf("Used() = %d, want 3", n)
	}
	if got := storedPorts(t, store, DefaultRange); !slices.Equal(got, []int{30000, 31000, 32767}) {
		t.Errorf("stored %v", got)
	}

	if err := a.Release(ctx, 31000); err != nil {
		t.Fatal(err)
	}
	if has(t, a, 31000) || used(t, a) != 2 {
		t.Error("31000 still allocated after Release")
	}
	for _, p := range []int{31000, 80} { // not allocated, out of range: no error
		if err := a.Release(ctx, p); err != nil {
			t.Errorf("Release(%d): %v", p, err)
		}
	}
	if err := a.Allocate(ctx, 31000); err != nil {
		t.Errorf("Allocate after Release: %v", err)
	}
}

// TestAllocateNext: a range of 100 ports has an offset of 16: 30000-30015 are handed out
// dynamically only once 30016-30099 are all taken; then the range is full.
func TestAllocateNext(t *testing.T) {
	ctx := context.Background()
	pr := mustRange(t, "30000-30099")
	store := &fakeStorage{}
	a := New(pr, store)
	var got []int
	for {
		p, err := a.AllocateNext(ctx)
		if errors.Is(err, ErrFull) {
			if err.Error() != "range is full" {
				t.Errorf("ErrFull reads %q", err)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p)
		if len(got) > 100 {
			t.Fatal("more than 100 ports allocated")
		}
	}
	if len(got) != 100 {
		t.Fatalf("%d ports allocated, want 100", len(got))
	}
	checkPorts(t, got[:84], 30016, 30099)
	checkPorts(t, got[84:], 30000, 30015)
	if n := used(t, a); n != 100 {
		t.Errorf("Used() = %d", n)
	}
	_, writes := store.stats()
	if err := a.Allocate(ctx, 30050); !errors.Is(err, ErrAllocated) {
		t.Errorf("Allocate on a full range: %v", err)
	}
	if _, w := store.stats(); w != writes {
		t.Error("a failed allocation wrote the bitmap")
	}
	if err := a.Release(ctx, 30007); err != nil {
		t.Fatal(err)
	}
	if p, err := a.AllocateNext(ctx); err != nil || p != 30007 {
		t.Errorf("AllocateNext after a Release: %d, %v; want 30007", p, err)
	}
}

// TestAllocateNextFullDefaultRange: the default range's 2768 ports, its offset of 86 last.
func TestAllocateNextFullDefaultRange(t *testing.T) {
	ctx := context.Background()
	a := New(DefaultRange, &fakeStorage{})
	got := make([]int, 0, DefaultRange.Size)
	for range DefaultRange.Size {
		p, err := a.AllocateNext(ctx)
		if err != nil {
			t.Fatalf("after %d: %v", len(got), err)
		}
		got = append(got, p)
	}
	checkPorts(t, got[:2768-86], 30086, 32767)
	checkPorts(t, got[2768-86:], 30000, 30085)
	if _, err := a.AllocateNext(ctx); !errors.Is(err, ErrFull) {
		t.Errorf("AllocateNext on the full range: %v", err)
	}
	if n := used(t, a); n != DefaultRange.Size {
		t.Errorf("Used() = %d", n)
	}
}

func checkPorts(t *testing.T, ports []int, lo, hi int) {
	t.Helper()
	seen := map[int]bool{}
	for _, p := range ports {
		if p < lo || p > hi {
			t.Errorf("port %d outside %d-%d", p, lo, hi)
		}
		if seen[p] {
			t.Errorf("port %d allocated twice", p)
		}
		seen[p] = true
	}
}

// TestRangeOffset: kube-apiserver's offsets, min(max(16, size/32), 128), none for a range
// of 16 ports or fewer.
func TestRangeOffset(t *testing.T) {
	for _, tt := range []struct{ size, want int }{
		{1, 0}, {15, 0}, {16, 0}, {17, 16}, {100, 16}, {512, 16}, {544, 17}, {2768, 86}, {4096, 128}, {65535, 128},
	} {
		if got := rangeOffset(tt.size); got != tt.want {
			t.Errorf("rangeOffset(%d) = %d, want %d", tt.size, got, tt.want)
		}
	}
}

func TestSmallRanges(t *testing.T) {
	ctx := context.Background()
	for _, s := range []string{"30000", "30000-30015"} {
		pr := mustRange(t, s)
		a := New(pr, &fakeStorage{})
		var got []int
		for range pr.Size {
			p, err := a.AllocateNext(ctx)
			if err != nil {
				t.Fatalf("%s: %v", s, err)
			}
			got = append(got, p)
		}
		checkPorts(t, got, pr.Base, pr.Base+pr.Size-1)
		if _, err := a.AllocateNext(ctx); !errors.Is(err, ErrFull) {
			t.Errorf("%s: AllocateNext on the full range: %v", s, err)
		}
	}
}

// TestStoredBitmapOfAnotherRange: after the flag changes, the ports both ranges hold stay
// allocated, the others are dropped, and the next write stores the new range.
func TestStoredBitmapOfAnotherRange(t *testing.T) {
	ctx := context.Background()
	old := mustRange(t, "30000-30099")
	store := &fakeStorage{}
	ra := &corev1.RangeAllocation{}
	set(old, 30005, 30050, 30099)(ra)
	store.stored, store.rv = ra, 1

	pr := mustRange(t, "30050-30149")
	a := New(pr, store)
	if !has(t, a, 30050) || !has(t, a, 30099) || has(t, a, 30005) || has(t, a, 30051) {
		t.Error("the ports both ranges hold are not the only ones allocated")
	}
	if n := used(t, a); n != 2 {
		t.Errorf("Used() = %d, want 2", n)
	}
	if err := a.Allocate(ctx, 30099); !errors.Is(err, ErrAllocated) {
		t.Errorf("Allocate of a carried-over port: %v", err)
	}
	if err := a.Allocate(ctx, 30149); err != nil {
		t.Fatal(err)
	}
	if got := storedPorts(t, store, pr); !slices.Equal(got, []int{30050, 30099, 30149}) {
		t.Errorf("stored %v", got)
	}

	// A bitmap of a range that cannot be parsed is an error, not an empty bitmap.
	store.stored = &corev1.RangeAllocation{Range: "nonsense", Data: []byte{1}}
	if _, err := a.Has(ctx, 30050); err == nil || !strings.Contains(err.Error(), `the stored node port range "nonsense"`) {
		t.Errorf("Has: %v", err)
	}
	if err := a.Allocate(ctx, 30060); err == nil || !strings.Contains(err.Error(), `the stored node port range "nonsense"`) {
		t.Errorf("Allocate: %v", err)
	}
}

func TestStorageErrors(t *testing.T) {
	ctx := context.Background()
	store := &fakeStorage{getErr: apierrors.NewServiceUnavailable("etcd is away")}
	a := New(DefaultRange, store)
	if err := a.Allocate(ctx, 30000); err == nil || !strings.Contains(err.Error(), "updating the node port allocations") {
		t.Errorf("Allocate: %v", err)
	}
	if _, err := a.AllocateNext(ctx); err == nil || errors.Is(err, ErrFull) {
		t.Errorf("AllocateNext: %v", err)
	}
	if _, err := a.Has(ctx, 30000); err == nil || !strings.Contains(err.Error(), "reading the node port allocations") {
		t.Errorf("Has: %v", err)
	}
	if _, err := a.Used(ctx); err == nil {
		t.Error("Used: no error")
	}
	leaks := map[int]int{30001: 1}
	if _, err := a.Repair(ctx, nil, leaks); err == nil {
		t.Error("Repair: no error")
	}
	if leaks[30001] != 1 || len(leaks) != 1 {
		t.Errorf("a failed repair changed the leak counts: %v", leaks)
	}
}

// TestConflictRetriesTheChange: a compare-and-swap lost to another API server runs the
// change again on what that server stored.
func TestConflictRetriesTheChange(t *testing.T) {
	ctx := context.Background()
	pr := mustRange(t, "30000-30009")
	store := &fakeStorage{}
	a := New(pr, store)
	store.conflictWith(set(pr, 30003))
	if err := a.Allocate(ctx, 30003); !errors.Is(err, ErrAllocated) {
		t.Errorf("Allocate of the port the other server took meanwhile: %v, want ErrAllocated", err)
	}
	store.conflictWith(set(pr, 30004), set(pr, 30005))
	if err := a.Allocate(ctx, 30006); err != nil {
		t.Fatal(err)
	}
	if got := storedPorts(t, store, pr); !slices.Equal(got, []int{30003, 30004, 30005, 30006}) {
		t.Errorf("stored %v: the other server's ports must be kept", got)
	}
	if tries, _ := store.stats(); tries != 5 {
		t.Errorf("%d runs of the change, want 2 + 3", tries)
	}
	// AllocateNext never returns a port the other server took while it chose.
	store.conflictWith(set(pr, 30000, 30001, 30002, 30007, 30008))
	p, err := a.AllocateNext(ctx)
	if err != nil || p != 30009 {
		t.Errorf("AllocateNext: %d, %v; want 30009, the only port left", p, err)
	}
}

// TestRepair: missing ports are marked at once; a port no Service holds is freed on the
// third repair in a row that finds it (kube-apiserver's numRepairsBeforeLeakCleanup), and a
// port held again meanwhile starts over.
func TestRepair(t *testing.T) {
	ctx := context.Background()
	pr := mustRange(t, "30000-30099")
	store := &fakeStorage{}
	a := New(pr, store)
	for _, p := range []int{30001, 30002, 30003} {
		if err := a.Allocate(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	leaks := map[int]int{}
	// Services hold 30003 (allocated), 30010 and 30011 (lost), 30010 twice, and 80 (outside
	// the range); 30001 and 30002 are held by none.
	inUse := []int{30003, 30010, 30011, 30010, 80}
	missing, err := a.Repair(ctx, inUse, leaks)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(missing, []int{30010, 30011}) {
		t.Errorf("round 1: missing %v, want [30010 30011]", missing)
	}
	want := map[int]int{30001: 1, 30002: 1}
	if fmt.Sprint(leaks) != fmt.Sprint(want) {
		t.Errorf("round 1: leaks %v, want %v", leaks, want)
	}
	if got := storedPorts(t, store, pr); !slices.Equal(got, []int{30001, 30002, 30003, 30010, 30011}) {
		t.Errorf("round 1: stored %v", got)
	}

	// Round 2: a Service now holds 30002 (its create was in flight): its count goes.
	inUse = append(inUse, 30002)
	if missing, err = a.Repair(ctx, inUse, leaks); err != nil || len(missing) != 0 {
		t.Fatalf("round 2: %v, %v", missing, err)
	}
	if fmt.Sprint(leaks) != fmt.Sprint(map[int]int{30001: 2}) {
		t.Errorf("round 2: leaks %v", leaks)
	}
	if !has(t, a, 30001) {
		t.Error("round 2: 30001 freed early")
	}

	// Round 3: 30001 is freed.
	if _, err = a.Repair(ctx, inUse, leaks); err != nil {
		t.Fatal(err)
	}
	if len(leaks) != 0 {
		t.Errorf("round 3: leaks %v", leaks)
	}
	if got := storedPorts(t, store, pr); !slices.Equal(got, []int{30002, 30003, 30010, 30011}) {
		t.Errorf("round 3: stored %v", got)
	}
	// Round 4: nothing to do.
	if missing, err = a.Repair(ctx, inUse, leaks); err != nil || len(missing) != 0 || len(leaks) != 0 {
		t.Errorf("round 4: %v %v %v", missing, leaks, err)
	}
}

// TestRepairRetriedAfterAConflict: a repair whose compare-and-swap fails is run again on the
// new bitmap; its leak counts and missing ports are those of the run that was stored, each
// counted once.
func TestRepairRetriedAfterAConflict(t *testing.T) {
	ctx := context.Background()
	pr := mustRange(t, "30000-30099")
	store := &fakeStorage{}
	a := New(pr, store)
	if err := a.Allocate(ctx, 30001); err != nil { // leaked
		t.Fatal(err)
	}
	leaks := map[int]int{}
	inUse := []int{30005}
	for round := 1; round <= 3; round++ {
		triesBefore, _ := store.stats()
		// Another API server allocates a port between the read and the write of every
		// round: 30020 in round 1 (a Service of it that the list missed), 30005 in round 2
		// (the missing one, on its own repair), 30021 in round 3.
		switch round {
		case 1:
			store.conflictWith(set(pr, 30020))
		case 2:
			store.conflictWith(set(pr, 30005))
		case 3:
			store.conflictWith(set(pr, 30021), set(pr, 30022))
		}
		missing, err := a.Repair(ctx, inUse, leaks)
		if err != nil {
			t.Fatal(err)
		}
		tries, _ := store.stats()
		wantTries := 2
		if round == 3 {
			wantTries = 3
		}
		if tries-triesBefore != wantTries {
			t.Errorf("round %d: the change ran %d times, want %d", round, tries-triesBefore, wantTries)
		}
		switch round {
		case 1:
			if !slices.Equal(missing, []int{30005}) {
				t.Errorf("round 1: missing %v, want [30005] once", missing)
			}
			if fmt.Sprint(leaks) != fmt.Sprint(map[int]int{30001: 1, 30020: 1}) {
				t.Errorf("round 1: leaks %v, want each counted once", leaks)
			}
		case 2:
			if len(missing) != 0 {
				t.Errorf("round 2: missing %v", missing)
			}
			if fmt.Sprint(leaks) != fmt.Sprint(map[int]int{30001: 2, 30020: 2}) {
				t.Errorf("round 2: leaks %v", leaks)
			}
		case 3:
			if fmt.Sprint(leaks) != fmt.Sprint(map[int]int{30021: 1, 30022: 1}) {
				t.Errorf("round 3: leaks %v", leaks)
			}
		}
	}
	if got := storedPorts(t, store, pr); !slices.Equal(got, []int{30005, 30021, 30022}) {
		t.Errorf("stored %v: 30001 and 30020 freed, the others kept", got)
	}
}

func TestParseRange(t *testing.T) {
	tests := []struct {
		in      string
		want    net.PortRange
		wantErr string
	}{
		{in: "30000-32767", want: DefaultRange},
		{in: " 30000-32767\n", want: DefaultRange},
		{in: "1-65535", want: net.PortRange{Base: 1, Size: 65535}},
		{in: "30000+9", want: net.PortRange{Base: 30000, Size: 10}},
		{in: "30000", want: net.PortRange{Base: 30000, Size: 1}},
		{in: "", wantErr: `--service-node-port-range "": ports must lie in 1-65535`},
		{in: "0-100", wantErr: `--service-node-port-range "0-100": ports must lie in 1-65535`},
		{in: "32767-30000", wantErr: `--service-node-port-range "32767-30000": end port cannot be less than start port: 32767-30000`},
		{in: "30000-70000", wantErr: `--service-node-port-range "30000-70000": the port range cannot be greater than 65535: 30000-70000`},
		{in: "abc", wantErr: `--service-node-port-range "abc": strconv.Atoi: parsing "abc": invalid syntax`},
		{in: "30000-x", wantErr: `--service-node-port-range "30000-x": strconv.Atoi: parsing "x": invalid syntax`},
		{in: "1-2+3", wantErr: `--service-node-port-range "1-2+3": unable to parse port range: 1-2+3`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseRange(tt.in)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ParseRange: %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseRange: %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// TestConcurrentAllocateNext: 200 concurrent allocations get 200 distinct ports, also with
// another API server's writes forcing retries. Run with -race.
func TestConcurrentAllocateNext(t *testing.T) {
	pr := mustRange(t, "30000-30299")
	store := &fakeStorage{}
	a := New(pr, store)
	// The other server takes 30290-30299, one port a conflict.
	for p := 30290; p < 30300; p++ {
		store.conflictWith(set(pr, p))
	}
	const n = 200
	ports := make([]int, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { ports[i], errs[i] = a.AllocateNext(context.Background()) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("allocation %d: %v", i, err)
		}
	}
	checkPorts(t, append(ports, 30290, 30291, 30292, 30293, 30294, 30295, 30296, 30297, 30298, 30299), 30000, 30299)
	if got := used(t, a); got != n+10 {
		t.Errorf("Used() = %d, want %d", got, n+10)
	}
}

// TestPeekNext: a dry run's port is free, not one of skip's, and not taken; a full range
// (counting skip) is ErrFull.
func TestPeekNext(t *testing.T) {
	ctx := context.Background()
	pr := mustRange(t, "30000-30003")
	store := &fakeStorage{}
	a := New(pr, store)
	for _, p := range []int{30000, 30001} {
		if err := a.Allocate(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	_, writes := store.stats()
	p, err := a.PeekNext(ctx, map[int]bool{30002: true})
	if err != nil || p != 30003 {
		t.Errorf("PeekNext skipping 30002: %d, %v; want 30003", p, err)
	}
	if _, w := store.stats(); w != writes || has(t, a, 30003) {
		t.Error("PeekNext took its port")
	}
	if _, err := a.PeekNext(ctx, map[int]bool{30002: true, 30003: true}); !errors.Is(err, ErrFull) {
		t.Errorf("PeekNext with every port taken or skipped: %v, want ErrFull", err)
	}
}
