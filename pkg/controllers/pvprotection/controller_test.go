package pvprotection

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func volume(name string, phase corev1.PersistentVolumePhase, deleting bool, finalizers ...string) *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers}, Status: corev1.PersistentVolumeStatus{Phase: phase}}
	if deleting {
		pv.DeletionTimestamp = ptr.To(metav1.Now())
	}
	return pv
}

func TestSync(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pv      *corev1.PersistentVolume
		queued  bool
		want    []string // finalizers after the sync
		updated bool
	}{
		{"deleted, available", volume("a", corev1.VolumeAvailable, true, "x", Finalizer), true, []string{"x"}, true},
		{"deleted, released", volume("r", corev1.VolumeReleased, true, Finalizer), true, []string{}, true},
		{"deleted, bound", volume("b", corev1.VolumeBound, true, Finalizer), true, []string{Finalizer}, false},
		{"live, no finalizer", volume("n", corev1.VolumeAvailable, false), true, []string{Finalizer}, true},
		{"live, finalizer", volume("l", corev1.VolumeBound, false, Finalizer), false, []string{Finalizer}, false},
		{"deleted, other finalizer", volume("o", corev1.VolumeAvailable, true, "x"), false, []string{"x"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.pv)
			factory := informers.NewSharedInformerFactory(client, 0)
			c := NewController(client, factory.Core().V1().PersistentVolumes())
			_ = factory.Core().V1().PersistentVolumes().Informer().GetIndexer().Add(tc.pv)
			c.volumeChanged(tc.pv)
			if got := c.queue.Len() == 1; got != tc.queued {
				t.Errorf("queued %v, want %v", got, tc.queued)
			}
			if err := c.sync(context.Background(), tc.pv.Name); err != nil {
				t.Fatal(err)
			}
			got, err := client.CoreV1().PersistentVolumes().Get(context.Background(), tc.pv.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Finalizers, tc.want) && !(len(got.Finalizers) == 0 && len(tc.want) == 0) {
				t.Errorf("finalizers %v, want %v", got.Finalizers, tc.want)
			}
			if updated := len(client.Actions()) > 1; updated != tc.updated {
				t.Errorf("updated %v, want %v (calls %v)", updated, tc.updated, client.Actions())
			}
		})
	}
	// An absent volume is nothing to do.
	client := fake.NewClientset()
	c := NewController(client, informers.NewSharedInformerFactory(client, 0).Core().V1().PersistentVolumes())
	if err := c.sync(context.Background(), "absent"); err != nil || len(client.Actions()) != 0 {
		t.Errorf("absent volume: %v, calls %v", err, client.Actions())
	}
}
