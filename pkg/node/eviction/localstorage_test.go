package eviction

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestEmptyDirOverSizeLimitIsEvicted(t *testing.T) {
	root := t.TempDir()
	limit := resource.MustParse("64Ki")
	pod := func(uid string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: types.UID(uid)}, Spec: v1.PodSpec{Volumes: []v1.Volume{
			{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &limit}}},
			{Name: "free", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		}}}
	}
	write := func(uid, vol string, size int) {
		dir := filepath.Join(root, uid, "volumes", "kubernetes.io~empty-dir", vol)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("small", "scratch", 16<<10)
	write("small", "free", 1<<20) // no limit
	write("big", "scratch", 256<<10)
	evicted := map[string]string{}
	m := NewManager(func() []*v1.Pod { return []*v1.Pod{pod("small"), pod("big")} },
		func(uid types.UID) string { return filepath.Join(root, string(uid)) },
		func(p *v1.Pod, msg string) { evicted[p.Name] = msg })
	m.synchronize(context.Background())
	if len(evicted) != 1 || evicted["big"] != `Usage of EmptyDir volume "scratch" exceeds the limit "64Ki". ` {
		t.Errorf("evicted %v, want only big, with the kubelet's message", evicted)
	}
}
