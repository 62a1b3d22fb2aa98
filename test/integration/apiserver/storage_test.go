package apiserver

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/berth-cluster/berth/pkg/cluster"
)

// The API of claims and volumes, as kube-apiserver serves it: nothing binds or provisions
// them here (no controller in berth does yet), so the tests write their status themselves.

func testClaim(name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: mustQuantity("1Gi")}},
		},
	}
}

func testVolume(name string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: mustQuantity("5Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + name}},
		},
	}
}

// removeFinalizers lets a deleted claim or volume go, as the protection controllers would, and
// waits until it is gone.
func removeFinalizers(t *testing.T, ctx context.Context, patch func() error, get func() error) {
	t.Helper()
	if err := patch(); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("removing the finalizers: %v", err)
	}
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return apierrors.IsNotFound(get()), nil
	})
	if err != nil {
		t.Fatalf("the object outlived its finalizers: %v", err)
	}
}

var noFinalizers = []byte(`{"metadata":{"finalizers":null}}`)

// TestPersistentVolumeClaims: create (defaults, a reset status, the protection finalizer),
// read, list by field, update, patch, 422s with the field and reason, a status write that
// keeps the spec and a spec write that keeps the status, and a delete the finalizer holds.
func TestPersistentVolumeClaims(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	claims := c.Client.CoreV1().PersistentVolumeClaims(ns)

	in := testClaim("data")
	in.Status.Phase = corev1.ClaimBound // a client's status is not taken on create
	created, err := claims.Create(ctx, in, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a claim: %v", err)
	}
	if created.Status.Phase != corev1.ClaimPending || created.Spec.VolumeMode == nil || *created.Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
		t.Errorf("created claim: phase %q, volume mode %v; want Pending, Filesystem", created.Status.Phase, created.Spec.VolumeMode)
	}
	if !slices.Equal(created.Finalizers, []string{"kubernetes.io/pvc-protection"}) {
		t.Errorf("finalizers %v, want kubernetes.io/pvc-protection", created.Finalizers)
	}
	for _, selector := range []string{"metadata.name=data", "name=data"} {
		list, err := claims.List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil || len(list.Items) != 1 {
			t.Errorf("list by %s: %v, %d items", selector, err, len(list.Items))
		}
	}
	_, err = claims.List(ctx, metav1.ListOptions{FieldSelector: "spec.volumeName=x"})
	if !apierrors.IsBadRequest(err) || !contains(err.Error(), "field label not supported: spec.volumeName") {
		t.Errorf("list by an unsupported field: %v", err)
	}

	// Invalid claims, in upstream's words.
	bad := testClaim("bad")
	bad.Spec.Resources.Requests = nil
	_, err = claims.Create(ctx, bad, metav1.CreateOptions{})
	expectInvalid(t, err, "spec.resources[storage]", "Required value")
	bad = testClaim("bad")
	bad.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{"ReadMostly"}
	_, err = claims.Create(ctx, bad, metav1.CreateOptions{})
	expectInvalid(t, err, "spec.accessModes", `Unsupported value: "ReadMostly"`)

	got, err := claims.Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	_, err = claims.Update(ctx, got, metav1.UpdateOptions{})
	expectInvalid(t, err, "spec", "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims")

	// The binder's status write: the spec is not its to change.
	got, err = claims.Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, AccessModes: got.Spec.AccessModes,
		Capacity: corev1.ResourceList{corev1.ResourceStorage: mustQuantity("5Gi")}}
	got.Spec.StorageClassName = new(string)
	bound, err := claims.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("writing the status: %v", err)
	}
	if bound.Status.Phase != corev1.ClaimBound || bound.Status.Capacity.Storage().String() != "5Gi" || bound.Spec.StorageClassName != nil {
		t.Errorf("after a status write: status %+v, class %v", bound.Status, bound.Spec.StorageClassName)
	}
	bound.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: mustQuantity("-1")}
	_, err = claims.UpdateStatus(ctx, bound, metav1.UpdateOptions{})
	expectInvalid(t, err, "status.capacity[storage]", "must be a valid resource quantity")
	// The status conformance test's calls: a read of the subresource, a patch of conditions
	// (whose reasons upstream does not check).
	read := &corev1.PersistentVolumeClaim{}
	if err := c.Client.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/" + ns + "/persistentvolumeclaims/data/status").
		Do(ctx).Into(read); err != nil || read.Status.Phase != corev1.ClaimBound {
		t.Errorf("reading persistentvolumeclaims/status: %v, phase %q", err, read.Status.Phase)
	}
	conditions := []byte(`{"status":{"conditions":[{"type":"StatusPatched","status":"True","reason":"E2E patchedStatus","message":"Set from e2e test"}]}}`)
	patched, err := claims.Patch(ctx, "data", types.MergePatchType, conditions, metav1.PatchOptions{}, "status")
	if err != nil || len(patched.Status.Conditions) != 1 || patched.Status.Phase != corev1.ClaimBound {
		t.Errorf("patching the status conditions: %v, %+v", err, patched.Status)
	}

	// The binder sets the volume name once; the spec write keeps the status.
	bound, err = claims.Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bound.Spec.VolumeName = "pv-data"
	bound.Status = corev1.PersistentVolumeClaimStatus{}
	bound, err = claims.Update(ctx, bound, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("setting the volume name: %v", err)
	}
	if bound.Status.Phase != corev1.ClaimBound || bound.Spec.VolumeName != "pv-data" {
		t.Errorf("after a spec write: phase %q, volume %q", bound.Status.Phase, bound.Spec.VolumeName)
	}
	// Validation lets a bound claim grow; PersistentVolumeClaimResize refuses it, as no
	// StorageClass (none is served) allows expansion.
	grow := []byte(`{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`)
	_, err = claims.Patch(ctx, "data", types.StrategicMergePatchType, grow, metav1.PatchOptions{})
	if !apierrors.IsForbidden(err) || !contains(err.Error(), "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize") {
		t.Errorf("growing a bound claim of no class: %v, want 403 from PersistentVolumeClaimResize", err)
	}

	// Server-side apply knows the type (its OpenAPI schema) and leaves the status alone.
	applied, err := claims.Apply(ctx, corev1ac.PersistentVolumeClaim("applied", ns).
		WithSpec(corev1ac.PersistentVolumeClaimSpec().WithAccessModes(corev1.ReadWriteOncePod).
			WithResources(corev1ac.VolumeResourceRequirements().WithRequests(corev1.ResourceList{corev1.ResourceStorage: mustQuantity("3Gi")}))).
		WithStatus(corev1ac.PersistentVolumeClaimStatus().WithPhase(corev1.ClaimLost)), metav1.ApplyOptions{FieldManager: "storage-test"})
	if err != nil {
		t.Fatalf("applying a claim: %v", err)
	}
	if applied.Status.Phase != corev1.ClaimPending || len(applied.ManagedFields) != 1 || applied.ManagedFields[0].Manager != "storage-test" {
		t.Errorf("applied claim: phase %q, managed fields %v", applied.Status.Phase, applied.ManagedFields)
	}

	// Deleting: the claim stays, Terminating, until its finalizer goes.
	if err := claims.Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	held, err := claims.Get(ctx, "data", metav1.GetOptions{})
	if err != nil || held.DeletionTimestamp == nil {
		t.Fatalf("a deleted claim with its finalizer: %v, %+v", err, held)
	}
	removeFinalizers(t, ctx, func() error {
		_, err := claims.Patch(ctx, "data", types.MergePatchType, noFinalizers, metav1.PatchOptions{})
		return err
	}, func() error {
		_, err := claims.Get(ctx, "data", metav1.GetOptions{})
		return err
	})
}

// TestPersistentVolumes: create (defaults, Pending with its transition time, the protection
// finalizer), a status write, the source immutable, upstream's 422s, a held delete.
func TestPersistentVolumes(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client) // volumes are cluster-scoped: named after the test's namespace
	volumes := c.Client.CoreV1().PersistentVolumes()
	name := ns + "-pv"

	created, err := volumes.Create(ctx, testVolume(name), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a volume: %v", err)
	}
	t.Cleanup(func() {
		_, _ = volumes.Patch(context.Background(), name, types.MergePatchType, noFinalizers, metav1.PatchOptions{})
		_ = volumes.Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	s := created.Spec
	if created.Status.Phase != corev1.VolumePending || created.Status.LastPhaseTransitionTime == nil ||
		s.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain || *s.VolumeMode != corev1.PersistentVolumeFilesystem ||
		s.HostPath.Type == nil || *s.HostPath.Type != corev1.HostPathUnset {
		t.Errorf("created volume: status %+v, spec %+v", created.Status, s)
	}
	if !slices.Equal(created.Finalizers, []string{"kubernetes.io/pv-protection"}) {
		t.Errorf("finalizers %v, want kubernetes.io/pv-protection", created.Finalizers)
	}

	bad := testVolume(name + "-bad")
	bad.Spec.Capacity = nil
	_, err = volumes.Create(ctx, bad, metav1.CreateOptions{})
	expectInvalid(t, err, "spec.capacity", "Required value")
	bad = testVolume(name + "-bad")
	bad.Spec.PersistentVolumeSource = corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/disk"}}
	_, err = volumes.Create(ctx, bad, metav1.CreateOptions{})
	expectInvalid(t, err, "spec.nodeAffinity", "Local volume requires node affinity")
	bad = testVolume(name + "-bad")
	bad.Spec.NFS = &corev1.NFSVolumeSource{Server: "nfs", Path: "/exports"}
	_, err = volumes.Create(ctx, bad, metav1.CreateOptions{})
	expectInvalid(t, err, "spec.nfs", "may not specify more than 1 volume type")

	// The binder's status write, then a spec write of the claim reference.
	created.Status = corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable}
	available, err := volumes.UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("writing the status: %v", err)
	}
	if available.Status.Phase != corev1.VolumeAvailable || available.Status.LastPhaseTransitionTime == nil {
		t.Errorf("after a status write: %+v", available.Status)
	}
	statusPatch := []byte(`{"status":{"message":"StatusPatched","reason":"E2E patchStatus"}}`)
	available, err = volumes.Patch(ctx, name, types.MergePatchType, statusPatch, metav1.PatchOptions{}, "status")
	if err != nil || available.Status.Reason != "E2E patchStatus" || available.Status.Phase != corev1.VolumeAvailable {
		t.Fatalf("patching the status: %v, %+v", err, available.Status)
	}
	available.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: "data"}
	claimed, err := volumes.Update(ctx, available, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("setting the claim reference: %v", err)
	}
	if claimed.Status.Phase != corev1.VolumeAvailable {
		t.Errorf("a spec write changed the status: %+v", claimed.Status)
	}
	claimed.Spec.HostPath.Path = "/elsewhere"
	_, err = volumes.Update(ctx, claimed, metav1.UpdateOptions{})
	expectInvalid(t, err, "spec.persistentvolumesource", "spec.persistentvolumesource is immutable after creation")

	if err := volumes.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	held, err := volumes.Get(ctx, name, metav1.GetOptions{})
	if err != nil || held.DeletionTimestamp == nil {
		t.Fatalf("a deleted volume with its finalizer: %v, %+v", err, held)
	}
	removeFinalizers(t, ctx, func() error {
		_, err := volumes.Patch(ctx, name, types.MergePatchType, noFinalizers, metav1.PatchOptions{})
		return err
	}, func() error {
		_, err := volumes.Get(ctx, name, metav1.GetOptions{})
		return err
	})
}

// TestStorageTablesAndKubectl: the server-side tables have kubectl's columns, and the real
// kubectl gets, wide-gets and describes claims and volumes.
func TestStorageTablesAndKubectl(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	pvName := ns + "-pv"
	if _, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, testClaim("data"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pv := testVolume(pvName)
	pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: "data"}
	if _, err := c.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		volumes := c.Client.CoreV1().PersistentVolumes()
		_, _ = volumes.Patch(context.Background(), pvName, types.MergePatchType, noFinalizers, metav1.PatchOptions{})
		_ = volumes.Delete(context.Background(), pvName, metav1.DeleteOptions{})
	})

	cases := map[string][]string{
		"/api/v1/namespaces/" + ns + "/persistentvolumeclaims": {"Name", "Status", "Volume", "Capacity", "Access Modes", "StorageClass", "VolumeAttributesClass", "Age", "VolumeMode"},
		"/api/v1/persistentvolumes/" + pvName:                  {"Name", "Capacity", "Access Modes", "Reclaim Policy", "Status", "Claim", "StorageClass", "VolumeAttributesClass", "Reason", "Age", "VolumeMode"},
	}
	rows := map[string][]any{}
	for path, want := range cases {
		table := &metav1.Table{}
		err := c.Client.CoreV1().RESTClient().Get().AbsPath(path).
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Into(table)
		if err != nil {
			t.Fatalf("%s as a table: %v", path, err)
		}
		var got []string
		for _, col := range table.ColumnDefinitions {
			got = append(got, col.Name)
		}
		if !equal(got, want) {
			t.Errorf("%s columns %v, want %v", path, got, want)
		}
		if len(table.Rows) != 1 {
			t.Fatalf("%s: %d rows", path, len(table.Rows))
		}
		rows[path] = table.Rows[0].Cells
	}
	if cells := rows["/api/v1/namespaces/"+ns+"/persistentvolumeclaims"]; cells[0] != "data" || cells[1] != "Pending" || cells[8] != "Filesystem" {
		t.Errorf("claim row %v", cells)
	}
	if cells := rows["/api/v1/persistentvolumes/"+pvName]; cells[1] != "5Gi" || cells[2] != "RWO" || cells[3] != "Retain" || cells[4] != "Pending" || cells[5] != ns+"/data" {
		t.Errorf("volume row %v", cells)
	}

	kubeconfig := cluster.AdminKubeconfigPath(c.DataDir)
	out, err := kubectlAs(t, ctx, kubeconfig, "get", "pvc,pv", "-n", ns)
	if err != nil {
		t.Fatalf("kubectl get pvc,pv: %v\n%s", err, out)
	}
	for _, want := range []string{
		"NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "AGE",
		"persistentvolumeclaim/data", "RECLAIM POLICY", "CLAIM", "persistentvolume/" + pvName, ns + "/data",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get pvc,pv lacks %q:\n%s", want, out)
		}
	}
	out, err = kubectlAs(t, ctx, kubeconfig, "get", "pvc", "-n", ns, "-o", "wide")
	if err != nil || !strings.Contains(out, "VOLUMEMODE") || !strings.Contains(out, "Filesystem") {
		t.Errorf("kubectl get pvc -o wide: %v\n%s", err, out)
	}
	out, err = kubectlAs(t, ctx, kubeconfig, "describe", "pvc", "data", "-n", ns)
	if err != nil {
		t.Fatalf("kubectl describe pvc: %v\n%s", err, out)
	}
	for _, want := range []string{"Name:", "data", "Namespace:", ns, "Status:", "Pending", "Finalizers:", "kubernetes.io/pvc-protection", "VolumeMode:", "Filesystem", "Used By:"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl describe pvc lacks %q:\n%s", want, out)
		}
	}
	out, err = kubectlAs(t, ctx, kubeconfig, "describe", "pv", pvName)
	if err != nil || !strings.Contains(out, "kubernetes.io/pv-protection") || !strings.Contains(out, "HostPath") {
		t.Errorf("kubectl describe pv: %v\n%s", err, out)
	}
}

// TestStorageDiscovery: both resources and their status in core/v1, with their short names
// and scope, so that kubectl resolves "pvc" and "pv".
func TestStorageDiscovery(t *testing.T) {
	c := sharedCluster(t)
	list, err := c.Client.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	resources := map[string]metav1.APIResource{}
	for _, r := range list.APIResources {
		resources[r.Name] = r
	}
	for name, want := range map[string]struct {
		kind       string
		namespaced bool
		short      []string
	}{
		"persistentvolumeclaims":        {"PersistentVolumeClaim", true, []string{"pvc"}},
		"persistentvolumeclaims/status": {"PersistentVolumeClaim", true, nil},
		"persistentvolumes":             {"PersistentVolume", false, []string{"pv"}},
		"persistentvolumes/status":      {"PersistentVolume", false, nil},
	} {
		r, ok := resources[name]
		if !ok {
			t.Errorf("discovery lacks %s", name)
			continue
		}
		if r.Kind != want.kind || r.Namespaced != want.namespaced || !equal(r.ShortNames, want.short) {
			t.Errorf("%s: kind %s, namespaced %v, short names %v", name, r.Kind, r.Namespaced, r.ShortNames)
		}
	}
	if r := resources["persistentvolumeclaims"]; !slices.Contains(r.Verbs, "watch") || !slices.Contains(r.Verbs, "deletecollection") || r.SingularName != "persistentvolumeclaim" {
		t.Errorf("persistentvolumeclaims: verbs %v, singular %q", r.Verbs, r.SingularName)
	}
}

// TestNodeAuthorizationOfClaims: a node gets the claims of the pods bound to it, writes their
// status, and gets the volumes bound to those claims; another node gets none of them.
func TestNodeAuthorizationOfClaims(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	admin := c.Client
	ns := newNamespace(t, ctx, admin)
	nodeA, nodeB := ns+"-a", ns+"-b"
	for _, name := range []string{nodeA, nodeB} {
		if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	if _, err := admin.CoreV1().PersistentVolumeClaims(ns).Create(ctx, testClaim("data"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pvName := ns + "-pv"
	pv := testVolume(pvName)
	pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: "data"}
	if _, err := admin.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		volumes := admin.CoreV1().PersistentVolumes()
		_, _ = volumes.Patch(context.Background(), pvName, types.MergePatchType, noFinalizers, metav1.PatchOptions{})
		_ = volumes.Delete(context.Background(), pvName, metav1.DeleteOptions{})
	})
	pod := simplePod("db-0")
	pod.Spec.NodeName = nodeA
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	if _, err := admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a, b := nodeClient(t, c, nodeA), nodeClient(t, c, nodeB)

	// The graph learns of the pod and the volume through informers: access comes shortly after.
	reads := func(client kubernetes.Interface) error {
		if _, err := client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{}); err != nil {
			return err
		}
		_, err := client.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
		return err
	}
	var last error
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		last = reads(a)
		return last == nil, nil
	}); err != nil {
		t.Fatalf("%s never read its pod's claim and volume: %v", nodeA, last)
	}
	_, err := b.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
	wantForbidden(t, "another node reading the claim", err, "no relationship found between node '"+nodeB+"' and this object")
	_, err = b.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
	wantForbidden(t, "another node reading the volume", err, "no relationship found between node '"+nodeB+"' and this object")
	_, err = a.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	wantForbidden(t, "a node listing claims", err, "can only get individual resources of this type")

	// The node's status write of a resize: capacity and conditions only (NodeRestriction).
	patch := []byte(`{"status":{"capacity":{"storage":"1Gi"}}}`)
	if _, err := a.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, "data", types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Errorf("%s writing its claim's capacity: %v", nodeA, err)
	}
	_, err = a.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, "data", types.MergePatchType, []byte(`{"status":{"phase":"Lost"}}`), metav1.PatchOptions{}, "status")
	wantForbidden(t, "a node writing a claim's phase", err, "is not allowed to update fields other than status.quantity and status.conditions")
}
