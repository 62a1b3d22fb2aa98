package podmanager

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	nodetypes "github.com/berth-cluster/berth/pkg/node/types"
)

func apiPod(uid, name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: name, Namespace: "ns",
		Annotations: map[string]string{nodetypes.ConfigSourceAnnotationKey: nodetypes.ApiserverSource}}}
}

func staticPod(uid, name, hash string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: name, Namespace: "ns",
		Annotations: map[string]string{nodetypes.ConfigSourceAnnotationKey: nodetypes.FileSource, nodetypes.ConfigHashAnnotationKey: hash}}}
}

func mirrorPod(uid, name, hash string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: name, Namespace: "ns",
		Annotations: map[string]string{nodetypes.ConfigSourceAnnotationKey: nodetypes.ApiserverSource, nodetypes.ConfigMirrorAnnotationKey: hash}}}
}

func uids(pods []*v1.Pod) string {
	var out []string
	for _, p := range pods {
		out = append(out, string(p.UID))
	}
	return strings.Join(out, ",")
}

func uidOf(pod *v1.Pod, ok bool) string {
	if !ok {
		return "-"
	}
	if pod == nil {
		return "nil"
	}
	return string(pod.UID)
}

func TestManager(t *testing.T) {
	web := apiPod("web-1", "web")
	etcd := staticPod("etcd-s", "etcd", "h1")
	etcdMirror := mirrorPod("etcd-m", "etcd", "h1")
	oldMirror := mirrorPod("gone-m", "gone", "h9")
	tests := []struct {
		name  string
		setup func(m *Manager)
		// Each check is "query=answer".
		checks map[string]string
	}{
		{
			name:  "empty",
			setup: func(m *Manager) {},
			checks: map[string]string{
				"GetPods": "", "mirrors": "", "orphans": "", "byUID(web-1)": "-", "translate(etcd-m)": "etcd-m",
			},
		},
		{
			name: "regular, static and mirror pods",
			setup: func(m *Manager) {
				m.AddPod(web)
				m.AddPod(etcdMirror) // the mirror may come first
				m.AddPod(etcd)
				m.AddPod(oldMirror)
			},
			checks: map[string]string{
				"GetPods":              "etcd-s,web-1",
				"mirrors":              "etcd-m,gone-m",
				"orphans":              "gone_ns",
				"byUID(web-1)":         "web-1",
				"byUID(etcd-s)":        "etcd-s",
				"byUID(etcd-m)":        "-", // mirror pods are not regular pods
				"byFullName(etcd_ns)":  "etcd-s",
				"byName(ns/web)":       "web-1",
				"byName(other/web)":    "-",
				"mirrorOf(etcd-s)":     "etcd-m",
				"mirrorOf(web-1)":      "-",
				"podOf(etcd-m)":        "etcd-s",
				"podOf(gone-m)":        "-",
				"translate(etcd-m)":    "etcd-s",
				"translate(etcd-s)":    "etcd-s",
				"translate(gone-m)":    "gone-m",
				"translate(web-1)":     "web-1",
				"complete(etcd-s)":     "etcd-s/etcd-m/false",
				"complete(etcd-m)":     "etcd-s/etcd-m/true",
				"complete(web-1)":      "web-1/nil/false",
				"translations":         "etcd-s->etcd-m | etcd-m->etcd-s",
				"isMirrorOf(etcd)":     "true",
				"isMirrorOf(outdated)": "false",
			},
		},
		{
			name: "static pod without a mirror yet",
			setup: func(m *Manager) {
				m.AddPod(etcd)
			},
			checks: map[string]string{
				"mirrorOf(etcd-s)": "-",
				"translations":     "etcd-s-> | ",
			},
		},
		{
			name: "removing the static pod orphans its mirror",
			setup: func(m *Manager) {
				m.SetPods([]*v1.Pod{web, etcd, etcdMirror})
				m.RemovePod(etcd)
			},
			checks: map[string]string{
				"GetPods":           "web-1",
				"orphans":           "etcd_ns",
				"translate(etcd-m)": "etcd-m",
				"podOf(etcd-m)":     "-",
			},
		},
		{
			name: "removing the mirror pod",
			setup: func(m *Manager) {
				m.SetPods([]*v1.Pod{etcd, etcdMirror})
				m.RemovePod(etcdMirror)
			},
			checks: map[string]string{
				"mirrors": "", "orphans": "", "mirrorOf(etcd-s)": "-", "translate(etcd-m)": "etcd-m",
			},
		},
		{
			name: "a new pod with the same full name replaces the old one by name only",
			setup: func(m *Manager) {
				m.AddPod(web)
				m.AddPod(apiPod("web-2", "web"))
				m.RemovePod(web) // the old one leaves; the name stays with the new one
			},
			checks: map[string]string{
				"GetPods": "web-2", "byName(ns/web)": "web-2", "byUID(web-1)": "-",
			},
		},
		{
			name: "update replaces the pod object",
			setup: func(m *Manager) {
				m.AddPod(web)
				updated := web.DeepCopy()
				updated.Labels = map[string]string{"v": "2"}
				m.UpdatePod(updated)
			},
			checks: map[string]string{"GetPods": "web-1", "label(web-1)": "2"},
		},
		{
			name: "SetPods replaces everything",
			setup: func(m *Manager) {
				m.AddPod(web)
				m.AddPod(oldMirror)
				m.SetPods([]*v1.Pod{etcd})
			},
			checks: map[string]string{"GetPods": "etcd-s", "mirrors": "", "orphans": "", "byUID(web-1)": "-"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New()
			tt.setup(m)
			for query, want := range tt.checks {
				if got := ask(m, query); got != want {
					t.Errorf("%s = %q, want %q", query, got, want)
				}
			}
		})
	}
}

// ask answers one query of TestManager.
func ask(m *Manager, query string) string {
	name, arg, _ := strings.Cut(strings.TrimSuffix(query, ")"), "(")
	pod := func(uid string) *v1.Pod {
		if p, ok := m.GetPodByUID(types.UID(uid)); ok {
			return p
		}
		_, mirrors, _ := m.GetPodsAndMirrorPods()
		for _, p := range mirrors {
			if string(p.UID) == uid {
				return p
			}
		}
		return nil
	}
	switch name {
	case "GetPods":
		return uids(m.GetPods())
	case "mirrors":
		_, mirrors, _ := m.GetPodsAndMirrorPods()
		return uids(mirrors)
	case "orphans":
		_, _, orphans := m.GetPodsAndMirrorPods()
		return strings.Join(orphans, ",")
	case "byUID":
		return uidOf(m.GetPodByUID(types.UID(arg)))
	case "byFullName":
		return uidOf(m.GetPodByFullName(arg))
	case "byName":
		ns, n, _ := strings.Cut(arg, "/")
		return uidOf(m.GetPodByName(ns, n))
	case "mirrorOf":
		return uidOf(m.GetMirrorPodByPod(pod(arg)))
	case "podOf":
		return uidOf(m.GetPodByMirrorPod(pod(arg)))
	case "translate":
		return string(m.TranslatePodUID(types.UID(arg)))
	case "complete":
		p, mp, wasMirror := m.GetPodAndMirrorPod(pod(arg))
		return fmt.Sprintf("%s/%s/%v", uidOf(p, true), uidOf(mp, true), wasMirror)
	case "translations":
		podToMirror, mirrorToPod := m.GetUIDTranslations()
		render := func(mp map[types.UID]types.UID) string {
			var out []string
			for k, v := range mp {
				out = append(out, string(k)+"->"+string(v))
			}
			return strings.Join(out, ",")
		}
		return render(podToMirror) + " | " + render(mirrorToPod)
	case "isMirrorOf":
		static := staticPod("etcd-s", "etcd", "h1")
		if arg == "outdated" {
			return fmt.Sprint(IsMirrorPodOf(mirrorPod("etcd-m", "etcd", "h0"), static))
		}
		return fmt.Sprint(IsMirrorPodOf(mirrorPod("etcd-m", "etcd", "h1"), static))
	case "label":
		p, _ := m.GetPodByUID(types.UID(arg))
		return p.Labels["v"]
	}
	return "unknown query " + query
}

func TestIsMirrorPodOf(t *testing.T) {
	static := staticPod("s", "etcd", "h1")
	tests := []struct {
		name   string
		mirror *v1.Pod
		want   bool
	}{
		{"same name, same hash", mirrorPod("m", "etcd", "h1"), true},
		{"outdated hash", mirrorPod("m", "etcd", "h0"), false},
		{"other name", mirrorPod("m", "api", "h1"), false},
		{"not a mirror", apiPod("m", "etcd"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsMirrorPodOf(tt.mirror, static); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestConcurrentUse(t *testing.T) {
	m := New()
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				p := apiPod(fmt.Sprintf("p%d-%d", i, j), fmt.Sprintf("p%d-%d", i, j))
				m.AddPod(p)
				m.GetPods()
				m.TranslatePodUID(p.UID)
				m.GetPodsAndMirrorPods()
				if j%2 == 0 {
					m.RemovePod(p)
				}
			}
		}(i)
	}
	wg.Wait()
	if n := len(m.GetPods()); n != 8*100 {
		t.Errorf("%d pods, want %d", n, 8*100)
	}
	if !reflect.DeepEqual(m.GetPods(), m.GetPods()) {
		t.Error("GetPods is not ordered")
	}
}
