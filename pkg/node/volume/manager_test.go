package volume

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/util/mount"
)

// fakeObjects serves one ConfigMap, kube-root-ca.crt.
type fakeObjects struct{}

func (fakeObjects) GetConfigMap(_ context.Context, namespace, name string) (*v1.ConfigMap, error) {
	if name != "kube-root-ca.crt" {
		return nil, errors.New("no such configmap")
	}
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: map[string]string{"ca.crt": "CA"}}, nil
}

func (fakeObjects) GetSecret(context.Context, string, string) (*v1.Secret, error) {
	return nil, errors.New("no secrets")
}

// fakeTokens hands out the token it is told to and remembers the requests.
type fakeTokens struct {
	mu       sync.Mutex
	token    string
	err      error
	requests []*authenticationv1.TokenRequest
	accounts []string
	deleted  []types.UID
}

func (f *fakeTokens) GetServiceAccountToken(_ context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, tr)
	f.accounts = append(f.accounts, namespace+"/"+name)
	if f.err != nil {
		return nil, f.err
	}
	out := tr.DeepCopy()
	out.Status.Token = f.token
	return out, nil
}

func (f *fakeTokens) DeleteServiceAccountToken(uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, uid)
}

// apiAccessPod is a pod with the volume the ServiceAccount admission plugin adds, plus a
// token of another audience and lifetime.
func apiAccessPod(mutate func(*v1.Pod)) (*v1.Pod, *v1.Volume) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-1"},
		Spec: v1.PodSpec{ServiceAccountName: "robot", Containers: []v1.Container{{Name: "c"}}, Volumes: []v1.Volume{{
			Name: "kube-api-access-abcde",
			VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
				DefaultMode: ptr.To[int32](0o644),
				Sources: []v1.VolumeProjection{
					{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
					{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "vault/token", Audience: "vault", ExpirationSeconds: ptr.To[int64](600)}},
					{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
					{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
				},
			}},
		}}},
	}
	if mutate != nil {
		mutate(pod)
	}
	return pod, &pod.Spec.Volumes[0]
}

func newTestManager(t *testing.T, tokens *fakeTokens) *Manager {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() {
		// The token volumes are tmpfs mounts; t.TempDir's clean-up cannot remove a mount point.
		if err := mount.UnmountUnder(dir); err != nil {
			t.Error(err)
		}
	})
	return NewManager(dir, fakeObjects{}, tokens, nil)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestProjectedServiceAccountToken(t *testing.T) {
	tokens := &fakeTokens{token: "first"}
	m := newTestManager(t, tokens)
	pod, vol := apiAccessPod(nil)
	dir, readOnly, ok, err := m.SetUpVolume(context.Background(), pod, vol)
	if err != nil || !ok || !readOnly {
		t.Fatalf("SetUpVolume: %v ok=%v readOnly=%v", err, ok, readOnly)
	}
	for path, want := range map[string]string{"token": "first", "vault/token": "first", "ca.crt": "CA", "namespace": "ns"} {
		if got := readFile(t, filepath.Join(dir, path)); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	if info, err := os.Stat(filepath.Join(dir, "token")); err != nil || info.Mode().Perm() != 0o644 {
		t.Errorf("token mode %v (%v), want the volume's 0644", info.Mode().Perm(), err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil || st.Type != 0x01021994 {
		t.Errorf("the token volume is not on tmpfs (%v)", err)
	}

	if len(tokens.requests) != 2 {
		t.Fatalf("%d token requests, want 2", len(tokens.requests))
	}
	for i, want := range []struct {
		audiences []string
		seconds   int64
	}{{nil, 3607}, {[]string{"vault"}, 600}} {
		spec := tokens.requests[i].Spec
		if tokens.accounts[i] != "ns/robot" || len(spec.Audiences) != len(want.audiences) || (len(want.audiences) > 0 && spec.Audiences[0] != want.audiences[0]) ||
			*spec.ExpirationSeconds != want.seconds ||
			*spec.BoundObjectRef != (authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "uid-1"}) {
			t.Errorf("request %d for %s: %+v, bound to %+v", i, tokens.accounts[i], spec, spec.BoundObjectRef)
		}
	}

	// The resync's rewrite: a renewed token replaces the old one, the other files stay.
	before, _ := os.Readlink(filepath.Join(dir, dataDirName))
	tokens.token = "second"
	running := func(types.UID) bool { return true }
	m.resync(context.Background(), running)
	after, _ := os.Readlink(filepath.Join(dir, dataDirName))
	if got := readFile(t, filepath.Join(dir, "token")); got != "second" || before == after {
		t.Errorf("after renewal token = %q, ..data %s → %s: want a new version with the new token", got, before, after)
	}
	if got := readFile(t, filepath.Join(dir, "ca.crt")); got != "CA" {
		t.Errorf("ca.crt = %q after the renewal", got)
	}

	// A failing token request fails the volume, with the kubelet's prefix.
	tokens.err = errors.New("the API server does not have TokenRequest endpoints enabled")
	_, _, _, err = m.SetUpVolume(context.Background(), pod, vol)
	if want := `MountVolume.SetUp failed for volume "kube-api-access-abcde" : the API server does not have TokenRequest endpoints enabled`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
	if got := readFile(t, filepath.Join(dir, "token")); got != "second" {
		t.Errorf("a failed refresh changed the file: %q", got)
	}

	// Once the pod's containers are gone, its tokens are dropped.
	m.resync(context.Background(), func(types.UID) bool { return false })
	if len(tokens.deleted) != 1 || tokens.deleted[0] != "uid-1" {
		t.Errorf("tokens dropped for %v, want uid-1", tokens.deleted)
	}
}

// TestProjectedServiceAccountTokenOwner: the token is the user's and 0600 when every
// container runs as that user.
func TestProjectedServiceAccountTokenOwner(t *testing.T) {
	tests := []struct {
		name      string
		pod       func(*v1.Pod)
		wantMode  os.FileMode
		wantOwner int
	}{
		{"no user", nil, 0o644, 0},
		{"the pod's user", func(p *v1.Pod) { p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: ptr.To[int64](1234)} }, 0o600, 1234},
		{"every container's user", func(p *v1.Pod) {
			p.Spec.Containers = []v1.Container{{Name: "a", SecurityContext: &v1.SecurityContext{RunAsUser: ptr.To[int64](99)}}, {Name: "b", SecurityContext: &v1.SecurityContext{RunAsUser: ptr.To[int64](99)}}}
		}, 0o600, 99},
		{"two users", func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: ptr.To[int64](1234)}
			p.Spec.Containers = []v1.Container{{Name: "a"}, {Name: "b", SecurityContext: &v1.SecurityContext{RunAsUser: ptr.To[int64](99)}}}
		}, 0o644, 0},
		{"an fsGroup", func(p *v1.Pod) { p.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr.To[int64](2000)} }, 0o640, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newTestManager(t, &fakeTokens{token: "t"})
			pod, vol := apiAccessPod(tt.pod)
			dir, _, _, err := m.SetUpVolume(context.Background(), pod, vol)
			if err != nil {
				t.Fatal(err)
			}
			info, err := os.Stat(filepath.Join(dir, "token"))
			if err != nil {
				t.Fatal(err)
			}
			if info.Mode().Perm() != tt.wantMode || int(info.Sys().(*syscall.Stat_t).Uid) != tt.wantOwner {
				t.Errorf("token %v owned by %d, want %v by %d", info.Mode().Perm(), info.Sys().(*syscall.Stat_t).Uid, tt.wantMode, tt.wantOwner)
			}
			if ca, _ := os.Stat(filepath.Join(dir, "ca.crt")); tt.wantOwner != 0 && int(ca.Sys().(*syscall.Stat_t).Uid) != 0 {
				t.Error("ca.crt was given to the user too")
			}
		})
	}
}
