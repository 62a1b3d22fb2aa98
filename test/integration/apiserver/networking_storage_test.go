package apiserver

import (
	"context"
	"fmt"
	"slices"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// tableOf fetches path as a server-side table, as `kubectl get` does, of the objects with
// the labels selector names ("" for all).
func tableOf(t *testing.T, ctx context.Context, client kubernetes.Interface, path, selector string) *metav1.Table {
	t.Helper()
	tbl := &metav1.Table{}
	err := client.CoreV1().RESTClient().Get().AbsPath(path).Param("labelSelector", selector).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Into(tbl)
	if err != nil {
		t.Fatalf("%s as a table: %v", path, err)
	}
	return tbl
}

func columnNames(tbl *metav1.Table) string {
	var names []string
	for _, c := range tbl.ColumnDefinitions {
		names = append(names, c.Name)
	}
	return fmt.Sprint(names)
}

// TestNetworkingStorageDiscovery: the kinds are served under their groups with upstream's
// short names and subresources.
func TestNetworkingStorageDiscovery(t *testing.T) {
	c := sharedCluster(t)
	want := map[string]map[string]string{
		"networking.k8s.io/v1": {"ingresses": "[ing]", "ingresses/status": "[]", "ingressclasses": "[]", "networkpolicies": "[netpol]"},
		"storage.k8s.io/v1": {"storageclasses": "[sc]", "csidrivers": "[]", "csinodes": "[]", "csinodes/status": "[]",
			"csistoragecapacities": "[]", "volumeattachments": "[]", "volumeattachments/status": "[]", "volumeattributesclasses": "[vac]"},
	}
	for gv, resources := range want {
		list, err := c.Client.Discovery().ServerResourcesForGroupVersion(gv)
		if err != nil {
			t.Fatalf("discovery of %s: %v", gv, err)
		}
		got := map[string]string{}
		for _, r := range list.APIResources {
			got[r.Name] = fmt.Sprint(r.ShortNames)
		}
		for name, short := range resources {
			if s, ok := got[name]; !ok || s != short {
				t.Errorf("%s %s: served %v, short names %s; want %s", gv, name, ok, s, short)
			}
		}
	}
}

// TestNetworkingStorageIngress: Ingresses are created without status, refused with a 422 on
// the path without a pathType, get their status through ingresses/status, and print as
// kubectl's table; IngressClasses and NetworkPolicies get upstream's defaults.
func TestNetworkingStorageIngress(t *testing.T) {
	ctx := testContext(t)
	c := sharedCluster(t)
	ns := newNamespace(t, ctx, c.Client)
	net := c.Client.NetworkingV1()

	ic, err := net.IngressClasses().Create(ctx, &networkingv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{Name: "nginx-" + ns},
		Spec: networkingv1.IngressClassSpec{Controller: "example.com/ingress",
			Parameters: &networkingv1.IngressClassParametersReference{Kind: "Params", Name: "p"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = net.IngressClasses().Delete(context.Background(), ic.Name, metav1.DeleteOptions{}) })
	if s := ic.Spec.Parameters.Scope; s == nil || *s != networkingv1.IngressClassParametersReferenceScopeCluster || ic.Generation != 1 {
		t.Errorf("ingress class scope %v, generation %d; want Cluster, 1", s, ic.Generation)
	}
	ic.Spec.Controller = "example.com/other"
	_, err = net.IngressClasses().Update(ctx, ic, metav1.UpdateOptions{})
	expectInvalid(t, err, "spec.controller", "field is immutable")

	pathType := networkingv1.PathTypePrefix
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To(ic.Name),
			TLS:              []networkingv1.IngressTLS{{Hosts: []string{"foo.example.com"}, SecretName: "tls"}},
			Rules: []networkingv1.IngressRule{{Host: "foo.example.com", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &pathType, Backend: networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}},
			}}}},
		},
		Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: "10.0.0.9"}}}},
	}
	bad := ing.DeepCopy()
	bad.Spec.Rules[0].HTTP.Paths[0].PathType = nil
	_, err = net.Ingresses(ns).Create(ctx, bad, metav1.CreateOptions{})
	expectInvalid(t, err, "spec.rules[0].http.paths[0].pathType", "pathType must be specified")

	created, err := net.Ingresses(ns).Create(ctx, ing, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(created.Status.LoadBalancer.Ingress) != 0 || created.Generation != 1 {
		t.Errorf("created with status %+v, generation %d; want none, 1", created.Status, created.Generation)
	}
	created.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "10.0.0.9"}}
	withStatus, err := net.Ingresses(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	withStatus.Spec.Rules[0].Host = "bar.example.com"
	updated, err := net.Ingresses(ns).Update(ctx, withStatus, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Generation != 2 || len(updated.Status.LoadBalancer.Ingress) != 1 {
		t.Errorf("after a spec update: generation %d, status %+v; want 2 and the status kept", updated.Generation, updated.Status)
	}
	list, err := net.Ingresses(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list: %v, %d items", err, len(list.Items))
	}

	tbl := tableOf(t, ctx, c.Client, "/apis/networking.k8s.io/v1/namespaces/"+ns+"/ingresses", "")
	if got := columnNames(tbl); got != "[Name Class Hosts Address Ports Age]" {
		t.Errorf("ingress columns %s", got)
	}
	if len(tbl.Rows) != 1 {
		t.Fatalf("%d ingress rows, want 1", len(tbl.Rows))
	}
	if got := fmt.Sprint(tbl.Rows[0].Cells[:5]); got != fmt.Sprintf("[web %s bar.example.com 10.0.0.9 80, 443]", ic.Name) {
		t.Errorf("ingress row %s", got)
	}

	np, err := net.NetworkPolicies(ns).Create(ctx, &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny"},
		Spec: networkingv1.NetworkPolicySpec{
			Ingress: []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(80))}}}},
			Egress:  []networkingv1.NetworkPolicyEgressRule{{}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%v %v", np.Spec.PolicyTypes, *np.Spec.Ingress[0].Ports[0].Protocol); got != "[Ingress Egress] TCP" {
		t.Errorf("network policy defaults %s, want [Ingress Egress] TCP", got)
	}
	np.Spec.Ingress[0].From = []networkingv1.NetworkPolicyPeer{{}}
	_, err = net.NetworkPolicies(ns).Update(ctx, np, metav1.UpdateOptions{})
	expectInvalid(t, err, "spec.ingress[0].from[0]", "must specify a peer")
}

// TestNetworkingStorageClasses: StorageClasses, CSIDrivers and VolumeAttributesClasses get
// upstream's defaults, refuse changes to their fixed fields, and storage classes print with
// the default class marked.
func TestNetworkingStorageClasses(t *testing.T) {
	ctx := testContext(t)
	c := sharedCluster(t)
	ns := newNamespace(t, ctx, c.Client)
	st := c.Client.StorageV1()
	cleanup := func(del func(context.Context, string, metav1.DeleteOptions) error, name string) {
		t.Cleanup(func() { _ = del(context.Background(), name, metav1.DeleteOptions{}) })
	}

	_, err := st.StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "bad-" + ns}}, metav1.CreateOptions{})
	expectInvalid(t, err, "provisioner", "Required value")

	def, err := st.StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta:  metav1.ObjectMeta{Name: "fast-" + ns, Labels: map[string]string{"test": ns}, Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
		Provisioner: "example.com/csi",
		Parameters:  map[string]string{"type": "ssd"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cleanup(st.StorageClasses().Delete, def.Name)
	if got := fmt.Sprint(*def.ReclaimPolicy, " ", *def.VolumeBindingMode); got != "Delete Immediate" {
		t.Errorf("storage class defaults %s, want Delete Immediate", got)
	}
	def.Parameters["type"] = "hdd"
	_, err = st.StorageClasses().Update(ctx, def, metav1.UpdateOptions{})
	expectInvalid(t, err, "parameters", "field is immutable")
	def, err = st.StorageClasses().Get(ctx, def.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	def.AllowVolumeExpansion = ptr.To(true)
	if def, err = st.StorageClasses().Update(ctx, def, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("allowing expansion: %v", err)
	}
	tbl := tableOf(t, ctx, c.Client, "/apis/storage.k8s.io/v1/storageclasses", "test="+ns)
	if got := columnNames(tbl); got != "[Name Provisioner ReclaimPolicy VolumeBindingMode AllowVolumeExpansion Age]" {
		t.Errorf("storage class columns %s", got)
	}
	if len(tbl.Rows) != 1 {
		t.Fatalf("%d storage class rows, want 1", len(tbl.Rows))
	}
	if got := fmt.Sprint(tbl.Rows[0].Cells[:5]); got != fmt.Sprintf("[%s (default) example.com/csi Delete Immediate true]", def.Name) {
		t.Errorf("storage class row %s", got)
	}

	drv, err := st.CSIDrivers().Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: ns + ".csi.example.com"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cleanup(st.CSIDrivers().Delete, drv.Name)
	s := drv.Spec
	if got := fmt.Sprintf("%v %v %v %v %v %v %v", *s.AttachRequired, *s.PodInfoOnMount, *s.StorageCapacity, *s.FSGroupPolicy, s.VolumeLifecycleModes, *s.RequiresRepublish, *s.SELinuxMount); got != "true false false ReadWriteOnceWithFSType [Persistent] false false" {
		t.Errorf("CSI driver defaults %s", got)
	}
	drv.Spec.AttachRequired = ptr.To(false)
	_, err = st.CSIDrivers().Update(ctx, drv, metav1.UpdateOptions{})
	expectInvalid(t, err, "spec.attachedRequired", "field is immutable")

	vac, err := st.VolumeAttributesClasses().Create(ctx, &storagev1.VolumeAttributesClass{
		ObjectMeta: metav1.ObjectMeta{Name: "gold-" + ns}, DriverName: "example.com/csi", Parameters: map[string]string{"iops": "3000"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cleanup(st.VolumeAttributesClasses().Delete, vac.Name)
	vac.Parameters["iops"] = "6000"
	_, err = st.VolumeAttributesClasses().Update(ctx, vac, metav1.UpdateOptions{})
	expectInvalid(t, err, "parameters", "updates to parameters are forbidden.")
	_, err = st.VolumeAttributesClasses().Create(ctx, &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: "empty-" + ns}, DriverName: "example.com/csi"}, metav1.CreateOptions{})
	expectInvalid(t, err, "parameters", "must contain at least one key/value pair")
}

// TestNetworkingStorageCSIObjects: CSINodes, CSIStorageCapacities and VolumeAttachments
// round-trip, keep status out of the main resource, and refuse changes to fixed fields.
func TestNetworkingStorageCSIObjects(t *testing.T) {
	ctx := testContext(t)
	c := sharedCluster(t)
	ns := newNamespace(t, ctx, c.Client)
	st := c.Client.StorageV1()

	node, err := st.CSINodes().Create(ctx, &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{Name: "node-" + ns},
		Spec:       storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "example.csi.io", NodeID: "n1", TopologyKeys: []string{"topology.kubernetes.io/zone"}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.CSINodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}) })
	node.Spec.Drivers[0].NodeID = "n2"
	_, err = st.CSINodes().Update(ctx, node, metav1.UpdateOptions{})
	expectInvalid(t, err, "spec.drivers", "field is immutable")
	_, err = st.CSINodes().Create(ctx, &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{Name: "dup-" + ns},
		Spec:       storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "a.csi.io", NodeID: "1"}, {Name: "a.csi.io", NodeID: "2"}}},
	}, metav1.CreateOptions{})
	expectInvalid(t, err, "spec.drivers[1].name", "Duplicate value")

	capacity := mustQuantity("10Gi")
	csc, err := st.CSIStorageCapacities(ns).Create(ctx, &storagev1.CSIStorageCapacity{
		ObjectMeta:       metav1.ObjectMeta{Name: "cap"},
		StorageClassName: "fast",
		NodeTopology:     &metav1.LabelSelector{MatchLabels: map[string]string{"topology.kubernetes.io/zone": "a"}},
		Capacity:         &capacity,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	csc.StorageClassName = "slow"
	_, err = st.CSIStorageCapacities(ns).Update(ctx, csc, metav1.UpdateOptions{})
	expectInvalid(t, err, "storageClassName", "field is immutable")
	caps, err := st.CSIStorageCapacities(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(caps.Items) != 1 || caps.Items[0].Capacity.String() != "10Gi" {
		t.Errorf("capacities %v, %+v", err, caps)
	}

	va, err := st.VolumeAttachments().Create(ctx, &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: "va-" + ns},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "example.csi.io", NodeName: "node-1",
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-1")}},
		Status: storagev1.VolumeAttachmentStatus{Attached: true},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.VolumeAttachments().Delete(context.Background(), va.Name, metav1.DeleteOptions{}) })
	if va.Status.Attached {
		t.Error("created attached; status is the attacher's to write")
	}
	va.Status = storagev1.VolumeAttachmentStatus{Attached: true, AttachmentMetadata: map[string]string{"dev": "/dev/sdb"}}
	va, err = st.VolumeAttachments().UpdateStatus(ctx, va, metav1.UpdateOptions{})
	if err != nil || !va.Status.Attached {
		t.Fatalf("status update: %v, %+v", err, va)
	}
	va.Spec.NodeName = "node-2"
	_, err = st.VolumeAttachments().Update(ctx, va, metav1.UpdateOptions{})
	expectInvalid(t, err, "spec", "field is immutable")
	_, err = st.VolumeAttachments().Create(ctx, &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: "nosource-" + ns},
		Spec:       storagev1.VolumeAttachmentSpec{Attacher: "example.csi.io", NodeName: "node-1"},
	}, metav1.CreateOptions{})
	expectInvalid(t, err, "spec.source", "must specify exactly one of inlineVolumeSpec and persistentVolumeName")

	got, err := st.VolumeAttachments().List(ctx, metav1.ListOptions{})
	if err != nil || !slices.ContainsFunc(got.Items, func(v storagev1.VolumeAttachment) bool { return v.Name == va.Name && v.Status.Attached }) {
		t.Errorf("attachments %v: lack %s attached", err, va.Name)
	}
}
