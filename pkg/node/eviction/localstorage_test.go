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
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
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
		func(p *v1.Pod, msg string) { evicted[p.Name] = msg },
		Config{Summary: func(context.Context) (*statsapi.Summary, error) { return &statsapi.Summary{}, nil }})
	m.synchronize(context.Background())
	if len(evicted) != 1 || evicted["big"] != `Usage of EmptyDir volume "scratch" exceeds the limit "64Ki". ` {
		t.Errorf("evicted %v, want only big, with the kubelet's message", evicted)
	}
}

func TestEphemeralStorageLimits(t *testing.T) {
	limited := func(name string, limits ...string) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)}}
		for i, l := range limits {
			c := v1.Container{Name: []string{"a", "b"}[i]}
			if l != "" {
				c.Resources.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse(l)}
			}
			p.Spec.Containers = append(p.Spec.Containers, c)
		}
		return p
	}
	pods := []*v1.Pod{
		limited("within", "10Mi"),
		limited("container-over", "10Mi", "100Mi"), // a uses 12Mi of its 10Mi; the pod 12Mi of 110Mi
		limited("pod-over", "10Mi"),                // one container: the pod's limit is its limit
		limited("unlimited", ""),
	}
	summary := &statsapi.Summary{Pods: []statsapi.PodStats{
		podStats("within", map[string][2]uint64{"a": {4 << 20, 1 << 20}}),
		podStats("container-over", map[string][2]uint64{"a": {10 << 20, 2 << 20}, "b": {0, 0}}),
		podStats("pod-over", map[string][2]uint64{"a": {11 << 20, 0}}),
		podStats("unlimited", map[string][2]uint64{"a": {1 << 30, 0}}),
	}}
	evicted := map[string]string{}
	m := NewManager(func() []*v1.Pod { return pods }, func(types.UID) string { return t.TempDir() },
		func(p *v1.Pod, msg string) { evicted[p.Name] = msg },
		Config{Summary: func(context.Context) (*statsapi.Summary, error) { return summary, nil }})
	m.synchronize(context.Background())
	want := map[string]string{
		"container-over": `Container a exceeded its local ephemeral storage limit "10Mi". `,
		"pod-over":       `Pod ephemeral local storage usage exceeds the total limit of containers 10Mi. `,
	}
	if len(evicted) != len(want) {
		t.Errorf("evicted %v, want %v", evicted, want)
	}
	for name, msg := range want {
		if evicted[name] != msg {
			t.Errorf("%s: message %q, want %q", name, evicted[name], msg)
		}
	}
}

// podStats is a pod's Summary with each container's rootfs and logs bytes.
func podStats(uid string, disk map[string][2]uint64) statsapi.PodStats {
	ps := statsapi.PodStats{PodRef: statsapi.PodReference{Name: uid, UID: uid}}
	for name, d := range disk {
		rootfs, logs := d[0], d[1]
		ps.Containers = append(ps.Containers, statsapi.ContainerStats{Name: name,
			Rootfs: &statsapi.FsStats{UsedBytes: &rootfs}, Logs: &statsapi.FsStats{UsedBytes: &logs}})
	}
	return ps
}
