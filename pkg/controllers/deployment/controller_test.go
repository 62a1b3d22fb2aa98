package deployment

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/controllers/history"
)

func TestCreateMakesReplicaSetWithHash(t *testing.T) {
	d := newDeployment("web", 3, nil, nil)
	f := newFixture(t, d)
	f.sync("web")

	rss := f.replicaSets()
	if len(rss) != 1 {
		t.Fatalf("%d replica sets, want 1", len(rss))
	}
	rs := rss[0]
	hash := history.ComputeHash(&d.Spec.Template, nil)
	if rs.Name != "web-"+hash {
		t.Errorf("name %q, want web-%s", rs.Name, hash)
	}
	if rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash || rs.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash ||
		rs.Spec.Selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] != hash || rs.Spec.Selector.MatchLabels["app"] != "web" {
		t.Errorf("labels %v, template labels %v, selector %v: want pod-template-hash=%s everywhere", rs.Labels, rs.Spec.Template.Labels, rs.Spec.Selector, hash)
	}
	if ref := metav1.GetControllerOf(rs); ref == nil || ref.UID != d.UID || ref.Kind != "Deployment" || !ptr.Deref(ref.BlockOwnerDeletion, false) {
		t.Errorf("controller ref %+v", ref)
	}
	if *rs.Spec.Replicas != 3 {
		t.Errorf("replicas %d, want 3", *rs.Spec.Replicas)
	}
	wantAnn := map[string]string{RevisionAnnotation: "1", DesiredReplicasAnnotation: "3", MaxReplicasAnnotation: "4"}
	for k, v := range wantAnn {
		if rs.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, rs.Annotations[k], v)
		}
	}
	if got := f.deployment("web").Annotations[RevisionAnnotation]; got != "1" {
		t.Errorf("deployment revision %q, want 1", got)
	}
	if got, want := f.progressing("web"), fmt.Sprintf(`True NewReplicaSetCreated: Created new replica set "web-%s"`, hash); got != want {
		t.Errorf("Progressing %q, want %q", got, want)
	}
	if got, want := f.events(), []string{fmt.Sprintf("Normal ScalingReplicaSet Scaled up replica set web-%s from 0 to 3", hash)}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}

	// The pods come up: the rollout is complete, as kubectl rollout status reads it.
	f.markAvailable("img:1")
	f.sync("web")
	got := f.deployment("web")
	s := got.Status
	if s.ObservedGeneration != got.Generation || s.Replicas != 3 || s.UpdatedReplicas != 3 || s.ReadyReplicas != 3 || s.AvailableReplicas != 3 || s.UnavailableReplicas != 0 ||
		s.TerminatingReplicas == nil || *s.TerminatingReplicas != 0 {
		t.Errorf("status %+v", s)
	}
	if got, want := f.progressing("web"), fmt.Sprintf(`True NewReplicaSetAvailable: ReplicaSet "web-%s" has successfully progressed.`, hash); got != want {
		t.Errorf("Progressing %q, want %q", got, want)
	}
	if c := getCondition(s, appsv1.DeploymentAvailable); c == nil || c.Status != corev1.ConditionTrue || c.Reason != MinimumReplicasAvailable {
		t.Errorf("Available %+v", c)
	}
	// Nothing more to do: a further sync writes nothing.
	f.client.ClearActions()
	f.sync("web")
	if writes := writeActions(f.client.Actions()); len(writes) != 0 {
		t.Errorf("a sync of a finished rollout wrote %v", writes)
	}
}

// writeActions is the actions that are not reads.
func writeActions(actions []clienttesting.Action) []string {
	var out []string
	for _, a := range actions {
		if v := a.GetVerb(); v != "get" && v != "list" && v != "watch" {
			out = append(out, v+" "+a.GetResource().Resource+"/"+a.GetSubresource())
		}
	}
	return out
}

// rollToCompletion syncs and lets every pod become available until the rollout to image is
// complete, checking at each step that the strategy's bounds hold: at most replicas+surge
// pods, at least replicas-maxUnavailable available. It returns the number of steps.
func rollToCompletion(t *testing.T, f *fixture, name, image string, replicas, surge, unavailable int32) int {
	t.Helper()
	for step := 1; step <= 50; step++ {
		f.sync(name)
		var total int32
		for _, rs := range f.replicaSets() {
			total += *rs.Spec.Replicas
		}
		if total > replicas+surge {
			t.Fatalf("step %d: %d pods wanted (%s), more than %d+%d", step, total, f.sizes(), replicas, surge)
		}
		f.markAvailable(imagesOf(f)...)
		var available int32
		for _, rs := range f.replicaSets() {
			available += rs.Status.AvailableReplicas
		}
		if available < replicas-unavailable {
			t.Fatalf("step %d: %d available (%s), fewer than %d-%d", step, available, f.sizes(), replicas, unavailable)
		}
		d := f.deployment(name)
		if s := d.Status; s.ObservedGeneration == d.Generation && s.UpdatedReplicas == replicas && s.Replicas == replicas && s.AvailableReplicas == replicas &&
			f.replicaSetOf(image) != nil && *f.replicaSetOf(image).Spec.Replicas == replicas {
			return step
		}
	}
	t.Fatalf("the rollout to %s did not complete: %s, status %+v", image, f.sizes(), f.deployment(name).Status)
	return 0
}

func imagesOf(f *fixture) []string {
	var out []string
	for _, rs := range f.replicaSets() {
		out = append(out, rs.Spec.Template.Spec.Containers[0].Image)
	}
	return out
}

func TestRollingUpdate(t *testing.T) {
	tests := []struct {
		name                  string
		replicas              int32
		surge, unavailable    int32
		percent               bool  // 25%/25% defaults instead
		wantFirstNew, wantOld int32 // after the first sync of the new template
	}{
		{name: "defaults, 4 replicas", replicas: 4, percent: true, surge: 1, unavailable: 1, wantFirstNew: 1, wantOld: 3},
		{name: "defaults, 3 replicas", replicas: 3, percent: true, surge: 1, unavailable: 0, wantFirstNew: 1, wantOld: 3},
		{name: "surge only", replicas: 3, surge: 2, unavailable: 0, wantFirstNew: 2, wantOld: 3},
		{name: "unavailable only", replicas: 3, surge: 0, unavailable: 1, wantFirstNew: 0, wantOld: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDeployment("web", tt.replicas, ints(tt.surge), ints(tt.unavailable))
			if tt.percent {
				d = newDeployment("web", tt.replicas, nil, nil)
			}
			f := newFixture(t, d)
			f.sync("web")
			f.markAvailable("img:1")
			f.sync("web")
			f.events()

			f.updateDeployment("web", withImage("img:2"))
			f.sync("web")
			if len(f.replicaSets()) != 2 {
				t.Fatalf("replica sets %s, want 2", f.sizes())
			}
			newRS, oldRS := f.replicaSetOf("img:2"), f.replicaSetOf("img:1")
			if *newRS.Spec.Replicas != tt.wantFirstNew || *oldRS.Spec.Replicas != tt.wantOld {
				t.Errorf("after the first step: %s, want new %d old %d", f.sizes(), tt.wantFirstNew, tt.wantOld)
			}
			if newRS.Annotations[RevisionAnnotation] != "2" {
				t.Errorf("new revision %q, want 2", newRS.Annotations[RevisionAnnotation])
			}

			rollToCompletion(t, f, "web", "img:2", tt.replicas, tt.surge, tt.unavailable)
			if got := *f.replicaSetOf("img:1").Spec.Replicas; got != 0 {
				t.Errorf("old replica set still has %d replicas", got)
			}
			f.sync("web")
			if got, want := f.progressing("web"), fmt.Sprintf(`True NewReplicaSetAvailable: ReplicaSet %q has successfully progressed.`, newRS.Name); got != want {
				t.Errorf("Progressing %q, want %q", got, want)
			}
			// The events tell the rollout, each with upstream's message.
			for _, e := range f.events() {
				if !(matches(e, "Normal ScalingReplicaSet Scaled up replica set "+newRS.Name+" from ") ||
					matches(e, "Normal ScalingReplicaSet Scaled down replica set "+oldRS.Name+" from ")) {
					t.Errorf("unexpected event %q", e)
				}
			}
		})
	}
}

func matches(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }

func TestRecreate(t *testing.T) {
	d := newDeployment("web", 2, nil, nil)
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	f := newFixture(t, d)
	f.sync("web")
	f.markAvailable("img:1")
	old := f.replicaSetOf("img:1")
	running := pod("web-old-1", old)
	_, err := f.client.CoreV1().Pods("ns").Create(t.Context(), running, metav1.CreateOptions{})
	f.check(err)
	f.sync("web")
	f.events()

	f.updateDeployment("web", withImage("img:2"))
	f.sync("web")
	if got := f.sizes(); got != "img:1=0" {
		t.Fatalf("after the first step: %s, want only the old one, at 0", got)
	}
	// The old ReplicaSet still reports its pods: no new one yet.
	f.sync("web")
	if got := f.sizes(); got != "img:1=0" {
		t.Fatalf("old pods reported: %s, want img:1=0", got)
	}
	// Reported gone, but one still runs.
	f.markAvailable()
	f.sync("web")
	if got := f.sizes(); got != "img:1=0" {
		t.Fatalf("an old pod running: %s, want img:1=0", got)
	}
	// It goes: the new ReplicaSet at full size.
	f.check(f.client.CoreV1().Pods("ns").Delete(t.Context(), running.Name, metav1.DeleteOptions{}))
	f.sync("web")
	if got := f.sizes(); got != "img:1=0 img:2=2" {
		t.Fatalf("old pods gone: %s, want img:1=0 img:2=2", got)
	}
	newRS := f.replicaSetOf("img:2")
	if got, want := f.events(), []string{
		"Normal ScalingReplicaSet Scaled down replica set " + old.Name + " from 2 to 0",
		"Normal ScalingReplicaSet Scaled up replica set " + newRS.Name + " from 0 to 2",
	}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	f.markAvailable("img:2")
	f.sync("web")
	if s := f.deployment("web").Status; s.UpdatedReplicas != 2 || s.AvailableReplicas != 2 || s.Replicas != 2 {
		t.Errorf("status %+v", s)
	}
}

// TestRolloutUndo is what `kubectl rollout undo` does today: it patches the template of the
// old ReplicaSet (without its hash) into the Deployment. The controller finds that ReplicaSet
// by its template, makes it the new one with the next revision, and rolls back to it.
func TestRolloutUndo(t *testing.T) {
	f := newFixture(t, newDeployment("web", 2, ints(1), ints(0)))
	f.sync("web")
	f.markAvailable("img:1")
	f.updateDeployment("web", withImage("img:2"))
	rollToCompletion(t, f, "web", "img:2", 2, 1, 0)
	v1 := f.replicaSetOf("img:1")

	f.updateDeployment("web", func(d *appsv1.Deployment) {
		d.Spec.Template = *v1.Spec.Template.DeepCopy()
		delete(d.Spec.Template.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	})
	rollToCompletion(t, f, "web", "img:1", 2, 1, 0)
	f.sync("web")
	if n := len(f.replicaSets()); n != 2 {
		t.Fatalf("%d replica sets (%s), want the same 2", n, f.sizes())
	}
	v1 = f.replicaSetOf("img:1")
	if v1.Annotations[RevisionAnnotation] != "3" || v1.Annotations[RevisionHistoryAnnotation] != "1" {
		t.Errorf("rolled-back-to replica set: revision %q history %q, want 3 and 1", v1.Annotations[RevisionAnnotation], v1.Annotations[RevisionHistoryAnnotation])
	}
	if got := f.deployment("web").Annotations[RevisionAnnotation]; got != "3" {
		t.Errorf("deployment revision %q, want 3", got)
	}
	if got := f.sizes(); got != "img:1=2 img:2=0" {
		t.Errorf("sizes %s", got)
	}
}

// TestRollbackAnnotation is the deprecated rollback request.
func TestRollbackAnnotation(t *testing.T) {
	f := newFixture(t, newDeployment("web", 1, ints(1), ints(0)))
	f.sync("web")
	f.markAvailable("img:1")
	f.updateDeployment("web", func(d *appsv1.Deployment) {
		d.Annotations["kubernetes.io/change-cause"] = "to v2"
		d.Spec.Template.Spec.Containers[0].Image = "img:2"
	})
	rollToCompletion(t, f, "web", "img:2", 1, 1, 0)
	f.events()

	f.updateDeployment("web", func(d *appsv1.Deployment) { d.Annotations[appsv1.DeprecatedRollbackTo] = "0" })
	f.sync("web")
	d := f.deployment("web")
	if d.Spec.Template.Spec.Containers[0].Image != "img:1" {
		t.Errorf("template image %s, want img:1", d.Spec.Template.Spec.Containers[0].Image)
	}
	if _, ok := d.Annotations[appsv1.DeprecatedRollbackTo]; ok {
		t.Error("the rollback request is still there")
	}
	if _, ok := d.Annotations["kubernetes.io/change-cause"]; ok {
		t.Error("the annotations of revision 1 (no change-cause) should be back")
	}
	if _, ok := d.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; ok {
		t.Error("the template got the replica set's hash label")
	}
	if got, want := f.events(), []string{`Normal DeploymentRollback Rolled back deployment "web" to revision 1`}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}

	// The rolled-back-to ReplicaSet becomes revision 3; a rollback to it changes nothing.
	f.sync("web")
	if got := f.replicaSetOf("img:1").Annotations[RevisionAnnotation]; got != "3" {
		t.Fatalf("revision %q, want 3", got)
	}
	f.events() // the scale-up of the rollback
	f.updateDeployment("web", func(d *appsv1.Deployment) { d.Annotations[appsv1.DeprecatedRollbackTo] = "3" })
	f.sync("web")
	if got, want := f.events(), []string{`Warning DeploymentRollbackTemplateUnchanged The rollback revision contains the same template as current deployment "web"`}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}

	// A revision that is not there.
	f.updateDeployment("web", func(d *appsv1.Deployment) { d.Annotations[appsv1.DeprecatedRollbackTo] = "9" })
	f.sync("web")
	if got, want := f.events(), []string{"Warning DeploymentRollbackRevisionNotFound Unable to find the revision to rollback to."}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	if _, ok := f.deployment("web").Annotations[appsv1.DeprecatedRollbackTo]; ok {
		t.Error("the rollback request is still there")
	}
}

func TestPauseAndResume(t *testing.T) {
	f := newFixture(t, newDeployment("web", 2, ints(1), ints(0)))
	f.sync("web")
	f.markAvailable("img:1")
	f.sync("web")

	f.updateDeployment("web", func(d *appsv1.Deployment) {
		d.Spec.Paused = true
		d.Spec.Template.Spec.Containers[0].Image = "img:2"
	})
	f.sync("web")
	if got := f.sizes(); got != "img:1=2" {
		t.Errorf("paused: %s, want no rollout", got)
	}
	if got := f.progressing("web"); got != "Unknown DeploymentPaused: Deployment is paused" {
		t.Errorf("Progressing %q", got)
	}
	if d := f.deployment("web"); d.Status.ObservedGeneration != d.Generation {
		t.Errorf("observedGeneration %d, generation %d", d.Status.ObservedGeneration, d.Generation)
	}
	// A paused Deployment is still scaled.
	f.updateDeployment("web", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](4) })
	f.sync("web")
	if got := f.sizes(); got != "img:1=4" {
		t.Errorf("scaled while paused: %s, want img:1=4", got)
	}
	// Long paused: no time counts against the deadline.
	f.clock.Step(time.Hour)
	f.markAvailable("img:1")
	f.sync("web")
	if got := f.progressing("web"); got != "Unknown DeploymentPaused: Deployment is paused" {
		t.Errorf("Progressing %q", got)
	}
	f.updateDeployment("web", func(d *appsv1.Deployment) { d.Spec.Paused = false })
	f.sync("web")
	if got := f.sizes(); got != "img:1=4 img:2=1" {
		t.Errorf("resumed: %s, want the rollout started", got)
	}
	if got := f.progressing("web"); !matches(got, "True NewReplicaSetCreated: ") {
		t.Errorf("Progressing %q, want NewReplicaSetCreated", got)
	}
}

func TestResumedConditionBeforeRollout(t *testing.T) {
	d := newDeployment("web", 1, nil, nil)
	d.Status.Conditions = []appsv1.DeploymentCondition{progressing(corev1.ConditionUnknown, PausedDeployReason, t0.Add(-time.Hour))}
	f := newFixture(t, d)
	// The create of the new ReplicaSet fails: what stays is the resumed condition.
	f.client.PrependReactor("create", "replicasets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("later")
	})
	if err := f.trySync("web"); err == nil {
		t.Fatal("want the create's error")
	}
	got := f.progressing("web")
	if !matches(got, `False ReplicaSetCreateError: Failed to create new replica set "web-`) {
		t.Errorf("Progressing %q, want ReplicaSetCreateError", got)
	}
	if ev := f.events(); len(ev) != 1 || !matches(ev[0], `Warning ReplicaSetCreateError Failed to create new replica set "web-`) {
		t.Errorf("events %q", ev)
	}
}

func TestProgressDeadlineExceeded(t *testing.T) {
	d := newDeployment("web", 2, ints(1), ints(0))
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](60)
	f := newFixture(t, d)
	f.sync("web")
	f.markAvailable() // the pods never become available
	f.sync("web")
	hashName := f.replicaSets()[0].Name
	// Pods were created: progress.
	if got := f.progressing("web"); got != fmt.Sprintf(`True ReplicaSetUpdated: ReplicaSet %q is progressing.`, hashName) {
		t.Fatalf("Progressing %q", got)
	}
	// Then nothing changes: the Deployment is queued for when its deadline passes.
	f.sync("web")
	if f.c.queue.Len() != 0 {
		t.Fatalf("queue length %d, want 0 before the deadline", f.c.queue.Len())
	}
	f.clock.Step(61 * time.Second)
	if !waitForQueue(f) {
		t.Fatal("the deployment was not queued for its progress check")
	}
	f.sync("web")
	if got, want := f.progressing("web"), fmt.Sprintf(`False ProgressDeadlineExceeded: ReplicaSet %q has timed out progressing.`, hashName); got != want {
		t.Errorf("Progressing %q, want %q", got, want)
	}
	if c := getCondition(f.deployment("web").Status, appsv1.DeploymentAvailable); c == nil || c.Status != corev1.ConditionFalse || c.Reason != MinimumReplicasUnavailable {
		t.Errorf("Available %+v", c)
	}
	// The pods come up at last: the rollout completes after all.
	f.markAvailable("img:1")
	f.sync("web")
	if got := f.progressing("web"); !matches(got, "True NewReplicaSetAvailable: ") {
		t.Errorf("Progressing %q, want NewReplicaSetAvailable", got)
	}
}

// waitForQueue reports whether a key reaches the queue within a second of real time (the
// fake clock has passed its AddAfter; the queue's own goroutine moves it).
func waitForQueue(f *fixture) bool {
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if f.c.queue.Len() > 0 {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return false
}

func TestRevisionHistoryLimit(t *testing.T) {
	d := newDeployment("web", 1, ints(1), ints(0))
	d.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	f := newFixture(t, d)
	f.sync("web")
	f.markAvailable("img:1")
	for _, image := range []string{"img:2", "img:3", "img:4"} {
		f.clock.Step(time.Minute) // distinct creation times
		f.updateDeployment("web", withImage(image))
		rollToCompletion(t, f, "web", image, 1, 1, 0)
		f.sync("web")
	}
	var revisions []string
	for _, rs := range f.replicaSets() {
		revisions = append(revisions, rs.Spec.Template.Spec.Containers[0].Image+"@"+rs.Annotations[RevisionAnnotation])
	}
	if want := []string{"img:3@3", "img:4@4"}; !slices.Equal(revisions, want) {
		t.Errorf("replica sets %v, want %v", revisions, want)
	}
}

func TestAdoptsOrphanReplicaSet(t *testing.T) {
	d := newDeployment("web", 2, nil, nil)
	orphan := newRS("web-orphan", 2, t0.Add(-time.Hour))
	orphan.Labels = map[string]string{"app": "web"}
	orphan.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	orphan.Spec.Template = *d.Spec.Template.DeepCopy()
	f := newFixture(t, d, orphan)
	f.sync("web")
	rss := f.replicaSets()
	if len(rss) != 1 {
		t.Fatalf("replica sets %s, want the orphan only", f.sizes())
	}
	if ref := metav1.GetControllerOf(rss[0]); ref == nil || ref.UID != d.UID {
		t.Errorf("the orphan was not adopted: %+v", rss[0].OwnerReferences)
	}
	if got := rss[0].Annotations[RevisionAnnotation]; got != "1" {
		t.Errorf("the adopted replica set's revision %q, want 1", got)
	}
	// Found, and all its pods available: complete in the same sync.
	if got := f.progressing("web"); got != `True NewReplicaSetAvailable: ReplicaSet "web-orphan" has successfully progressed.` {
		t.Errorf("Progressing %q", got)
	}
}

func TestHashCollision(t *testing.T) {
	d := newDeployment("web", 1, nil, nil)
	hash := history.ComputeHash(&d.Spec.Template, nil)
	other := newRS("web-"+hash, 0, t0.Add(-time.Hour))
	other.Spec.Template.Spec.Containers = []corev1.Container{{Name: "x", Image: "other"}}
	f := newFixture(t, d, other)
	err := f.trySync("web")
	if !errors.Is(err, errHashCollision) {
		t.Fatalf("err = %v, want a hash collision", err)
	}
	if c := f.deployment("web").Status.CollisionCount; c == nil || *c != 1 {
		t.Fatalf("collisionCount %v, want 1", c)
	}
	f.sync("web")
	want := "web-" + history.ComputeHash(&d.Spec.Template, ptr.To[int32](1))
	if _, err := f.client.AppsV1().ReplicaSets("ns").Get(t.Context(), want, metav1.GetOptions{}); err != nil {
		t.Errorf("replica set %s: %v", want, err)
	}
}

func TestSelectingAll(t *testing.T) {
	d := newDeployment("web", 1, nil, nil)
	d.Spec.Selector = &metav1.LabelSelector{}
	f := newFixture(t, d)
	f.sync("web")
	if n := len(f.replicaSets()); n != 0 {
		t.Errorf("%d replica sets created", n)
	}
	if got := f.deployment("web").Status.ObservedGeneration; got != 1 {
		t.Errorf("observedGeneration %d, want 1", got)
	}
	if got, want := f.events(), []string{"Warning SelectingAll This deployment is selecting all pods. A non-empty selector is required."}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}

func TestScalingEventDuringRollout(t *testing.T) {
	f := newFixture(t, newDeployment("web", 10, ints(3), ints(2)))
	f.sync("web")
	f.markAvailable("img:1")
	f.updateDeployment("web", withImage("img:2"))
	// The new one at 3 (13 = 10 + surge), and, its pods not available yet, the old one
	// down to 8 (10 - maxUnavailable).
	f.sync("web")
	if got := f.sizes(); got != "img:1=8 img:2=3" {
		t.Fatalf("first step %s", got)
	}
	f.markAvailable("img:1")
	f.updateDeployment("web", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](20) })
	f.sync("web")
	// 23 allowed (20 + 3), 12 more: the old one 8·23/13 → 14, the new one 3·23/13 → 5, the
	// largest taking the 4 rounding leaves.
	if got := f.sizes(); got != "img:1=18 img:2=5" {
		t.Errorf("scaled during the rollout: %s, want img:1=18 img:2=5", got)
	}
}

func TestDeletedDeploymentIsIgnored(t *testing.T) {
	f := newFixture(t)
	f.sync("gone")
	if writes := writeActions(f.client.Actions()); len(writes) != 0 {
		t.Errorf("writes %v", writes)
	}
}

// TestBrokenTemplateKeepsAvailability: the new template's pods never become available; the
// rollout stops where going on would cost availability (4 replicas, maxUnavailable 1: 3 old
// ones stay), within the surge.
func TestBrokenTemplateKeepsAvailability(t *testing.T) {
	f := newFixture(t, newDeployment("web", 4, nil, nil))
	f.sync("web")
	f.markAvailable("img:1")
	f.updateDeployment("web", withImage("img:2"))
	for range 10 {
		f.sync("web")
		f.markAvailable("img:1")
	}
	if got := f.sizes(); got != "img:1=3 img:2=2" {
		t.Errorf("sizes %s, want img:1=3 img:2=2", got)
	}
	s := f.deployment("web").Status
	if s.AvailableReplicas != 3 || s.UpdatedReplicas != 2 || s.UnavailableReplicas != 2 {
		t.Errorf("status %+v", s)
	}
	if c := getCondition(s, appsv1.DeploymentAvailable); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("Available %+v, want true: 3 of 4 with one allowed unavailable", c)
	}
	// Undoing to the old template: the broken pods go, the old ReplicaSet is whole again.
	f.updateDeployment("web", withImage("img:1"))
	rollToCompletion(t, f, "web", "img:1", 4, 1, 1)
	if got := f.sizes(); got != "img:1=4 img:2=0" {
		t.Errorf("after the undo: %s", got)
	}
}

// TestRolloutRestart is `kubectl rollout restart`: an annotation patched into the template,
// a rollout like any other; the Deployment's own annotations go to the new ReplicaSet.
func TestRolloutRestart(t *testing.T) {
	f := newFixture(t, newDeployment("web", 2, nil, nil))
	f.sync("web")
	f.markAvailable("img:1")
	f.clock.Step(time.Minute) // the new ReplicaSet sorts last
	f.updateDeployment("web", func(d *appsv1.Deployment) {
		d.Annotations["kubernetes.io/change-cause"] = "restart"
		d.Spec.Template.Annotations = map[string]string{"kubectl.kubernetes.io/restartedAt": t0.Format(time.RFC3339)}
	})
	f.sync("web")
	rss := f.replicaSets()
	if len(rss) != 2 {
		t.Fatalf("replica sets %s, want a second one", f.sizes())
	}
	restarted := rss[1]
	if _, ok := restarted.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"]; !ok || restarted.Annotations["kubernetes.io/change-cause"] != "restart" ||
		restarted.Annotations[RevisionAnnotation] != "2" {
		t.Errorf("new replica set: template annotations %v, annotations %v", restarted.Spec.Template.Annotations, restarted.Annotations)
	}
	if _, ok := rss[0].Annotations["kubernetes.io/change-cause"]; ok {
		t.Error("the old replica set got the new change-cause")
	}
}

// TestDeletingDeploymentOnlyUpdatesStatus: a Deployment being deleted (its ReplicaSets go
// with the garbage collector) gets its status and nothing else.
func TestDeletingDeploymentOnlyUpdatesStatus(t *testing.T) {
	d := newDeployment("web", 2, nil, nil)
	d.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	d.Finalizers = []string{"foregroundDeletion"}
	old := newRS("web-old", 2, t0.Add(-time.Hour))
	old.Labels = map[string]string{"app": "web"}
	old.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(d, controllerKind)}
	old.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "img:0"}}
	f := newFixture(t, d, old)
	f.sync("web")
	if got := f.sizes(); got != "img:0=2" {
		t.Errorf("sizes %s, want the old one untouched and no new one", got)
	}
	if writes := writeActions(f.client.Actions()); !slices.Equal(writes, []string{"update deployments/status"}) {
		t.Errorf("writes %v, want the status only", writes)
	}
	if s := f.deployment("web").Status; s.Replicas != 2 || s.UpdatedReplicas != 0 {
		t.Errorf("status %+v", s)
	}
}

func TestRollbackWithoutHistory(t *testing.T) {
	f := newFixture(t, newDeployment("web", 1, nil, nil))
	f.sync("web")
	f.updateDeployment("web", func(d *appsv1.Deployment) { d.Annotations[appsv1.DeprecatedRollbackTo] = "0" })
	f.events()
	f.sync("web")
	if got, want := f.events(), []string{"Warning DeploymentRollbackRevisionNotFound Unable to find last revision."}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	if _, ok := f.deployment("web").Annotations[appsv1.DeprecatedRollbackTo]; ok {
		t.Error("the rollback request is still there")
	}
}

// TestUndefaultedDeployment: a Deployment lacking the API's defaults (replicas, strategy)
// is rolled out as if it had them: 1 replica, RollingUpdate 25%/25%.
func TestUndefaultedDeployment(t *testing.T) {
	d := newDeployment("web", 1, nil, nil)
	d.Spec.Replicas = nil
	d.Spec.Strategy = appsv1.DeploymentStrategy{}
	f := newFixture(t, d)
	f.sync("web")
	rs := f.replicaSets()[0]
	if *rs.Spec.Replicas != 1 || rs.Annotations[MaxReplicasAnnotation] != "2" {
		t.Errorf("replicas %d, max-replicas %q: want 1 and 2", *rs.Spec.Replicas, rs.Annotations[MaxReplicasAnnotation])
	}
}
