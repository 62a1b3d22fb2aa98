package node

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// claimVolumes gives a pod a claim of its own name and an ephemeral volume, whose claim is
// named <pod>-<volume>.
func claimVolumes(claim string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes,
			corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}},
			corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
				VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{}}}})
	}
}

// volumeFor is a volume bound to namespace/claim, or to no claim.
func volumeFor(name, namespace, claim string) *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if claim != "" {
		pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: namespace, Name: claim}
	}
	return pv
}

// A node gets the claims of its pods (named and ephemeral), writes their status, and gets the
// volumes bound to them, as upstream's graph relates pvc → pod → node and pv → pvc.
func TestClaimsAndVolumesFollowThePods(t *testing.T) {
	g := NewGraph()
	az := NewAuthorizer(g, nil)
	g.AddPod(podOn("db-0", "node-a", claimVolumes("data-db-0")))
	g.AddPV(volumeFor("pv-a", "ns", "data-db-0"))
	g.AddPV(volumeFor("pv-other-ns", "other", "data-db-0"))
	g.AddPV(volumeFor("pv-free", "", ""))
	noRelation := func(node string) string { return "no relationship found between node '" + node + "' and this object" }
	claim := func(verb, sub, name string) request {
		return request{user: nodeA, verb: verb, resource: "persistentvolumeclaims", sub: sub, namespace: "ns", name: name}
	}
	pv := func(name string) request {
		return request{user: nodeA, verb: "get", resource: "persistentvolumes", name: name}
	}
	for _, c := range []struct {
		r      request
		want   authorizer.Decision
		reason string
	}{
		{claim("get", "", "data-db-0"), allowed, ""},
		{claim("get", "", "db-0-scratch"), allowed, ""},
		{claim("get", "", "someone-elses"), none, noRelation("node-a")},
		{claim("list", "", ""), none, "can only get individual resources of this type"},
		{claim("watch", "", "data-db-0"), none, "can only get individual resources of this type"},
		{claim("update", "", "data-db-0"), none, "can only get individual resources of this type"},
		{claim("update", "status", "data-db-0"), allowed, ""},
		{claim("patch", "status", "db-0-scratch"), allowed, ""},
		{claim("patch", "status", "someone-elses"), none, noRelation("node-a")},
		{claim("get", "status", "data-db-0"), none, "can only get/update/patch this type"},
		{pv("pv-a"), allowed, ""},
		{pv("pv-other-ns"), none, noRelation("node-a")},
		{pv("pv-free"), none, noRelation("node-a")},
		{pv("pv-unknown"), none, noRelation("node-a")},
		{request{user: nodeA, verb: "list", resource: "persistentvolumes"}, none, "can only get individual resources of this type"},
		{request{user: nodeA, verb: "get", resource: "persistentvolumes", sub: "status", name: "pv-a"}, none, "cannot get subresource"},
	} {
		check(t, az, c.r, c.want, c.reason)
	}
	other := claim("get", "", "data-db-0")
	other.user = nodeB
	check(t, az, other, none, noRelation("node-b"))
	otherPV := pv("pv-a")
	otherPV.user = nodeB
	check(t, az, otherPV, none, noRelation("node-b"))

	// The volume is released: the node loses it, not the claim.
	g.AddPV(volumeFor("pv-a", "", ""))
	check(t, az, pv("pv-a"), none, noRelation("node-a"))
	check(t, az, claim("get", "", "data-db-0"), allowed, "")
	// The pod goes: the claim goes with it.
	g.DeletePod("ns", "db-0")
	check(t, az, claim("get", "", "data-db-0"), none, noRelation("node-a"))
}

// The populator follows volumes through a real informer: bound, released, deleted.
func TestGraphFollowsVolumeInformer(t *testing.T) {
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	g := NewGraph()
	synced, err := AddGraphEventHandlers(g, Informers{
		Pods:              factory.Core().V1().Pods().Informer(),
		PersistentVolumes: factory.Core().V1().PersistentVolumes().Informer(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(synced) != 2 {
		t.Fatalf("%d synced funcs, want the pods' and the volumes'", len(synced))
	}
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	cache.WaitForCacheSync(stop, synced...)
	az := NewAuthorizer(g, nil)
	ctx := context.Background()
	getPV := request{user: nodeA, verb: "get", resource: "persistentvolumes", name: "pv-a"}
	eventually := func(want authorizer.Decision) {
		t.Helper()
		for i := 0; i < 200; i++ {
			if d, _, _ := az.Authorize(ctx, getPV.attributes(t)); d == want {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("decision did not become %v", want)
	}
	if _, err := client.CoreV1().Pods("ns").Create(ctx, podOn("db-0", "node-a", claimVolumes("data-db-0")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().PersistentVolumes().Create(ctx, volumeFor("pv-a", "ns", "data-db-0"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(allowed)
	if _, err := client.CoreV1().PersistentVolumes().Update(ctx, volumeFor("pv-a", "", ""), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(none)
	if _, err := client.CoreV1().PersistentVolumes().Update(ctx, volumeFor("pv-a", "ns", "data-db-0"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(allowed)
	if err := client.CoreV1().PersistentVolumes().Delete(ctx, "pv-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(none)
}
