package ipallocator

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeIPAddresses is the IPAddress store in memory: a create of an existing name is
// AlreadyExists, as etcd makes it.
type fakeIPAddresses struct {
	mu      sync.Mutex
	objs    map[string]networkingv1.IPAddress
	creates int   // Create calls, refused ones included
	exists  int   // Create calls refused with AlreadyExists
	lists   int   // List calls
	fail    error // when set, Create fails with it
}

func newFakeIPAddresses() *fakeIPAddresses {
	return &fakeIPAddresses{objs: map[string]networkingv1.IPAddress{}}
}

func (f *fakeIPAddresses) Create(_ context.Context, ip *networkingv1.IPAddress) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.creates++
	if f.fail != nil {
		return f.fail
	}
	if _, ok := f.objs[ip.Name]; ok {
		f.exists++
		return apierrors.NewAlreadyExists(networkingv1.Resource("ipaddresses"), ip.Name)
	}
	f.objs[ip.Name] = *ip.DeepCopy()
	return nil
}

func (f *fakeIPAddresses) Delete(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.objs, name)
	return nil
}

func (f *fakeIPAddresses) List(context.Context) ([]networkingv1.IPAddress, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	out := make([]networkingv1.IPAddress, 0, len(f.objs))
	for _, o := range f.objs {
		out = append(out, *o.DeepCopy())
	}
	return out, nil
}

// behind stores an IPAddress the allocator does not know of: another API server's.
func (f *fakeIPAddresses) behind(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objs[name] = networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func (f *fakeIPAddresses) has(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.objs[name]
	return ok
}

func (f *fakeIPAddresses) counts() (creates, exists int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.creates, f.exists
}

// fakeCIDRs is a CIDRSource of fixed ServiceCIDRs.
type fakeCIDRs struct {
	prefixes []netip.Prefix
	err      error
}

func (f *fakeCIDRs) ServiceCIDRs(context.Context) ([]netip.Prefix, error) { return f.prefixes, f.err }

var svc = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

func newAllocator(t *testing.T, store IPAddresses, cidrs CIDRSource, primary ...string) *Allocator {
	t.Helper()
	a, err := New(prefixes(primary...), store, cidrs)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// fill allocates until ErrFull and returns the IPs in their order.
func fill(t *testing.T, a *Allocator, family corev1.IPFamily, limit int) []netip.Addr {
	t.Helper()
	var got []netip.Addr
	for range limit + 1 {
		ip, err := a.AllocateNext(context.Background(), svc, family)
		if errors.Is(err, ErrFull) {
			return got
		}
		if err != nil {
			t.Fatalf("AllocateNext after %d: %v", len(got), err)
		}
		got = append(got, ip)
	}
	t.Fatalf("more than %d IPs allocated", limit)
	return nil
}

// checkDistinctIn checks that every ip lies in [first, last] and none repeats.
func checkDistinctIn(t *testing.T, ips []netip.Addr, first, last string) {
	t.Helper()
	lo, hi := netip.MustParseAddr(first), netip.MustParseAddr(last)
	seen := map[netip.Addr]bool{}
	for _, ip := range ips {
		if ip.Less(lo) || hi.Less(ip) {
			t.Errorf("%v is outside [%v, %v]", ip, lo, hi)
		}
		if seen[ip] {
			t.Errorf("%v allocated twice", ip)
		}
		seen[ip] = true
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		primary []string
		wantErr string
		want    []corev1.IPFamily
	}{
		{primary: []string{"10.96.0.0/12"}, want: []corev1.IPFamily{corev1.IPv4Protocol}},
		{primary: []string{"fd00::/108", "10.96.0.0/12"}, want: []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}},
		{primary: nil, wantErr: "want one range, or one of each IP family"},
		{primary: []string{"10.0.0.0/24", "10.1.0.0/24"}, wantErr: "want one range, or one of each IP family"},
		{primary: []string{"10.0.0.0/24", "fd00::/120", "fd01::/120"}, wantErr: "want one range, or one of each IP family"},
		{primary: []string{"fd00::/48"}, wantErr: "shortest allowed prefix length for service CIDR is 64, got 48"},
		{primary: []string{"fd00::/64"}, want: []corev1.IPFamily{corev1.IPv6Protocol}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.primary), func(t *testing.T) {
			a, err := New(prefixes(tt.primary...), newFakeIPAddresses(), nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("New: %v, want an error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := a.Families()
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("Families() = %v, want %v", got, tt.want)
			}
			for _, f := range tt.want {
				if !a.Has(f) {
					t.Errorf("Has(%s) = false", f)
				}
			}
			if len(tt.want) == 1 {
				other := corev1.IPv6Protocol
				if tt.want[0] == other {
					other = corev1.IPv4Protocol
				}
				if a.Has(other) {
					t.Errorf("Has(%s) = true", other)
				}
			}
		})
	}
}

func TestAllocate(t *testing.T) {
	tests := []struct {
		ip      string
		wantErr string // "" for success
	}{
		{ip: "10.0.0.1"},
		{ip: "10.0.0.10"},
		{ip: "10.0.0.254"},
		{ip: "::ffff:10.0.0.7"}, // a 4in6 address is the IPv4 one
		{ip: "10.0.0.0", wantErr: "the provided IP (10.0.0.0) is not in the valid range. The range of valid IPs is 10.0.0.0/24"},
		{ip: "10.0.0.255", wantErr: "the provided IP (10.0.0.255) is not in the valid range. The range of valid IPs is 10.0.0.0/24"},
		{ip: "10.0.1.1", wantErr: "the provided IP (10.0.1.1) is not in the valid range. The range of valid IPs is 10.0.0.0/24"},
		{ip: "9.255.255.254", wantErr: "the provided IP (9.255.255.254) is not in the valid range. The range of valid IPs is 10.0.0.0/24"},
		{ip: "fd00::1"},
		{ip: "fd00::ff"}, // IPv6 has no broadcast address
		{ip: "fd00::", wantErr: "the provided IP (fd00::) is not in the valid range. The range of valid IPs is fd00::/120"},
		{ip: "fd00::100", wantErr: "the provided IP (fd00::100) is not in the valid range. The range of valid IPs is fd00::/120"},
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			store := newFakeIPAddresses()
			a := newAllocator(t, store, nil, "10.0.0.0/24", "fd00::/120")
			ip := netip.MustParseAddr(tt.ip)
			err := a.Allocate(context.Background(), svc, ip)
			if tt.wantErr != "" {
				var notInRange *ErrNotInRange
				if !errors.As(err, &notInRange) || err.Error() != tt.wantErr {
					t.Fatalf("Allocate: %v, want ErrNotInRange %q", err, tt.wantErr)
				}
				if creates, _ := store.counts(); creates != 0 {
					t.Errorf("%d IPAddresses created for an IP out of range", creates)
				}
				return
			}
			if err != nil {
				t.Fatalf("Allocate: %v", err)
			}
			name := ip.Unmap().String()
			got, ok := store.objs[name]
			if !ok {
				t.Fatalf("no IPAddress %s; have %v", name, store.objs)
			}
			want := &networkingv1.ParentReference{Resource: "services", Namespace: "shop", Name: "web"}
			if *got.Spec.ParentRef != *want {
				t.Errorf("parentRef %+v, want %+v", got.Spec.ParentRef, want)
			}
			family := "IPv4"
			if ip.Unmap().Is6() {
				family = "IPv6"
			}
			if got.Labels[networkingv1.LabelManagedBy] != ControllerName || got.Labels[networkingv1.LabelIPAddressFamily] != family {
				t.Errorf("labels %v", got.Labels)
			}
			if err := a.Allocate(context.Background(), svc, ip); !errors.Is(err, ErrAllocated) {
				t.Errorf("second Allocate: %v, want ErrAllocated", err)
			}
		})
	}
}

func TestAllocateStoreError(t *testing.T) {
	store := newFakeIPAddresses()
	store.fail = apierrors.NewServiceUnavailable("etcd is away")
	a := newAllocator(t, store, nil, "10.0.0.0/24")
	err := a.Allocate(context.Background(), svc, netip.MustParseAddr("10.0.0.5"))
	if !apierrors.IsServiceUnavailable(err) || errors.Is(err, ErrAllocated) {
		t.Errorf("Allocate: %v, want the store's error", err)
	}
	if _, err := a.AllocateNext(context.Background(), svc, corev1.IPv4Protocol); !apierrors.IsServiceUnavailable(err) {
		t.Errorf("AllocateNext: %v, want the store's error", err)
	}
	if creates, _ := store.counts(); creates != 2 {
		t.Errorf("%d creates; a dynamic allocation must stop at the first error that is not AlreadyExists", creates)
	}
}

// TestAllocateNextFillsASmallRange: a /29 has 8 addresses; without the network (.0) and
// broadcast (.7) addresses, 6 are allocated and then the range is full. It is too small
// for an offset.
func TestAllocateNextFillsASmallRange(t *testing.T) {
	store := newFakeIPAddresses()
	a := newAllocator(t, store, nil, "192.168.1.0/29")
	got := fill(t, a, corev1.IPv4Protocol, 6)
	if len(got) != 6 {
		t.Fatalf("allocated %d IPs (%v), want 6", len(got), got)
	}
	checkDistinctIn(t, got, "192.168.1.1", "192.168.1.6")
	if _, err := a.AllocateNext(context.Background(), svc, corev1.IPv4Protocol); !errors.Is(err, ErrFull) || err.Error() != "range is full" {
		t.Errorf("AllocateNext on a full range: %v", err)
	}
	if len(store.objs) != 6 {
		t.Errorf("%d IPAddresses stored, want 6", len(store.objs))
	}
	if _, err := a.AllocateNext(context.Background(), svc, corev1.IPv6Protocol); !errors.Is(err, ErrFull) {
		t.Errorf("AllocateNext of an unconfigured family: %v, want ErrFull", err)
	}
}

// TestAllocateNextUpperBandFirst: the offset's IPs at the bottom of a range (16 of a /24,
// 64 of a /22) are handed out dynamically only once the rest are all taken.
func TestAllocateNextUpperBandFirst(t *testing.T) {
	tests := []struct {
		cidr                 string
		usable, offset       int
		lowLast, upFirst, up string
	}{
		{cidr: "10.0.0.0/24", usable: 254, offset: 16, lowLast: "10.0.0.16", upFirst: "10.0.0.17", up: "10.0.0.254"},
		{cidr: "10.0.0.0/22", usable: 1022, offset: 64, lowLast: "10.0.0.64", upFirst: "10.0.0.65", up: "10.0.3.254"},
	}
	for _, tt := range tests {
		t.Run(tt.cidr, func(t *testing.T) {
			a := newAllocator(t, newFakeIPAddresses(), nil, tt.cidr)
			got := fill(t, a, corev1.IPv4Protocol, tt.usable)
			if len(got) != tt.usable {
				t.Fatalf("allocated %d IPs, want %d", len(got), tt.usable)
			}
			upper := tt.usable - tt.offset
			checkDistinctIn(t, got[:upper], tt.upFirst, tt.up)
			checkDistinctIn(t, got[upper:], "10.0.0.1", tt.lowLast)
		})
	}
}

// TestAllocateNextSkipsStaticIPs: IPs taken statically in the upper band are skipped.
func TestAllocateNextSkipsStaticIPs(t *testing.T) {
	a := newAllocator(t, newFakeIPAddresses(), nil, "10.0.0.0/27")
	for _, s := range []string{"10.0.0.20", "10.0.0.30"} {
		if err := a.Allocate(context.Background(), svc, netip.MustParseAddr(s)); err != nil {
			t.Fatal(err)
		}
	}
	got := fill(t, a, corev1.IPv4Protocol, 30)
	// 30 usable (.1-.30), 2 of them static; offset 16: .17-.30 less 2 first, then .1-.16.
	if len(got) != 28 {
		t.Fatalf("allocated %d, want 28", len(got))
	}
	checkDistinctIn(t, got[:12], "10.0.0.17", "10.0.0.30")
	checkDistinctIn(t, got[12:], "10.0.0.1", "10.0.0.16")
	for _, ip := range got {
		if s := ip.String(); s == "10.0.0.20" || s == "10.0.0.30" {
			t.Errorf("static %s allocated again", s)
		}
	}
}

// TestRangeOffset: kube-apiserver's (KEP-3070) offsets: min(max(16, cidrSize/16), 256) of
// the prefix's address count, none for 16 addresses or fewer.
func TestRangeOffset(t *testing.T) {
	tests := []struct {
		prefix string
		want   int64
	}{
		{"10.0.0.0/29", 0},
		{"10.0.0.0/28", 0},
		{"10.0.0.0/27", 16},
		{"10.0.0.0/24", 16},
		{"10.0.0.0/23", 32},
		{"10.0.0.0/22", 64},
		{"10.0.0.0/21", 128},
		{"10.0.0.0/20", 256},
		{"10.96.0.0/12", 256},
		{"fd00::/124", 0},
		{"fd00::/120", 16},
		{"fd00::/112", 256},
		{"fd00::/64", 256},
	}
	for _, tt := range tests {
		if got := rangeOffset(netip.MustParsePrefix(tt.prefix)); got.Cmp(big.NewInt(tt.want)) != 0 {
			t.Errorf("rangeOffset(%s) = %v, want %d", tt.prefix, got, tt.want)
		}
	}
}

// TestAllocateNextIPv6: IPv6 has no broadcast address: a /120 hands out ::1-::ff, the
// upper band (from ::11) first.
func TestAllocateNextIPv6(t *testing.T) {
	a := newAllocator(t, newFakeIPAddresses(), nil, "fd00::/120")
	got := fill(t, a, corev1.IPv6Protocol, 255)
	if len(got) != 255 {
		t.Fatalf("allocated %d IPs, want 255", len(got))
	}
	checkDistinctIn(t, got[:239], "fd00::11", "fd00::ff")
	checkDistinctIn(t, got[239:], "fd00::1", "fd00::10")
}

func TestAllocateNextIPv6Slash64(t *testing.T) {
	store := newFakeIPAddresses()
	a := newAllocator(t, store, nil, "fd00:10:96::/64")
	var got []netip.Addr
	for range 200 {
		ip, err := a.AllocateNext(context.Background(), svc, corev1.IPv6Protocol)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ip)
	}
	// The offset is 256: fd00:10:96::1 to fd00:10:96::100 stay for static IPs.
	checkDistinctIn(t, got, "fd00:10:96::101", "fd00:10:96::ffff:ffff:ffff:ffff")
	for _, ok := range []string{"fd00:10:96::1", "fd00:10:96::ffff:ffff:ffff:ffff"} {
		if err := a.Allocate(context.Background(), svc, netip.MustParseAddr(ok)); err != nil {
			t.Errorf("Allocate(%s): %v", ok, err)
		}
	}
	for _, bad := range []string{"fd00:10:96::", "fd00:10:97::1"} {
		var notInRange *ErrNotInRange
		if err := a.Allocate(context.Background(), svc, netip.MustParseAddr(bad)); !errors.As(err, &notInRange) {
			t.Errorf("Allocate(%s): %v, want ErrNotInRange", bad, err)
		}
	}
	if store.objs["fd00:10:96::1"].Labels[networkingv1.LabelIPAddressFamily] != "IPv6" {
		t.Errorf("labels %v", store.objs["fd00:10:96::1"].Labels)
	}
}

func TestReleaseThenReuse(t *testing.T) {
	store := newFakeIPAddresses()
	a := newAllocator(t, store, nil, "192.168.1.0/29")
	fill(t, a, corev1.IPv4Protocol, 6)
	freed := netip.MustParseAddr("192.168.1.3")
	if err := a.Release(context.Background(), freed); err != nil {
		t.Fatal(err)
	}
	if store.has("192.168.1.3") {
		t.Fatal("the IPAddress is still stored after Release")
	}
	ip, err := a.AllocateNext(context.Background(), svc, corev1.IPv4Protocol)
	if err != nil || ip != freed {
		t.Fatalf("AllocateNext after Release: %v, %v; want %v", ip, err, freed)
	}
	if err := a.Release(context.Background(), netip.MustParseAddr("10.9.9.9")); err != nil {
		t.Errorf("Release of an IP never allocated: %v", err)
	}
	// A static allocation of a released IP works too.
	if err := a.Release(context.Background(), netip.MustParseAddr("::ffff:192.168.1.5")); err != nil {
		t.Fatal(err)
	}
	if err := a.Allocate(context.Background(), svc, netip.MustParseAddr("192.168.1.5")); err != nil {
		t.Errorf("Allocate after Release: %v", err)
	}
}

// TestStaleCache: IPAddresses created behind the allocator's back (another API server) are
// not in its cache; AllocateNext meets them as AlreadyExists and goes on to a free IP.
func TestStaleCache(t *testing.T) {
	store := newFakeIPAddresses()
	a := newAllocator(t, store, nil, "192.168.1.0/29")
	first, err := a.AllocateNext(context.Background(), svc, corev1.IPv4Protocol) // primes the cache
	if err != nil {
		t.Fatal(err)
	}
	var free netip.Addr
	for ip := netip.MustParseAddr("192.168.1.1"); ip.Compare(netip.MustParseAddr("192.168.1.6")) <= 0; ip = ip.Next() {
		switch {
		case ip == first:
		case !free.IsValid():
			free = ip
		default:
			store.behind(ip.String())
		}
	}
	got, err := a.AllocateNext(context.Background(), svc, corev1.IPv4Protocol)
	if err != nil || got != free {
		t.Fatalf("AllocateNext: %v, %v; want %v, the only free IP", got, err, free)
	}
	if _, err := a.AllocateNext(context.Background(), svc, corev1.IPv4Protocol); !errors.Is(err, ErrFull) {
		t.Fatalf("AllocateNext on a full range: %v", err)
	}
	// The collisions are cached now: the next full range costs no create at all.
	before, _ := store.counts()
	if _, err := a.AllocateNext(context.Background(), svc, corev1.IPv4Protocol); !errors.Is(err, ErrFull) {
		t.Fatalf("AllocateNext on a full range: %v", err)
	}
	if after, _ := store.counts(); after != before {
		t.Errorf("%d creates on a range known full", after-before)
	}
	if err := a.Allocate(context.Background(), svc, free); !errors.Is(err, ErrAllocated) {
		t.Errorf("Allocate of a taken IP: %v", err)
	}
}

// TestResync: Resync takes the store's IPAddresses as they are: those created elsewhere
// are skipped without a create, and those deleted elsewhere become free again.
func TestResync(t *testing.T) {
	store := newFakeIPAddresses()
	a := newAllocator(t, store, nil, "192.168.1.0/29")
	fill(t, a, corev1.IPv4Protocol, 6)
	// Another API server released one: the cache still calls the range full.
	if err := store.Delete(context.Background(), "192.168.1.4"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AllocateNext(context.Background(), svc, corev1.IPv4Protocol); !errors.Is(err, ErrFull) {
		t.Fatalf("AllocateNext with a stale cache: %v, want ErrFull", err)
	}
	if err := a.Resync(context.Background()); err != nil {
		t.Fatal(err)
	}
	before, _ := store.counts()
	ip, err := a.AllocateNext(context.Background(), svc, corev1.IPv4Protocol)
	if err != nil || ip.String() != "192.168.1.4" {
		t.Fatalf("AllocateNext after Resync: %v, %v", ip, err)
	}
	if after, exists := store.counts(); after-before != 1 || exists != 0 {
		t.Errorf("%d creates (%d refused) for one free IP known from the store", after-before, exists)
	}

	// An allocator lists the store once, on its first dynamic allocation.
	store2 := newFakeIPAddresses()
	store2.behind("192.168.1.1")
	store2.behind("192.168.1.2")
	b := newAllocator(t, store2, nil, "192.168.1.0/29")
	got := fill(t, b, corev1.IPv4Protocol, 4)
	checkDistinctIn(t, got, "192.168.1.3", "192.168.1.6")
	if _, exists := store2.counts(); exists != 0 || store2.lists != 1 {
		t.Errorf("%d creates refused, %d lists; want 0 and 1", exists, store2.lists)
	}
}

// TestExtraServiceCIDRs: the CIDRSource's ranges serve static and dynamic allocations once
// the flag's range is full; a ServiceCIDR equal to the flag's is not used twice.
func TestExtraServiceCIDRs(t *testing.T) {
	cidrs := &fakeCIDRs{prefixes: prefixes("10.0.0.0/29", "10.1.0.0/29", "fd00::/120")}
	store := newFakeIPAddresses()
	a := newAllocator(t, store, cidrs, "10.0.0.0/29")
	if err := a.Allocate(context.Background(), svc, netip.MustParseAddr("10.1.0.3")); err != nil {
		t.Fatalf("Allocate in an extra ServiceCIDR: %v", err)
	}
	err := a.Allocate(context.Background(), svc, netip.MustParseAddr("10.2.0.1"))
	if err == nil || err.Error() != "the provided IP (10.2.0.1) is not in the valid range. The range of valid IPs is 10.0.0.0/29" {
		t.Errorf("Allocate out of every range: %v", err)
	}
	got := fill(t, a, corev1.IPv4Protocol, 11)
	if len(got) != 11 {
		t.Fatalf("allocated %d, want 6 + 5", len(got))
	}
	checkDistinctIn(t, got[:6], "10.0.0.1", "10.0.0.6")
	checkDistinctIn(t, got[6:], "10.1.0.1", "10.1.0.6")
	// The IPv6 ServiceCIDR is an IPv6 range of an IPv4 cluster's allocator.
	ip, err := a.AllocateNext(context.Background(), svc, corev1.IPv6Protocol)
	if err != nil || !netip.MustParsePrefix("fd00::/120").Contains(ip) {
		t.Errorf("AllocateNext(IPv6): %v, %v", ip, err)
	}
	// A ServiceCIDR deleted (no longer listed) takes its range away.
	cidrs.prefixes = nil
	var notInRange *ErrNotInRange
	if err := a.Allocate(context.Background(), svc, netip.MustParseAddr("10.1.0.6")); !errors.As(err, &notInRange) {
		t.Errorf("Allocate in a ServiceCIDR gone: %v", err)
	}

	cidrs.err = errors.New("no store")
	if _, err := a.AllocateNext(context.Background(), svc, corev1.IPv4Protocol); err == nil || !strings.Contains(err.Error(), "listing ServiceCIDRs: no store") {
		t.Errorf("AllocateNext with a failing CIDRSource: %v", err)
	}
	if err := a.Allocate(context.Background(), svc, netip.MustParseAddr("10.0.0.1")); err == nil || !strings.Contains(err.Error(), "listing ServiceCIDRs") {
		t.Errorf("Allocate with a failing CIDRSource: %v", err)
	}
}

// TestConcurrentAllocateNext: 200 concurrent allocations of a /24 get 200 distinct IPs.
// Run with -race.
func TestConcurrentAllocateNext(t *testing.T) {
	store := newFakeIPAddresses()
	a := newAllocator(t, store, nil, "10.0.0.0/24")
	const n = 200
	ips := make([]netip.Addr, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { ips[i], errs[i] = a.AllocateNext(context.Background(), svc, corev1.IPv4Protocol) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("allocation %d: %v", i, err)
		}
	}
	checkDistinctIn(t, ips, "10.0.0.1", "10.0.0.254")
	if len(store.objs) != n {
		t.Errorf("%d IPAddresses stored, want %d", len(store.objs), n)
	}
}

// TestConcurrentAllocatorsShareAStore: two allocators (two API servers) over one store
// never hand out one IP twice, each meeting the other's IPs as AlreadyExists.
func TestConcurrentAllocatorsShareAStore(t *testing.T) {
	store := newFakeIPAddresses()
	a := newAllocator(t, store, nil, "192.168.1.0/28")
	b := newAllocator(t, store, nil, "192.168.1.0/28")
	var mu sync.Mutex
	var got []netip.Addr
	var wg sync.WaitGroup
	for i := range 14 {
		alloc := a
		if i%2 == 1 {
			alloc = b
		}
		wg.Go(func() {
			ip, err := alloc.AllocateNext(context.Background(), svc, corev1.IPv4Protocol)
			if err != nil {
				t.Errorf("AllocateNext: %v", err)
				return
			}
			mu.Lock()
			got = append(got, ip)
			mu.Unlock()
		})
	}
	wg.Wait()
	checkDistinctIn(t, got, "192.168.1.1", "192.168.1.14")
	if len(got) != 14 {
		t.Errorf("%d allocated, want 14", len(got))
	}
	for _, alloc := range []*Allocator{a, b} {
		if _, err := alloc.AllocateNext(context.Background(), svc, corev1.IPv4Protocol); !errors.Is(err, ErrFull) {
			t.Errorf("AllocateNext on the full shared range: %v", err)
		}
	}
}
