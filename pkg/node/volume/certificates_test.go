package volume

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// fakeAnchors answers bundle "ctb" by name and signer "s" with the alive=true selector.
type fakeAnchors struct{}

func (fakeAnchors) GetTrustAnchorsByName(_ context.Context, name string, allowMissing bool) ([]byte, error) {
	if name == "ctb" {
		return []byte("BY NAME\n"), nil
	}
	if allowMissing {
		return []byte{}, nil
	}
	return nil, errors.New(`clustertrustbundles.certificates.k8s.io "` + name + `" not found`)
}

func (fakeAnchors) GetTrustAnchorsBySigner(_ context.Context, signer string, sel *metav1.LabelSelector, allowMissing bool) ([]byte, error) {
	if signer == "s" && sel != nil && sel.MatchLabels["alive"] == "true" {
		return []byte("BY SIGNER\n"), nil
	}
	if allowMissing {
		return []byte{}, nil
	}
	return nil, errors.New("combination of signerName and labelSelector matched zero ClusterTrustBundles")
}

// fakeCerts hands out fixed credentials and remembers the waits and forgotten pods.
type fakeCerts struct {
	waits     []time.Duration
	forgotten []types.UID
}

func (f *fakeCerts) GetPodCertificateCredentialBundle(_ context.Context, pod *v1.Pod, vol string, index int, src *v1.PodCertificateProjection, wait time.Duration) ([]byte, []byte, error) {
	f.waits = append(f.waits, wait)
	if src.SignerName != "good" {
		return nil, nil, errors.New("credential bundle is not issued yet")
	}
	return []byte("KEY\n"), []byte("CHAIN of " + vol + "/" + string(rune('0'+index)) + "\n"), nil
}

func (f *fakeCerts) ForgetPod(uid types.UID) { f.forgotten = append(f.forgotten, uid) }

func certPod(sources ...v1.VolumeProjection) (*v1.Pod, *v1.Volume) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-c"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}, Volumes: []v1.Volume{{
			Name:         "tls",
			VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o644), Sources: sources}},
		}}},
	}
	return pod, &pod.Spec.Volumes[0]
}

func TestProjectedCertificates(t *testing.T) {
	m := newTestManager(t, &fakeTokens{})
	certs := &fakeCerts{}
	m.SetCertificates(fakeAnchors{}, certs)
	pod, vol := certPod(
		v1.VolumeProjection{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Name: ptr.To("ctb"), Path: "name.pem"}},
		v1.VolumeProjection{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{SignerName: ptr.To("s"), LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"alive": "true"}}, Path: "signer.pem"}},
		v1.VolumeProjection{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Name: ptr.To("nowhere"), Optional: ptr.To(true), Path: "missing.pem"}},
		v1.VolumeProjection{PodCertificate: &v1.PodCertificateProjection{SignerName: "good", CredentialBundlePath: "creds.pem", KeyPath: "key.pem", CertificateChainPath: "chain.pem"}},
	)
	dir, readOnly, ok, err := m.SetUpVolume(context.Background(), pod, vol)
	if err != nil || !ok || !readOnly {
		t.Fatalf("SetUpVolume: %v ok=%v readOnly=%v", err, ok, readOnly)
	}
	for file, want := range map[string]string{
		"name.pem":    "BY NAME\n",
		"signer.pem":  "BY SIGNER\n",
		"missing.pem": "",
		"creds.pem":   "KEY\nCHAIN of tls/3\n",
		"key.pem":     "KEY\n",
		"chain.pem":   "CHAIN of tls/3\n",
	} {
		if got := readFile(t, filepath.Join(dir, file)); got != want {
			t.Errorf("%s: %q, want %q", file, got, want)
		}
	}
	if !isTmpfs(t, dir) {
		t.Error("a volume with a private key is not on tmpfs")
	}
	// The first setup may wait for the certificate; the resync never does.
	m.resync(context.Background(), func(types.UID) bool { return true })
	if len(certs.waits) != 2 || certs.waits[0] != IssueWait || certs.waits[1] != 0 {
		t.Errorf("waits %v, want [%v 0]", certs.waits, IssueWait)
	}
	m.resync(context.Background(), func(types.UID) bool { return false })
	if len(certs.forgotten) != 1 || certs.forgotten[0] != "uid-c" {
		t.Errorf("forgotten %v, want the pod once its containers are gone", certs.forgotten)
	}

	// Sources that cannot be answered fail the volume, naming it.
	for _, src := range []v1.VolumeProjection{
		{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{SignerName: ptr.To("s"), LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"alive": "unknown"}}, Path: "b.pem"}},
		{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Name: ptr.To("nowhere"), Optional: ptr.To(false), Path: "b.pem"}},
		{PodCertificate: &v1.PodCertificateProjection{SignerName: "slow", CredentialBundlePath: "creds.pem"}},
	} {
		pod, vol := certPod(src)
		pod.UID = "uid-fail"
		_, _, _, err := m.SetUpVolume(context.Background(), pod, vol)
		if err == nil || !strings.HasPrefix(err.Error(), `MountVolume.SetUp failed for volume "tls" : `) {
			t.Errorf("%+v: %v, want the volume's setup to fail", src, err)
		}
	}
}

func TestProjectedCertificatesModeWithUser(t *testing.T) {
	m := newTestManager(t, &fakeTokens{})
	m.SetCertificates(fakeAnchors{}, &fakeCerts{})
	pod, vol := certPod(v1.VolumeProjection{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Name: ptr.To("ctb"), Path: "name.pem"}})
	pod.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}
	dir, _, _, err := m.SetUpVolume(context.Background(), pod, vol)
	if err != nil {
		t.Fatal(err)
	}
	if mode := fileMode(t, filepath.Join(dir, "name.pem")); mode != 0o600 {
		t.Errorf("mode %o, want 0600 for a pod of one user", mode)
	}
}

func isTmpfs(t *testing.T, dir string) bool {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return st.Type == 0x01021994
}

func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Mode().Perm()
}
