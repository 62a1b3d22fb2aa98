package apiserver

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

var appsLabels = map[string]string{"app": "web"}

func appsTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: appsLabels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}},
	}
}

func appsDeployment(name string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: appsLabels}, Template: appsTemplate()},
	}
}

// TestAppsCreateDefaults: every workload kind is served, and a minimal one comes back with
// upstream's defaults, generation 1 and no status.
func TestAppsCreateDefaults(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	apps := c.Client.AppsV1()
	selector := &metav1.LabelSelector{MatchLabels: appsLabels}

	d, err := apps.Deployments(ns).Create(ctx, appsDeployment("web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a deployment: %v", err)
	}
	ru := d.Spec.Strategy.RollingUpdate
	if *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || ru == nil ||
		ru.MaxSurge.String() != "25%" || ru.MaxUnavailable.String() != "25%" ||
		*d.Spec.RevisionHistoryLimit != 10 || *d.Spec.ProgressDeadlineSeconds != 600 || d.Generation != 1 {
		t.Errorf("deployment defaults: %+v generation %d", d.Spec, d.Generation)
	}
	if tpl := d.Spec.Template.Spec; tpl.RestartPolicy != corev1.RestartPolicyAlways || tpl.DNSPolicy != corev1.DNSClusterFirst {
		t.Errorf("deployment template without pod spec defaults: %+v", tpl)
	}

	rs, err := apps.ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       appsv1.ReplicaSetSpec{Selector: selector, Template: appsTemplate()},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a replicaset: %v", err)
	}
	if *rs.Spec.Replicas != 1 || rs.Generation != 1 {
		t.Errorf("replicaset defaults: replicas %d generation %d", *rs.Spec.Replicas, rs.Generation)
	}

	sts, err := apps.StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.StatefulSetSpec{Selector: selector, Template: appsTemplate(), VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
			ObjectMeta: metav1.ObjectMeta{Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: mustQuantity("1Gi")}},
			},
		}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a statefulset: %v", err)
	}
	sru := sts.Spec.UpdateStrategy.RollingUpdate
	if sts.Spec.PodManagementPolicy != appsv1.OrderedReadyPodManagement || sru == nil || *sru.Partition != 0 ||
		sru.MaxUnavailable.IntValue() != 1 || sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType ||
		*sts.Spec.Replicas != 1 || *sts.Spec.RevisionHistoryLimit != 10 {
		t.Errorf("statefulset defaults: %+v", sts.Spec)
	}
	if vm := sts.Spec.VolumeClaimTemplates[0].Spec.VolumeMode; vm == nil || *vm != corev1.PersistentVolumeFilesystem {
		t.Errorf("claim template volumeMode %v, want Filesystem", vm)
	}

	ds, err := apps.DaemonSets(ns).Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       appsv1.DaemonSetSpec{Selector: selector, Template: appsTemplate()},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a daemonset: %v", err)
	}
	dru := ds.Spec.UpdateStrategy.RollingUpdate
	if dru == nil || dru.MaxUnavailable.IntValue() != 1 || dru.MaxSurge.IntValue() != 0 || *ds.Spec.RevisionHistoryLimit != 10 ||
		ds.Annotations[appsv1.DeprecatedTemplateGeneration] != "1" {
		t.Errorf("daemonset defaults: %+v annotations %v", ds.Spec.UpdateStrategy, ds.Annotations)
	}
	ds.Spec.Template.Spec.Containers[0].Image = "busybox:1.37"
	if ds, err = apps.DaemonSets(ns).Update(ctx, ds, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating the daemonset's template: %v", err)
	}
	if ds.Annotations[appsv1.DeprecatedTemplateGeneration] != "2" || ds.Generation != 2 {
		t.Errorf("after a template change: template generation %q, generation %d; want 2, 2", ds.Annotations[appsv1.DeprecatedTemplateGeneration], ds.Generation)
	}

	tpl := appsTemplate()
	rc, err := c.Client.CoreV1().ReplicationControllers(ns).Create(ctx, &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.ReplicationControllerSpec{Template: &tpl},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a replicationcontroller: %v", err)
	}
	if rc.Spec.Selector["app"] != "web" || rc.Labels["app"] != "web" || *rc.Spec.Replicas != 1 || rc.Generation != 1 {
		t.Errorf("replicationcontroller defaults: selector %v labels %v replicas %d", rc.Spec.Selector, rc.Labels, *rc.Spec.Replicas)
	}

	// Field selectors as upstream's: RCs by status.replicas too, apps/v1 by metadata only.
	rcs, err := c.Client.CoreV1().ReplicationControllers(ns).List(ctx, metav1.ListOptions{FieldSelector: "status.replicas=0"})
	if err != nil || len(rcs.Items) != 1 {
		t.Errorf("RCs with status.replicas=0: %v, %v", err, rcs)
	}
	if _, err := apps.Deployments(ns).List(ctx, metav1.ListOptions{FieldSelector: "status.replicas=0"}); !apierrors.IsBadRequest(err) {
		t.Errorf("deployments by status.replicas: %v, want a 400", err)
	}
	if l, err := apps.Deployments(ns).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=web"}); err != nil || len(l.Items) != 1 {
		t.Errorf("deployments by metadata.name: %v, %v", err, l)
	}

	cr, err := apps.ControllerRevisions(ns).Create(ctx, &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1"},
		Data:       runtime.RawExtension{Raw: []byte(`{"spec":{}}`)},
		Revision:   1,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a controllerrevision: %v", err)
	}
	cr.Data = runtime.RawExtension{Raw: []byte(`{"spec":{"x":1}}`)}
	_, err = apps.ControllerRevisions(ns).Update(ctx, cr, metav1.UpdateOptions{})
	expectInvalid(t, err, "data", "field is immutable")
}

// expectInvalid checks a 422 that names the field and says why.
func expectInvalid(t *testing.T, err error, fieldPath, detail string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("got %v, want a 422 on %s", err, fieldPath)
	}
	status := err.(apierrors.APIStatus).Status()
	for _, cause := range status.Details.Causes {
		if cause.Field == fieldPath && strings.Contains(cause.Message, detail) {
			return
		}
	}
	t.Errorf("422 %q lacks %s: %s", status.Message, fieldPath, detail)
}

// TestAppsValidation: bad workloads are refused with 422s that name the field, in
// upstream's words; a selector cannot change.
func TestAppsValidation(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	apps := c.Client.AppsV1()

	d := appsDeployment("unmatched")
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}
	_, err := apps.Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
	expectInvalid(t, err, "spec.template.metadata.labels", "`selector` does not match template `labels`")

	d = appsDeployment("stuck")
	zero := ptr.To(intstr.FromInt32(0))
	d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: zero, MaxUnavailable: zero}
	_, err = apps.Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
	expectInvalid(t, err, "spec.strategy.rollingUpdate.maxUnavailable", "may not be 0 when `maxSurge` is 0")

	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: appsLabels}, Template: appsTemplate(),
			PodManagementPolicy: "Sometimes"},
	}
	_, err = apps.StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{})
	expectInvalid(t, err, "spec.podManagementPolicy", "must be 'OrderedReady' or 'Parallel'")

	tpl := appsTemplate()
	tpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	_, err = c.Client.CoreV1().ReplicationControllers(ns).Create(ctx, &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec:       corev1.ReplicationControllerSpec{Template: &tpl},
	}, metav1.CreateOptions{})
	expectInvalid(t, err, "spec.template.spec.restartPolicy", `supported values: "Always"`)

	d, err = apps.Deployments(ns).Create(ctx, appsDeployment("fixed"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Spec.Selector.MatchLabels = map[string]string{"app": "web", "tier": "front"}
	d.Spec.Template.Labels = d.Spec.Selector.MatchLabels
	_, err = apps.Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
	expectInvalid(t, err, "spec.selector", "field is immutable")
}

// TestAppsStatus: the status subresource writes the status only, and checks it. Without
// controllers: the deployment controller would write the status too.
func TestAppsStatus(t *testing.T) {
	c := quietCluster(t)
	ctx := testContext(t)
	created, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns := created.Name
	deployments := c.Client.AppsV1().Deployments(ns)
	d, err := deployments.Create(ctx, appsDeployment("reported"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Status = appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: 1, ObservedGeneration: 1}
	d.Spec.Replicas = ptr.To[int32](7) // ignored by the status subresource
	got, err := deployments.UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("updating the status: %v", err)
	}
	if got.Status.ReadyReplicas != 1 || *got.Spec.Replicas != 1 || got.Generation != 1 {
		t.Errorf("after a status write: status %+v, replicas %d, generation %d", got.Status, *got.Spec.Replicas, got.Generation)
	}
	got.Status.ReadyReplicas = 2
	_, err = deployments.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	expectInvalid(t, err, "status.readyReplicas", "cannot be greater than status.replicas")

	// A spec write keeps the status.
	got, err = deployments.Get(ctx, "reported", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Status = appsv1.DeploymentStatus{}
	got.Spec.Replicas = ptr.To[int32](2)
	if got, err = deployments.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got.Status.ReadyReplicas != 1 || got.Generation != 2 {
		t.Errorf("after a spec write: status %+v generation %d, want the status kept and generation 2", got.Status, got.Generation)
	}
}

// TestAppsScale: kubectl scale's path for the four scalable kinds: GET and PUT of the Scale,
// a stale resourceVersion is a 409, a patch works, negative replicas are a 422. Without
// controllers: their status writes would make every resourceVersion stale.
func TestAppsScale(t *testing.T) {
	c := quietCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	apps := c.Client.AppsV1()
	selector := &metav1.LabelSelector{MatchLabels: appsLabels}
	if _, err := apps.Deployments(ns).Create(ctx, appsDeployment("scaled"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := apps.ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "scaled"},
		Spec: appsv1.ReplicaSetSpec{Selector: selector, Template: appsTemplate()}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := apps.StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "scaled"},
		Spec: appsv1.StatefulSetSpec{Selector: selector, Template: appsTemplate()}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tpl := appsTemplate()
	if _, err := c.Client.CoreV1().ReplicationControllers(ns).Create(ctx, &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "scaled"},
		Spec: corev1.ReplicationControllerSpec{Template: &tpl}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	type scaler struct {
		get      func(ctx context.Context) (*autoscalingv1.Scale, error)
		update   func(ctx context.Context, s *autoscalingv1.Scale) (*autoscalingv1.Scale, error)
		patch    func(ctx context.Context, body []byte) (*autoscalingv1.Scale, error)
		replicas func(ctx context.Context) int32
	}
	scalers := map[string]scaler{
		"deployments": {
			get: func(ctx context.Context) (*autoscalingv1.Scale, error) {
				return apps.Deployments(ns).GetScale(ctx, "scaled", metav1.GetOptions{})
			},
			update: func(ctx context.Context, s *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
				return apps.Deployments(ns).UpdateScale(ctx, "scaled", s, metav1.UpdateOptions{})
			},
			patch: func(ctx context.Context, body []byte) (*autoscalingv1.Scale, error) {
				_, err := apps.Deployments(ns).Patch(ctx, "scaled", types.MergePatchType, body, metav1.PatchOptions{}, "scale")
				if err != nil {
					return nil, err
				}
				return apps.Deployments(ns).GetScale(ctx, "scaled", metav1.GetOptions{})
			},
			replicas: func(ctx context.Context) int32 {
				d, _ := apps.Deployments(ns).Get(ctx, "scaled", metav1.GetOptions{})
				return *d.Spec.Replicas
			},
		},
		"replicasets": {
			get: func(ctx context.Context) (*autoscalingv1.Scale, error) {
				return apps.ReplicaSets(ns).GetScale(ctx, "scaled", metav1.GetOptions{})
			},
			update: func(ctx context.Context, s *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
				return apps.ReplicaSets(ns).UpdateScale(ctx, "scaled", s, metav1.UpdateOptions{})
			},
			patch: func(ctx context.Context, body []byte) (*autoscalingv1.Scale, error) {
				if _, err := apps.ReplicaSets(ns).Patch(ctx, "scaled", types.MergePatchType, body, metav1.PatchOptions{}, "scale"); err != nil {
					return nil, err
				}
				return apps.ReplicaSets(ns).GetScale(ctx, "scaled", metav1.GetOptions{})
			},
			replicas: func(ctx context.Context) int32 {
				rs, _ := apps.ReplicaSets(ns).Get(ctx, "scaled", metav1.GetOptions{})
				return *rs.Spec.Replicas
			},
		},
		"statefulsets": {
			get: func(ctx context.Context) (*autoscalingv1.Scale, error) {
				return apps.StatefulSets(ns).GetScale(ctx, "scaled", metav1.GetOptions{})
			},
			update: func(ctx context.Context, s *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
				return apps.StatefulSets(ns).UpdateScale(ctx, "scaled", s, metav1.UpdateOptions{})
			},
			patch: func(ctx context.Context, body []byte) (*autoscalingv1.Scale, error) {
				if _, err := apps.StatefulSets(ns).Patch(ctx, "scaled", types.MergePatchType, body, metav1.PatchOptions{}, "scale"); err != nil {
					return nil, err
				}
				return apps.StatefulSets(ns).GetScale(ctx, "scaled", metav1.GetOptions{})
			},
			replicas: func(ctx context.Context) int32 {
				s, _ := apps.StatefulSets(ns).Get(ctx, "scaled", metav1.GetOptions{})
				return *s.Spec.Replicas
			},
		},
		"replicationcontrollers": {
			get: func(ctx context.Context) (*autoscalingv1.Scale, error) {
				return c.Client.CoreV1().ReplicationControllers(ns).GetScale(ctx, "scaled", metav1.GetOptions{})
			},
			update: func(ctx context.Context, s *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
				return c.Client.CoreV1().ReplicationControllers(ns).UpdateScale(ctx, "scaled", s, metav1.UpdateOptions{})
			},
			patch: func(ctx context.Context, body []byte) (*autoscalingv1.Scale, error) {
				if _, err := c.Client.CoreV1().ReplicationControllers(ns).Patch(ctx, "scaled", types.MergePatchType, body, metav1.PatchOptions{}, "scale"); err != nil {
					return nil, err
				}
				return c.Client.CoreV1().ReplicationControllers(ns).GetScale(ctx, "scaled", metav1.GetOptions{})
			},
			replicas: func(ctx context.Context) int32 {
				rc, _ := c.Client.CoreV1().ReplicationControllers(ns).Get(ctx, "scaled", metav1.GetOptions{})
				return *rc.Spec.Replicas
			},
		},
	}
	for resource, s := range scalers {
		t.Run(resource, func(t *testing.T) {
			scale, err := s.get(ctx)
			if err != nil {
				t.Fatalf("GET scale: %v", err)
			}
			if scale.Name != "scaled" || scale.Spec.Replicas != 1 || scale.Status.Selector != "app=web" || scale.ResourceVersion == "" {
				t.Errorf("scale %+v", scale)
			}
			stale := scale.DeepCopy()
			scale.Spec.Replicas = 3
			updated, err := s.update(ctx, scale)
			if err != nil {
				t.Fatalf("PUT scale: %v", err)
			}
			if updated.Spec.Replicas != 3 || s.replicas(ctx) != 3 {
				t.Errorf("after scaling to 3: scale %d, spec.replicas %d", updated.Spec.Replicas, s.replicas(ctx))
			}
			stale.Spec.Replicas = 5
			if _, err := s.update(ctx, stale); !apierrors.IsConflict(err) {
				t.Errorf("PUT of a stale scale: %v, want a 409", err)
			}
			patched, err := s.patch(ctx, []byte(`{"spec":{"replicas":4}}`))
			if err != nil || patched.Spec.Replicas != 4 {
				t.Errorf("PATCH scale: %v, %+v", err, patched)
			}
			updated.ResourceVersion = ""
			updated.Spec.Replicas = -1
			_, err = s.update(ctx, updated)
			expectInvalid(t, err, "spec.replicas", "must be greater than or equal to 0")
		})
	}

	// Server-side apply to the Scale: the applier owns the workload's spec.replicas.
	applied := []byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"scaled"},"spec":{"replicas":2}}`)
	if _, err := apps.Deployments(ns).Patch(ctx, "scaled", types.ApplyPatchType, applied, metav1.PatchOptions{FieldManager: "scaler", Force: ptr.To(true)}, "scale"); err != nil {
		t.Fatalf("applying a Scale: %v", err)
	}
	d, err := apps.Deployments(ns).Get(ctx, "scaled", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owned := false
	for _, m := range d.ManagedFields {
		owned = owned || (m.Manager == "scaler" && m.Subresource == "scale" && strings.Contains(string(m.FieldsV1.Raw), "replicas"))
	}
	if *d.Spec.Replicas != 2 || !owned {
		t.Errorf("after applying a Scale: replicas %d, managed fields %v", *d.Spec.Replicas, d.ManagedFields)
	}
}

// TestAppsTables: kubectl's columns for the workloads, as upstream's printers.
func TestAppsTables(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	if _, err := c.Client.AppsV1().Deployments(ns).Create(ctx, appsDeployment("tabled"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cases := map[string][]string{
		"/apis/apps/v1/namespaces/" + ns + "/deployments":         {"Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"},
		"/apis/apps/v1/namespaces/" + ns + "/replicasets":         {"Name", "Desired", "Current", "Ready", "Age", "Containers", "Images", "Selector"},
		"/apis/apps/v1/namespaces/" + ns + "/statefulsets":        {"Name", "Ready", "Age", "Containers", "Images"},
		"/apis/apps/v1/namespaces/" + ns + "/daemonsets":          {"Name", "Desired", "Current", "Ready", "Up-to-date", "Available", "Node Selector", "Age", "Containers", "Images", "Selector"},
		"/apis/apps/v1/namespaces/" + ns + "/controllerrevisions": {"Name", "Controller", "Revision", "Age"},
		"/api/v1/namespaces/" + ns + "/replicationcontrollers":    {"Name", "Desired", "Current", "Ready", "Age", "Containers", "Images", "Selector"},
	}
	for path, want := range cases {
		table := &metav1.Table{}
		err := c.Client.CoreV1().RESTClient().Get().AbsPath(path).
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Into(table)
		if err != nil {
			t.Errorf("%s as a table: %v", path, err)
			continue
		}
		var got []string
		for _, col := range table.ColumnDefinitions {
			got = append(got, col.Name)
		}
		if !equal(got, want) {
			t.Errorf("%s columns %v, want %v", path, got, want)
		}
	}
	table := &metav1.Table{}
	err := c.Client.CoreV1().RESTClient().Get().AbsPath("/apis/apps/v1/namespaces/"+ns+"/deployments/tabled").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Into(table)
	if err != nil || len(table.Rows) != 1 {
		t.Fatalf("deployment as a table: %v", err)
	}
	cells := table.Rows[0].Cells
	if cells[0] != "tabled" || cells[1] != "0/1" || cells[5] != "c" || cells[6] != "busybox:1.36" || cells[7] != "app=web" {
		t.Errorf("deployment row %v", cells)
	}
}

// TestAppsDiscovery: kubectl finds the workloads through discovery: apps/v1 with its short
// names and the "all" category, the scale subresources as autoscaling/v1 Scale, and rc in v1.
func TestAppsDiscovery(t *testing.T) {
	c := sharedCluster(t)
	_, lists, err := c.Client.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	resources := map[string]metav1.APIResource{}
	for _, l := range lists {
		for _, r := range l.APIResources {
			resources[l.GroupVersion+" "+r.Name] = r
		}
	}
	for key, short := range map[string]string{
		"apps/v1 deployments": "deploy", "apps/v1 replicasets": "rs", "apps/v1 statefulsets": "sts",
		"apps/v1 daemonsets": "ds", "v1 replicationcontrollers": "rc",
	} {
		r, ok := resources[key]
		if !ok {
			t.Errorf("discovery lacks %s", key)
			continue
		}
		if !equal(r.ShortNames, []string{short}) || !equal(r.Categories, []string{"all"}) || !r.Namespaced {
			t.Errorf("%s: short names %v, categories %v, namespaced %v", key, r.ShortNames, r.Categories, r.Namespaced)
		}
	}
	if _, ok := resources["apps/v1 controllerrevisions"]; !ok {
		t.Errorf("discovery lacks controllerrevisions")
	}
	for _, key := range []string{"apps/v1 deployments/scale", "apps/v1 replicasets/scale", "apps/v1 statefulsets/scale", "v1 replicationcontrollers/scale"} {
		r := resources[key]
		if r.Group != "autoscaling" || r.Version != "v1" || r.Kind != "Scale" {
			t.Errorf("%s: %s/%s %s, want autoscaling/v1 Scale", key, r.Group, r.Version, r.Kind)
		}
	}
	if _, ok := resources["apps/v1 daemonsets/status"]; !ok {
		t.Errorf("discovery lacks daemonsets/status")
	}
}
