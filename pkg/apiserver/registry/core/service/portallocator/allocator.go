// Package portallocator hands out Services' node ports (--service-node-port-range, 30000-32767
// by default) as kube-apiserver does: one bitmap of the range, kept in etcd as a
// core/v1 RangeAllocation at /ranges/servicenodeports and changed only by compare-and-swap,
// so that concurrent creates, here or in another API server, never get the same port, and a
// restart keeps every allocation. The service registry calls it on the create, update and
// delete of a NodePort or LoadBalancer Service; the repair loop (repair.go) rebuilds the
// bitmap from the Services that exist.
//
// A dynamic port is taken at random from the range's upper part first (kube-apiserver's
// offset: the lower part stays for ports users ask for), then from the lower part.
package portallocator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"math/rand/v2"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apiserver/pkg/storage"
)

// Key is where the bitmap lives in etcd, under the storage prefix (kube-apiserver's key).
const Key = "/ranges/servicenodeports"

// DefaultRange is kube-apiserver's --service-node-port-range default.
var DefaultRange = net.PortRange{Base: 30000, Size: 2768}

// Errors as kube-apiserver's allocator words them; the registry puts them in a 422.
var (
	ErrFull      = errors.New("range is full")
	ErrAllocated = errors.New("provided port is already allocated")
)

// ErrNotInRange is a requested port outside the range.
type ErrNotInRange struct{ ValidPorts string }

func (e *ErrNotInRange) Error() string {
	return "provided port is not in the valid range. The range of valid ports is " + e.ValidPorts
}

// Storage is the part of storage.Interface the allocator uses: a compare-and-swap update of
// one key.
type Storage interface {
	GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
		preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error
	Get(ctx context.Context, key string, opts storage.GetOptions, objPtr runtime.Object) error
}

// Allocator allocates ports of one range. Its methods are safe for concurrent use; within
// one process they are serialized so that concurrent creates do not fight over the key.
type Allocator struct {
	pr      net.PortRange
	offset  int // ports below base+offset are taken dynamically only when the rest is full
	storage Storage
	mu      sync.Mutex
	rand    *rand.Rand
}

// New returns an allocator of pr over store.
func New(pr net.PortRange, store Storage) *Allocator {
	return &Allocator{pr: pr, offset: rangeOffset(pr.Size), storage: store, rand: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}
}

// rangeOffset is kube-apiserver's split of a range: min(max(16, size/32), 128) ports at the
// bottom are kept for static allocation; a range of 16 ports or fewer has no split.
func rangeOffset(size int) int {
	const min, max, step = 16, 128, 32
	o := size / step
	switch {
	case size <= min:
		return 0
	case o < min:
		return min
	case o > max:
		return max
	}
	return o
}

// Range is the allocator's range.
func (a *Allocator) Range() net.PortRange { return a.pr }

// Allocate marks port as used; it fails with ErrNotInRange or ErrAllocated.
func (a *Allocator) Allocate(ctx context.Context, port int) error {
	if !a.pr.Contains(port) {
		return &ErrNotInRange{ValidPorts: a.pr.String()}
	}
	return a.update(ctx, func(bits *big.Int) error {
		i := port - a.pr.Base
		if bits.Bit(i) == 1 {
			return ErrAllocated
		}
		bits.SetBit(bits, i, 1)
		return nil
	})
}

// AllocateNext takes a free port, or fails with ErrFull.
func (a *Allocator) AllocateNext(ctx context.Context) (int, error) {
	var port int
	err := a.update(ctx, func(bits *big.Int) error {
		i, ok := a.free(bits, a.offset, a.pr.Size)
		if !ok {
			i, ok = a.free(bits, 0, a.offset)
		}
		if !ok {
			return ErrFull
		}
		bits.SetBit(bits, i, 1)
		port = a.pr.Base + i
		return nil
	})
	return port, err
}

// PeekNext is a port AllocateNext could take now, other than those of skip, taking none:
// what a dry run shows, as kube-apiserver's dry-run allocator does. It fails with ErrFull as
// AllocateNext would.
func (a *Allocator) PeekNext(ctx context.Context, skip map[int]bool) (int, error) {
	bits, err := a.read(ctx)
	if err != nil {
		return 0, err
	}
	for port := range skip {
		if a.pr.Contains(port) {
			bits.SetBit(bits, port-a.pr.Base, 1)
		}
	}
	a.mu.Lock() // a.rand is not safe for concurrent use
	defer a.mu.Unlock()
	i, ok := a.free(bits, a.offset, a.pr.Size)
	if !ok {
		i, ok = a.free(bits, 0, a.offset)
	}
	if !ok {
		return 0, ErrFull
	}
	return a.pr.Base + i, nil
}

// free finds a clear bit in [lo, hi), starting at a random place.
func (a *Allocator) free(bits *big.Int, lo, hi int) (int, bool) {
	n := hi - lo
	if n <= 0 {
		return 0, false
	}
	start := a.rand.IntN(n)
	for k := range n {
		i := lo + (start+k)%n
		if bits.Bit(i) == 0 {
			return i, true
		}
	}
	return 0, false
}

// Release frees port; a port outside the range or not allocated is no error.
func (a *Allocator) Release(ctx context.Context, port int) error {
	if !a.pr.Contains(port) {
		return nil
	}
	return a.update(ctx, func(bits *big.Int) error {
		bits.SetBit(bits, port-a.pr.Base, 0)
		return nil
	})
}

// Has reports whether port is allocated, reading etcd.
func (a *Allocator) Has(ctx context.Context, port int) (bool, error) {
	bits, err := a.read(ctx)
	if err != nil || !a.pr.Contains(port) {
		return false, err
	}
	return bits.Bit(port-a.pr.Base) == 1, nil
}

// Used is the number of allocated ports, reading etcd.
func (a *Allocator) Used(ctx context.Context) (int, error) {
	bits, err := a.read(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range a.pr.Size {
		n += int(bits.Bit(i))
	}
	return n, nil
}

// read returns the stored bitmap (empty when none is stored yet).
func (a *Allocator) read(ctx context.Context) (*big.Int, error) {
	var ra corev1.RangeAllocation
	if err := a.storage.Get(ctx, Key, storage.GetOptions{IgnoreNotFound: true}, &ra); err != nil {
		return nil, fmt.Errorf("reading the node port allocations: %w", err)
	}
	return a.bitmap(&ra)
}

// update applies change to the stored bitmap with compare-and-swap; a change that fails
// stores nothing.
func (a *Allocator) update(ctx context.Context, change func(*big.Int) error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var changeErr error
	err := a.storage.GuaranteedUpdate(ctx, Key, &corev1.RangeAllocation{}, true, nil,
		func(input runtime.Object, _ storage.ResponseMeta) (runtime.Object, *uint64, error) {
			ra := input.(*corev1.RangeAllocation)
			bits, err := a.bitmap(ra)
			if err != nil {
				return nil, nil, err
			}
			if changeErr = change(bits); changeErr != nil {
				return nil, nil, changeErr
			}
			out := &corev1.RangeAllocation{ObjectMeta: metav1.ObjectMeta{ResourceVersion: ra.ResourceVersion}, Range: a.pr.String(), Data: bits.Bytes()}
			return out, nil, nil
		}, nil)
	if changeErr != nil {
		return changeErr
	}
	if err != nil {
		return fmt.Errorf("updating the node port allocations: %w", err)
	}
	return nil
}

// bitmap is ra's bits over this allocator's range. A bitmap stored for another range (the
// flag changed) keeps the ports both ranges hold; the repair loop adds back any port a
// Service holds outside it.
func (a *Allocator) bitmap(ra *corev1.RangeAllocation) (*big.Int, error) {
	bits := new(big.Int).SetBytes(ra.Data)
	if ra.Range != "" && ra.Range != a.pr.String() {
		stored, err := net.ParsePortRange(ra.Range)
		if err != nil {
			return nil, fmt.Errorf("the stored node port range %q: %w", ra.Range, err)
		}
		// A changed range keeps the ports both ranges hold.
		moved := new(big.Int)
		for i := range stored.Size {
			if bits.Bit(i) == 1 && a.pr.Contains(stored.Base+i) {
				moved.SetBit(moved, stored.Base+i-a.pr.Base, 1)
			}
		}
		return moved, nil
	}
	return bits, nil
}

// leakRounds is how many repairs in a row must find an allocated port no Service holds before
// it is freed: a create allocates before it stores, so a repair can see a port whose Service
// is not written yet (kube-apiserver's numRepairsBeforeLeakCleanup).
const leakRounds = 3

// Repair makes the stored bitmap agree with inUse, the ports the Services hold: each is
// marked (one missing is returned: it was allocated twice or lost); a marked port no Service
// holds is freed after leakRounds repairs in a row. leaks carries the counts between repairs.
func (a *Allocator) Repair(ctx context.Context, inUse []int, leaks map[int]int) (missing []int, err error) {
	// The change may run more than once (a conflict retries it): it works on a copy of leaks.
	var counted map[int]int
	err = a.update(ctx, func(bits *big.Int) error {
		missing, counted = missing[:0], maps.Clone(leaks)
		held := map[int]bool{}
		for _, p := range inUse {
			if !a.pr.Contains(p) {
				continue
			}
			held[p] = true
			if bits.Bit(p-a.pr.Base) == 0 {
				missing = append(missing, p)
				bits.SetBit(bits, p-a.pr.Base, 1)
			}
		}
		for i := range a.pr.Size {
			p := a.pr.Base + i
			if bits.Bit(i) == 0 || held[p] {
				delete(counted, p)
				continue
			}
			if counted[p]++; counted[p] >= leakRounds {
				bits.SetBit(bits, i, 0)
				delete(counted, p)
			}
		}
		return nil
	})
	if err == nil {
		clear(leaks)
		maps.Copy(leaks, counted)
	}
	return missing, err
}

// ParseRange parses --service-node-port-range ("30000-32767").
func ParseRange(s string) (net.PortRange, error) {
	pr, err := net.ParsePortRange(strings.TrimSpace(s))
	if err != nil {
		return net.PortRange{}, fmt.Errorf("--service-node-port-range %q: %w", s, err)
	}
	if pr.Base < 1 || pr.Base+pr.Size-1 > 65535 {
		return net.PortRange{}, fmt.Errorf("--service-node-port-range %q: ports must lie in 1-65535", s)
	}
	return *pr, nil
}
