package apiserver

import (
	"fmt"
	"testing"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// TestResourceAPI walks resource.k8s.io/v1 and storagemigration.k8s.io/v1 as the DRA
// conformance CRUD tests do: discovery, create (with defaults), get, watch, update, the
// status subresources, every patch type, lists with label and field selectors, delete and
// deletecollection; plus 422s that name the field and the tables kubectl prints.
func TestResourceAPI(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	res := c.Client.ResourceV1()
	label := map[string]string{"e2e-test.kubernetes.io": ns}
	selector := "e2e-test.kubernetes.io=" + ns

	t.Run("discovery", func(t *testing.T) {
		for gv, names := range map[string][]string{
			"resource.k8s.io/v1": {"deviceclasses", "devicetaintrules", "devicetaintrules/status", "resourceclaims",
				"resourceclaims/status", "resourceclaimtemplates", "resourceslices"},
			"storagemigration.k8s.io/v1": {"storageversionmigrations", "storageversionmigrations/status"},
		} {
			list, err := c.Client.Discovery().ServerResourcesForGroupVersion(gv)
			if err != nil {
				t.Fatalf("discovery of %s: %v", gv, err)
			}
			served := map[string]bool{}
			for _, r := range list.APIResources {
				served[r.Name] = true
			}
			for _, n := range names {
				if !served[n] {
					t.Errorf("%s does not serve %s", gv, n)
				}
			}
		}
	})

	t.Run("DeviceClass", func(t *testing.T) {
		class := &resourcev1.DeviceClass{
			ObjectMeta: metav1.ObjectMeta{Name: "test-" + ns, Labels: label},
			Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
				CEL: &resourcev1.CELDeviceSelector{Expression: "false"}}}},
		}
		created, err := res.DeviceClasses().Create(ctx, class, metav1.CreateOptions{FieldValidation: "Strict"})
		if err != nil {
			t.Fatal(err)
		}
		if created.Generation != 1 {
			t.Errorf("generation %d, want 1", created.Generation)
		}
		created.Spec.Selectors[0].CEL.Expression = "1 == 0"
		updated, err := res.DeviceClasses().Update(ctx, created, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if updated.Generation != 2 {
			t.Errorf("generation after a spec change %d, want 2", updated.Generation)
		}
		_, err = res.DeviceClasses().Patch(ctx, class.Name, types.StrategicMergePatchType,
			[]byte(`{"spec": {"selectors": [{"cel": {"expression": "device.driver == "}}]}}`), metav1.PatchOptions{})
		expectInvalid(t, err, "spec.selectors[0].cel.expression", "compilation failed")
		_, err = res.DeviceClasses().Patch(ctx, class.Name, types.StrategicMergePatchType,
			[]byte(`{"spec": {"selectors": [{"cel": {"expression": "device.driver == \"dra.example.com\""}}]}}`), metav1.PatchOptions{FieldValidation: "Strict"})
		if err != nil {
			t.Fatal(err)
		}
		if tbl := tableOf(t, ctx, c.Client, "/apis/resource.k8s.io/v1/deviceclasses", selector); columnNames(tbl) != "[Name Age]" || len(tbl.Rows) != 1 {
			t.Errorf("table: columns %s, %d rows", columnNames(tbl), len(tbl.Rows))
		}
		deleteCollection(t, func() error {
			return res.DeviceClasses().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: selector})
		}, func() error { _, err := res.DeviceClasses().Get(ctx, class.Name, metav1.GetOptions{}); return err })
	})

	t.Run("ResourceClaim", func(t *testing.T) {
		claims := res.ResourceClaims(ns)
		w, err := claims.Watch(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		claim := &resourcev1.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "test", Labels: label},
			Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
				Name: "req-0", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "dra.example.com"}}}}},
			Status: resourcev1.ResourceClaimStatus{ReservedFor: []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "p", UID: "1"}}},
		}
		created, err := claims.Create(ctx, claim, metav1.CreateOptions{FieldValidation: "Strict"})
		if err != nil {
			t.Fatal(err)
		}
		if e := created.Spec.Devices.Requests[0].Exactly; e.AllocationMode != resourcev1.DeviceAllocationModeExactCount || e.Count != 1 {
			t.Errorf("defaults: allocationMode %q count %d, want ExactCount 1", e.AllocationMode, e.Count)
		}
		if len(created.Status.ReservedFor) != 0 {
			t.Errorf("create kept the status: %+v", created.Status)
		}
		expectEvent(t, w, watch.Added, "test")

		created.Labels["test.dra.example.com"] = "test"
		updated, err := claims.Update(ctx, created, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		expectEvent(t, w, watch.Modified, "test")
		updated.Spec.Devices.Requests[0].Exactly.Count = 2
		_, err = claims.Update(ctx, updated, metav1.UpdateOptions{})
		expectInvalid(t, err, "spec", "field is immutable")

		if tbl := tableOf(t, ctx, c.Client, "/apis/resource.k8s.io/v1/namespaces/"+ns+"/resourceclaims", selector); columnNames(tbl) != "[Name State Age]" || tbl.Rows[0].Cells[1] != "pending" {
			t.Errorf("table: columns %s, row %v", columnNames(tbl), tbl.Rows[0].Cells)
		}
		// "Nothing allocated" is an allocation.
		updated, err = claims.Get(ctx, "test", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		updated.Status.Allocation = &resourcev1.AllocationResult{}
		updated.Spec.Devices.Requests[0].Exactly.Count = 5 // ignored by status
		withStatus, err := claims.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if withStatus.Status.Allocation == nil || withStatus.Spec.Devices.Requests[0].Exactly.Count != 1 {
			t.Errorf("status update: allocation %v, count %d", withStatus.Status.Allocation, withStatus.Spec.Devices.Requests[0].Exactly.Count)
		}
		expectEvent(t, w, watch.Modified, "test")
		_, err = claims.Patch(ctx, "test", types.MergePatchType,
			[]byte(`{"status": {"allocation": {"devices": {"results": [{"request": "nope", "driver": "dra.example.com", "pool": "p", "device": "d"}]}}}}`),
			metav1.PatchOptions{}, "status")
		expectInvalid(t, err, "status.allocation", "")
		_, err = claims.Patch(ctx, "test", types.JSONPatchType,
			[]byte(`[{"op": "add", "path": "/status/reservedFor", "value": [{"resource": "pods", "name": "p", "uid": "1"}]}]`), metav1.PatchOptions{}, "status")
		if err != nil {
			t.Fatal(err)
		}
		if tbl := tableOf(t, ctx, c.Client, "/apis/resource.k8s.io/v1/namespaces/"+ns+"/resourceclaims", selector); tbl.Rows[0].Cells[1] != "allocated,reserved" {
			t.Errorf("table row %v, want allocated,reserved", tbl.Rows[0].Cells)
		}

		// Server-side apply of the status, on a fresh claim.
		fresh := claim.DeepCopy()
		fresh.Name, fresh.Status = "fresh", resourcev1.ResourceClaimStatus{}
		if _, err := claims.Create(ctx, fresh, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		applied, err := claims.Patch(ctx, "fresh", types.ApplyPatchType,
			[]byte(`{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "fresh"}, "status": {"allocation": {}}}`),
			metav1.PatchOptions{FieldManager: "test-apply", Force: ptr.To(true)}, "status")
		if err != nil || applied.Status.Allocation == nil {
			t.Fatalf("apply status: %v", err)
		}

		all, err := res.ResourceClaims("").List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil || len(all.Items) != 2 {
			t.Fatalf("list in all namespaces: %v, %d items", err, len(all.Items))
		}
		byName, err := claims.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=fresh"})
		if err != nil || len(byName.Items) != 1 {
			t.Fatalf("list by metadata.name: %v, %v", err, byName)
		}

		bad := claim.DeepCopy()
		bad.Name = "bad"
		bad.Spec.Devices.Requests = []resourcev1.DeviceRequest{
			{Name: "a", Exactly: &resourcev1.ExactDeviceRequest{AllocationMode: resourcev1.DeviceAllocationModeAll, Count: 2,
				Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: "device.attributes"}}}}},
			{Name: "a"},
		}
		_, err = claims.Create(ctx, bad, metav1.CreateOptions{})
		expectInvalid(t, err, "spec.devices.requests[0].exactly.deviceClassName", "Required value")
		expectInvalid(t, err, "spec.devices.requests[0].exactly.count", "must not be specified when allocationMode is 'All'")
		expectInvalid(t, err, "spec.devices.requests[0].exactly.selectors[0].cel.expression", "must evaluate to bool")
		expectInvalid(t, err, "spec.devices.requests[1]", "exactly one of `exactly` or `firstAvailable` is required")
		expectInvalid(t, err, "spec.devices.requests[1]", "Duplicate value")

		admin := claim.DeepCopy()
		admin.Name = "admin"
		admin.Spec.Devices.Requests[0].Exactly.AdminAccess = ptr.To(true)
		_, err = claims.Create(ctx, admin, metav1.CreateOptions{})
		expectInvalid(t, err, "spec.devices.requests[0].adminAccess", "requires the `resource.kubernetes.io/admin-access: true` label")

		deleteCollection(t, func() error {
			return claims.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: selector})
		}, func() error { _, err := claims.Get(ctx, "test", metav1.GetOptions{}); return err })
	})

	t.Run("ResourceClaimTemplate", func(t *testing.T) {
		templates := res.ResourceClaimTemplates(ns)
		tmpl := &resourcev1.ResourceClaimTemplate{
			ObjectMeta: metav1.ObjectMeta{Name: "test", Labels: label},
			Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
				Requests: []resourcev1.DeviceRequest{{Name: "req-0", FirstAvailable: []resourcev1.DeviceSubRequest{
					{Name: "big", DeviceClassName: "dra.example.com"}}}}}}},
		}
		created, err := templates.Create(ctx, tmpl, metav1.CreateOptions{FieldValidation: "Strict"})
		if err != nil {
			t.Fatal(err)
		}
		if s := created.Spec.Spec.Devices.Requests[0].FirstAvailable[0]; s.AllocationMode != resourcev1.DeviceAllocationModeExactCount || s.Count != 1 {
			t.Errorf("subrequest defaults: %q %d", s.AllocationMode, s.Count)
		}
		if _, err := templates.Patch(ctx, "test", types.StrategicMergePatchType,
			[]byte(`{"metadata": {"labels": {"test.dra.example.com": "test"}}}`), metav1.PatchOptions{FieldValidation: "Strict"}); err != nil {
			t.Fatal(err)
		}
		_, err = templates.Patch(ctx, "test", types.MergePatchType, []byte(`{"spec": {"metadata": {"labels": {"a": "b"}}}}`), metav1.PatchOptions{})
		expectInvalid(t, err, "spec", "field is immutable")
		bad := tmpl.DeepCopy()
		bad.Name = "bad"
		bad.Spec.ObjectMeta.Name = "claim"
		bad.Spec.Spec.Devices.Config = []resourcev1.DeviceClaimConfiguration{{Requests: []string{"other"}}}
		_, err = templates.Create(ctx, bad, metav1.CreateOptions{})
		expectInvalid(t, err, "spec.metadata.name", "cannot be set")
		expectInvalid(t, err, "spec.spec.devices.config[0].requests[0]", "must be the name of a request in the claim")
		expectInvalid(t, err, "spec.spec.devices.config[0].opaque", "Required value")
		deleteCollection(t, func() error {
			return templates.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: selector})
		}, func() error { _, err := templates.Get(ctx, "test", metav1.GetOptions{}); return err })
	})

	t.Run("ResourceSlice", func(t *testing.T) {
		slices := res.ResourceSlices()
		slice := &resourcev1.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: "test-" + ns, Labels: label},
			Spec: resourcev1.ResourceSliceSpec{Driver: "dra.example.com", NodeName: ptr.To("no-such-node-" + ns),
				Pool: resourcev1.ResourcePool{Name: "cluster", Generation: 1, ResourceSliceCount: 1}},
		}
		created, err := slices.Create(ctx, slice, metav1.CreateOptions{FieldValidation: "Strict"})
		if err != nil {
			t.Fatal(err)
		}
		created.Spec.Devices = []resourcev1.Device{{Name: "device-0", Taints: []resourcev1.DeviceTaint{{Key: "k", Effect: resourcev1.DeviceTaintEffectNoSchedule}}}}
		updated, err := slices.Update(ctx, created, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if updated.Generation != 2 || updated.Spec.Devices[0].Taints[0].TimeAdded == nil {
			t.Errorf("update: generation %d, taint %+v", updated.Generation, updated.Spec.Devices[0].Taints[0])
		}
		for _, fs := range []string{"spec.nodeName=no-such-node-" + ns, "spec.driver=dra.example.com,spec.nodeName=no-such-node-" + ns, "spec.pool.name=cluster,spec.nodeName=no-such-node-" + ns} {
			list, err := slices.List(ctx, metav1.ListOptions{FieldSelector: fs})
			if err != nil || len(list.Items) != 1 {
				t.Errorf("list by %s: %v, %v", fs, err, list)
			}
		}
		if _, err := slices.List(ctx, metav1.ListOptions{FieldSelector: "spec.pool.generation=1"}); !apierrors.IsBadRequest(err) {
			t.Errorf("unsupported field selector: %v, want a 400", err)
		}
		if tbl := tableOf(t, ctx, c.Client, "/apis/resource.k8s.io/v1/resourceslices", selector); columnNames(tbl) != "[Name Node Driver Pool Age]" ||
			fmt.Sprint(tbl.Rows[0].Cells[1:4]) != fmt.Sprintf("[no-such-node-%s dra.example.com cluster]", ns) {
			t.Errorf("table: %s %v", columnNames(tbl), tbl.Rows)
		}
		updated.Spec.NodeName = ptr.To("other")
		_, err = slices.Update(ctx, updated, metav1.UpdateOptions{})
		expectInvalid(t, err, "spec.nodeName", "field is immutable")
		bad := slice.DeepCopy()
		bad.Name = "bad-" + ns
		bad.Spec.NodeName, bad.Spec.Pool.ResourceSliceCount = nil, 0
		bad.Spec.Devices = []resourcev1.Device{{Name: "d", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
			"version": {VersionValue: ptr.To("1.0")}}}}
		_, err = slices.Create(ctx, bad, metav1.CreateOptions{})
		expectInvalid(t, err, "spec", "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required")
		expectInvalid(t, err, "spec.pool.resourceSliceCount", "must be greater than zero")
		expectInvalid(t, err, "spec.devices[0].attributes[version].version", "must be a string compatible with semver.org spec 2.0.0")
		deleteCollection(t, func() error {
			return slices.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: selector})
		}, func() error { _, err := slices.Get(ctx, slice.Name, metav1.GetOptions{}); return err })
	})

	t.Run("DeviceTaintRule", func(t *testing.T) {
		rules := res.DeviceTaintRules()
		rule := &resourcev1.DeviceTaintRule{
			ObjectMeta: metav1.ObjectMeta{Name: "test-" + ns, Labels: label},
			Spec:       resourcev1.DeviceTaintRuleSpec{Taint: resourcev1.DeviceTaint{Key: "testing", Effect: resourcev1.DeviceTaintEffectNone}},
		}
		created, err := rules.Create(ctx, rule, metav1.CreateOptions{FieldValidation: "Strict"})
		if err != nil {
			t.Fatal(err)
		}
		if created.Spec.Taint.TimeAdded == nil || created.Generation != 1 {
			t.Errorf("create: timeAdded %v, generation %d", created.Spec.Taint.TimeAdded, created.Generation)
		}
		patched, err := rules.Patch(ctx, rule.Name, types.StrategicMergePatchType, []byte(`{"spec": {"taint": {"effect": "NoExecute"}}}`), metav1.PatchOptions{FieldValidation: "Strict"})
		if err != nil || patched.Generation != 2 {
			t.Fatalf("patch: %v, %v", err, patched)
		}
		patched.Status.Conditions = []metav1.Condition{{Type: "Testing", Status: metav1.ConditionTrue, LastTransitionTime: metav1.Now(),
			Reason: "E2E_test_running", Message: "This condition can be ignored."}}
		withStatus, err := rules.UpdateStatus(ctx, patched, metav1.UpdateOptions{})
		if err != nil || len(withStatus.Status.Conditions) != 1 {
			t.Fatalf("status: %v, %v", err, withStatus)
		}
		withStatus.Status.Conditions[0].Reason = "not a reason"
		_, err = rules.UpdateStatus(ctx, withStatus, metav1.UpdateOptions{})
		expectInvalid(t, err, "status.conditions[0].reason", "")
		_, err = rules.Patch(ctx, rule.Name, types.MergePatchType, []byte(`{"spec": {"taint": {"effect": "Sometimes"}}}`), metav1.PatchOptions{})
		expectInvalid(t, err, "spec.taint.effect", "Unsupported value")
		if tbl := tableOf(t, ctx, c.Client, "/apis/resource.k8s.io/v1/devicetaintrules", selector); columnNames(tbl) != "[Name Key Value Effect TimeAdded Age]" {
			t.Errorf("table columns %s", columnNames(tbl))
		}
		if err := rules.Delete(ctx, rule.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("StorageVersionMigration", func(t *testing.T) {
		svms := c.Client.StoragemigrationV1().StorageVersionMigrations()
		svm := &storagemigrationv1.StorageVersionMigration{
			ObjectMeta: metav1.ObjectMeta{Name: "test-" + ns, Labels: label},
			Spec:       storagemigrationv1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Group: "apps", Resource: "deployments"}},
		}
		created, err := svms.Create(ctx, svm, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status.Conditions = []metav1.Condition{{Type: "Succeeded", Status: metav1.ConditionTrue, LastTransitionTime: metav1.Now(), Reason: "Done"}}
		done, err := svms.UpdateStatus(ctx, created, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		done.Status.Conditions[0].Status = metav1.ConditionFalse
		_, err = svms.UpdateStatus(ctx, done, metav1.UpdateOptions{})
		expectInvalid(t, err, "status.conditions", "Success condition cannot be set to false once it is true")
		done, _ = svms.Get(ctx, svm.Name, metav1.GetOptions{})
		done.Spec.Resource.Resource = "replicasets"
		_, err = svms.Update(ctx, done, metav1.UpdateOptions{})
		expectInvalid(t, err, "spec", "field is immutable")
		if tbl := tableOf(t, ctx, c.Client, "/apis/storagemigration.k8s.io/v1/storageversionmigrations", selector); fmt.Sprint(tbl.Rows[0].Cells[1:]) != "[deployments.apps Succeeded]" {
			t.Errorf("table row %v", tbl.Rows[0].Cells)
		}
		if err := svms.Delete(ctx, svm.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})
}

// expectEvent waits for the next event of a watch, of type typ (and name, unless empty).
func expectEvent(t *testing.T, w watch.Interface, typ watch.EventType, name string) {
	t.Helper()
	select {
	case e, ok := <-w.ResultChan():
		if !ok {
			t.Fatalf("watch closed, want %s", typ)
		}
		obj, err := metaOf(e.Object)
		if e.Type != typ || err != nil || (name != "" && obj.GetName() != name) {
			t.Fatalf("event %s %v, want %s %s", e.Type, e.Object, typ, name)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s event", typ)
	}
}

func metaOf(obj any) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no metadata", obj)
	}
	return m, nil
}

// deleteCollection deletes by label and checks that get then says 404.
func deleteCollection(t *testing.T, del func() error, get func() error) {
	t.Helper()
	if err := del(); err != nil {
		t.Fatalf("deletecollection: %v", err)
	}
	if err := get(); !apierrors.IsNotFound(err) {
		t.Errorf("after deletecollection: %v, want 404", err)
	}
}
