package deployment

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

func TestResolveFenceposts(t *testing.T) {
	str := func(s string) *intstr.IntOrString { return ptr.To(intstr.FromString(s)) }
	tests := []struct {
		surge, unavailable        *intstr.IntOrString
		desired                   int32
		wantSurge, wantUnavailble int32
		wantErr                   bool
	}{
		// Upstream's table.
		{str("0%"), str("0%"), 0, 0, 1, false},
		{str("39%"), str("39%"), 10, 4, 3, false}, // surge rounds up, unavailable down
		{str("oops"), str("39%"), 10, 0, 0, true},
		{str("55%"), str("urg"), 10, 0, 0, true},
		{nil, str("39%"), 10, 0, 3, false},
		{str("39%"), nil, 10, 4, 0, false},
		{nil, nil, 10, 0, 1, false},
		// The API's defaults and ints.
		{str("25%"), str("25%"), 1, 1, 0, false},
		{str("25%"), str("25%"), 3, 1, 0, false},
		{str("25%"), str("25%"), 4, 1, 1, false},
		{str("25%"), str("25%"), 10, 3, 2, false},
		{ints(2), ints(0), 10, 2, 0, false},
		{ints(0), ints(3), 10, 0, 3, false},
		{str("1%"), str("0%"), 2, 1, 0, false},
		{str("0%"), str("1%"), 2, 0, 1, false}, // both round to zero: one may be unavailable
	}
	for i, tt := range tests {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			s, u, err := resolveFenceposts(tt.surge, tt.unavailable, tt.desired)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if s != tt.wantSurge || u != tt.wantUnavailble {
				t.Errorf("got surge %d unavailable %d, want %d %d", s, u, tt.wantSurge, tt.wantUnavailble)
			}
		})
	}
}

func TestMaxUnavailableAndSurge(t *testing.T) {
	d := newDeployment("web", 2, ints(1), ints(5))
	if got := maxUnavailable(d); got != 2 {
		t.Errorf("maxUnavailable capped at replicas: got %d, want 2", got)
	}
	if got := maxSurge(d); got != 1 {
		t.Errorf("maxSurge = %d, want 1", got)
	}
	d.Spec.Replicas = ptr.To[int32](0)
	if got := maxUnavailable(d); got != 0 {
		t.Errorf("maxUnavailable of zero replicas = %d, want 0", got)
	}
	r := newDeployment("web", 5, ints(1), ints(1))
	r.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	if maxSurge(r) != 0 || maxUnavailable(r) != 0 {
		t.Error("Recreate has no surge and no unavailability")
	}
}

func TestNewRSNewReplicas(t *testing.T) {
	tests := []struct {
		name                                      string
		strategy                                  appsv1.DeploymentStrategyType
		replicas, newReplicas, surge, otherOldRSs int32
		want                                      int32
	}{
		// Upstream's table: one other ReplicaSet of 5.
		{"cannot scale up", appsv1.RollingUpdateDeploymentStrategyType, 1, 5, 1, 5, 5},
		{"scale up to replicas", appsv1.RollingUpdateDeploymentStrategyType, 6, 2, 10, 5, 6},
		{"recreate", appsv1.RecreateDeploymentStrategyType, 3, 1, 1, 5, 3},
		// Within the surge: 10 replicas, surge 3, old 10 → new may have 3.
		{"surge", appsv1.RollingUpdateDeploymentStrategyType, 10, 0, 3, 10, 3},
		{"surge partly used", appsv1.RollingUpdateDeploymentStrategyType, 10, 3, 3, 8, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDeployment("web", tt.replicas, ints(tt.surge), ints(1))
			d.Spec.Strategy.Type = tt.strategy
			newRS := newRS("new", tt.newReplicas, t0)
			all := []*appsv1.ReplicaSet{newRS, newRS_("old", tt.otherOldRSs)}
			got, err := newRSNewReplicas(d, all, newRS)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
	d := newDeployment("web", 1, nil, nil)
	d.Spec.Strategy.Type = "Other"
	if _, err := newRSNewReplicas(d, nil, newRS("new", 0, t0)); err == nil {
		t.Error("an unknown strategy should fail")
	}
}

func newRS_(name string, replicas int32) *appsv1.ReplicaSet {
	return newRS(name, replicas, t0.Add(-time.Hour))
}

// TestScale is upstream's TestScale: a scaling event resizes the one active ReplicaSet, or
// shares itself among them in proportion.
func TestScale(t *testing.T) {
	newer, old, older := t0, t0.Add(-time.Hour), t0.Add(-2*time.Hour)
	type rsSpec struct {
		name     string
		replicas int32
		created  time.Time
	}
	tests := []struct {
		name                 string
		replicas, before     int32 // the deployment's replicas now and when the ReplicaSets were sized
		surge, surgeBefore   int32
		newRS                *rsSpec
		oldRSs               []rsSpec
		wantNew              int32
		wantOld              []int32
		newUnavailable       bool // the new ReplicaSet's pods are not available
		newTemplateDifferent bool
	}{
		{name: "10 -> 12", replicas: 12, before: 10, newRS: &rsSpec{"v1", 10, newer}, wantNew: 12},
		{name: "10 -> 5", replicas: 5, before: 10, newRS: &rsSpec{"v1", 10, newer}, wantNew: 5},
		{name: "proportional 5 -> 10", replicas: 10, before: 5, newRS: &rsSpec{"v2", 2, newer}, oldRSs: []rsSpec{{"v1", 3, old}}, wantNew: 4, wantOld: []int32{6}},
		{name: "proportional 5 -> 3", replicas: 3, before: 5, newRS: &rsSpec{"v2", 2, newer}, oldRSs: []rsSpec{{"v1", 3, old}}, wantNew: 1, wantOld: []int32{2}},
		{name: "proportional 9 -> 4", replicas: 4, before: 9, newRS: &rsSpec{"v2", 8, newer}, oldRSs: []rsSpec{{"v1", 1, old}}, wantNew: 4, wantOld: []int32{0}},
		{name: "proportional 7 -> 10", replicas: 10, before: 7, newRS: &rsSpec{"v3", 2, newer}, oldRSs: []rsSpec{{"v2", 3, old}, {"v1", 2, older}}, wantNew: 3, wantOld: []int32{4, 3}},
		{name: "proportional 13 -> 8", replicas: 8, before: 13, newRS: &rsSpec{"v3", 2, newer}, oldRSs: []rsSpec{{"v2", 8, old}, {"v1", 3, older}}, wantNew: 1, wantOld: []int32{5, 2}},
		{name: "leftover 3 -> 4", replicas: 4, before: 3, newRS: &rsSpec{"v3", 1, newer}, oldRSs: []rsSpec{{"v2", 1, old}, {"v1", 1, older}}, wantNew: 2, wantOld: []int32{1, 1}},
		{name: "leftover 3 -> 2", replicas: 2, before: 3, newRS: &rsSpec{"v3", 1, newer}, oldRSs: []rsSpec{{"v2", 1, old}, {"v1", 1, older}}, wantNew: 1, wantOld: []int32{1, 0}},
		{name: "no new rs 4 -> 5", replicas: 5, before: 4, oldRSs: []rsSpec{{"v2", 2, old}, {"v1", 2, older}}, wantOld: []int32{3, 2}},
		{name: "6 -> 0", replicas: 0, before: 6, newRS: &rsSpec{"v3", 3, newer}, oldRSs: []rsSpec{{"v2", 2, old}, {"v1", 1, older}}, wantNew: 0, wantOld: []int32{0, 0}},
		{name: "0 -> 6", replicas: 6, before: 6, newRS: &rsSpec{"v3", 0, newer}, oldRSs: []rsSpec{{"v2", 0, old}, {"v1", 0, older}}, wantNew: 6, wantOld: []int32{0, 0}},
		{name: "surge 10 -> 20", replicas: 20, before: 10, surge: 2, surgeBefore: 2, newRS: &rsSpec{"v2", 6, newer}, oldRSs: []rsSpec{{"v1", 6, old}}, wantNew: 11, wantOld: []int32{11}},
		{name: "surge and size", replicas: 50, before: 10, surge: 6, surgeBefore: 3, newRS: &rsSpec{"v2", 5, newer}, oldRSs: []rsSpec{{"v1", 8, old}}, wantNew: 22, wantOld: []int32{34}},
		{name: "size and template", replicas: 14, before: 10, newTemplateDifferent: true, oldRSs: []rsSpec{{"v2", 7, newer}, {"v1", 3, old}}, wantOld: []int32{10, 4}},
		{name: "saturated but broken new rs", replicas: 2, before: 2, surge: 1, surgeBefore: 1, newRS: &rsSpec{"v2", 2, newer}, oldRSs: []rsSpec{{"v1", 1, old}}, newUnavailable: true, wantNew: 2, wantOld: []int32{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDeployment("foo", tt.replicas, ints(tt.surge), ints(0))
			sized := func(s rsSpec) *appsv1.ReplicaSet {
				rs := newRS(s.name, s.replicas, s.created)
				setReplicasAnnotations(rs, tt.before, tt.before+tt.surgeBefore)
				return rs
			}
			var nrs *appsv1.ReplicaSet
			if tt.newRS != nil {
				nrs = sized(*tt.newRS)
				if tt.newUnavailable {
					nrs.Status.AvailableReplicas = 0
				}
			}
			var olds []*appsv1.ReplicaSet
			for _, s := range tt.oldRSs {
				olds = append(olds, sized(s))
			}
			sizes := map[string]int32{}
			client := fake.NewClientset()
			for _, rs := range append(slices.Clone(olds), nrs) {
				if rs != nil {
					sizes[rs.Name] = *rs.Spec.Replicas
					if err := client.Tracker().Add(rs); err != nil {
						t.Fatal(err)
					}
				}
			}
			factory := informers.NewSharedInformerFactory(client, 0)
			c := NewDeploymentController(client, factory.Apps().V1().Deployments(), factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods())
			defer c.queue.ShutDown()
			if err := c.scale(context.Background(), d, nrs, olds); err != nil {
				t.Fatal(err)
			}
			for _, a := range client.Actions() {
				rs := a.(clienttesting.UpdateAction).GetObject().(*appsv1.ReplicaSet)
				sizes[rs.Name] = *rs.Spec.Replicas
			}
			if tt.newRS != nil && sizes[tt.newRS.name] != tt.wantNew {
				t.Errorf("new %s: %d replicas, want %d", tt.newRS.name, sizes[tt.newRS.name], tt.wantNew)
			}
			for i, s := range tt.oldRSs {
				if sizes[s.name] != tt.wantOld[i] {
					t.Errorf("old %s: %d replicas, want %d", s.name, sizes[s.name], tt.wantOld[i])
				}
			}
		})
	}
}

func TestFindActiveOrLatest(t *testing.T) {
	n := newRS("new", 0, t0)
	a := newRS("a", 0, t0.Add(-2*time.Hour))
	b := newRS("b", 0, t0.Add(-time.Hour))
	if got := findActiveOrLatest(nil, nil); got != nil {
		t.Errorf("nothing: got %s", got.Name)
	}
	if got := findActiveOrLatest(n, []*appsv1.ReplicaSet{a, b}); got != n {
		t.Errorf("none active: got %s, want the new one", got.Name)
	}
	if got := findActiveOrLatest(nil, []*appsv1.ReplicaSet{a, b}); got != b {
		t.Errorf("none active, no new: got %s, want the newest old one", got.Name)
	}
	*a.Spec.Replicas = 2
	if got := findActiveOrLatest(n, []*appsv1.ReplicaSet{a, b}); got != a {
		t.Errorf("one active: got %v, want a", got)
	}
	*n.Spec.Replicas = 1
	if got := findActiveOrLatest(n, []*appsv1.ReplicaSet{a, b}); got != nil {
		t.Errorf("two active: got %s, want none", got.Name)
	}
}

func TestMaxScaledDown(t *testing.T) {
	// Upstream's example: 10 replicas, maxUnavailable 2, maxSurge 3.
	d := newDeployment("web", 10, ints(3), ints(2))
	old := newRS("old", 8, t0.Add(-time.Hour))
	crashing := newRS("new", 5, t0)
	crashing.Status.AvailableReplicas = 0
	all := []*appsv1.ReplicaSet{old, crashing}
	// 13 pods, 8 must stay available, 5 new ones unavailable: nothing may go.
	if got := maxScaledDown(all, []*appsv1.ReplicaSet{old}, crashing, d); got != 0 {
		t.Errorf("crash-looping new pods: %d may go, want 0", got)
	}
	// A roll-over: the new one just created, at 0.
	fresh := newRS("newer", 0, t0)
	all = []*appsv1.ReplicaSet{old, newRS("mid", 5, t0.Add(-time.Minute)), fresh}
	if got := maxScaledDown(all, all[:2], fresh, d); got != 5 {
		t.Errorf("roll-over: %d may go, want 5", got)
	}
	if got := maxScaledDown(all, []*appsv1.ReplicaSet{newRS("gone", 0, t0)}, fresh, d); got != 0 {
		t.Errorf("no old pods: %d, want 0", got)
	}
}

func TestUnhealthyScaleDown(t *testing.T) {
	a := newRS("a", 5, t0.Add(-2*time.Hour))
	a.Status.AvailableReplicas = 2 // 3 unhealthy
	b := newRS("b", 4, t0.Add(-time.Hour))
	b.Status.AvailableReplicas = 4 // healthy
	c := newRS("c", 3, t0.Add(-30*time.Minute))
	c.Status.AvailableReplicas = 1 // 2 unhealthy
	tests := []struct {
		limit int32
		want  []int32
	}{
		{10, []int32{2, 4, 1}},
		{4, []int32{2, 4, 2}}, // oldest first, 4 in all
		{2, []int32{3, 4, 3}},
	}
	for _, tt := range tests {
		rss := []*appsv1.ReplicaSet{c, b, a}
		if got := unhealthyScaleDown(rss, tt.limit); !slices.Equal(got, tt.want) {
			t.Errorf("limit %d: got %v, want %v (order %s %s %s)", tt.limit, got, tt.want, rss[0].Name, rss[1].Name, rss[2].Name)
		}
	}
}

func TestAvailableScaleDown(t *testing.T) {
	d := newDeployment("web", 10, ints(3), ints(2))
	a := newRS("a", 4, t0.Add(-2*time.Hour))
	b := newRS("b", 5, t0.Add(-time.Hour))
	n := newRS("new", 3, t0)
	// 12 available, 8 must stay: 4 go, from the oldest.
	if got := availableScaleDown([]*appsv1.ReplicaSet{a, b, n}, []*appsv1.ReplicaSet{b, a}, d); !slices.Equal(got, []int32{0, 5}) {
		t.Errorf("got %v, want [0 5]", got)
	}
	n.Status.AvailableReplicas = 0
	// 9 available: 1 goes.
	if got := availableScaleDown([]*appsv1.ReplicaSet{a, b, n}, []*appsv1.ReplicaSet{a, b}, d); !slices.Equal(got, []int32{3, 5}) {
		t.Errorf("got %v, want [3 5]", got)
	}
	a.Status.AvailableReplicas, b.Status.AvailableReplicas = 4, 4
	if got := availableScaleDown([]*appsv1.ReplicaSet{a, b, n}, []*appsv1.ReplicaSet{a, b}, d); !slices.Equal(got, []int32{4, 5}) {
		t.Errorf("at minAvailable: got %v, want [4 5]", got)
	}
}

func TestHistoryToDelete(t *testing.T) {
	rs := func(name, rev string, replicas, statusReplicas int32) *appsv1.ReplicaSet {
		r := withRevision(newRS(name, replicas, t0), rev)
		r.Status.Replicas = statusReplicas
		return r
	}
	deleting := rs("deleting", "1", 0, 0)
	deleting.DeletionTimestamp = ptr.To(deleting.CreationTimestamp)
	unobserved := rs("unobserved", "2", 0, 0)
	unobserved.Generation = 2
	tests := []struct {
		name  string
		limit *int32
		old   []*appsv1.ReplicaSet
		want  []string
	}{
		{"keep 1 of 3", ptr.To[int32](1), []*appsv1.ReplicaSet{rs("c", "3", 0, 0), rs("a", "1", 0, 0), rs("b", "2", 0, 0)}, []string{"a", "b"}},
		{"only the empty ones", ptr.To[int32](0), []*appsv1.ReplicaSet{rs("a", "1", 0, 0), rs("b", "2", 0, 1), rs("c", "3", 1, 0), rs("d", "4", 1, 1)}, []string{"a"}},
		{"within the limit", ptr.To[int32](2), []*appsv1.ReplicaSet{rs("a", "1", 0, 0), rs("b", "2", 0, 0)}, nil},
		{"no limit", nil, []*appsv1.ReplicaSet{rs("a", "1", 0, 0)}, nil},
		{"being deleted ones do not count", ptr.To[int32](1), []*appsv1.ReplicaSet{deleting, rs("b", "2", 0, 0), rs("c", "3", 0, 0)}, []string{"b"}},
		{"the ReplicaSet controller has not caught up", ptr.To[int32](0), []*appsv1.ReplicaSet{unobserved}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDeployment("web", 1, nil, nil)
			d.Spec.RevisionHistoryLimit = tt.limit
			var got []string
			for _, r := range historyToDelete(d, tt.old) {
				got = append(got, r.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
