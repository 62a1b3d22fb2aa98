package nodetest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/node/token"
	"github.com/berth-cluster/berth/pkg/node/volume"
	"github.com/berth-cluster/berth/test/integration/framework"
)

// claims are the parts of a service-account JWT the test checks.
type claims struct {
	Subject    string   `json:"sub"`
	Audience   []string `json:"aud"`
	IssuedAt   int64    `json:"iat"`
	Expiry     int64    `json:"exp"`
	Kubernetes struct {
		Namespace string `json:"namespace"`
		Pod       struct {
			Name string `json:"name"`
			UID  string `json:"uid"`
		} `json:"pod"`
	} `json:"kubernetes.io"`
}

// parseClaims reads a JWT's payload (the API server's TokenReview checks the signature; the
// node agent only carries the token).
func parseClaims(t *testing.T, jwt string) claims {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("%q is not a JWT", jwt)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c claims
	if err := json.Unmarshal(payload, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestNodeServiceAccountToken: a pod's projected serviceAccountToken sources (the
// kube-api-access volume ServiceAccount admission adds, and one of 600 s for an audience)
// get tokens through TokenRequest, bound to the pod, beside the cluster CA and the namespace;
// once 80 % of the short token's lifetime has passed (the token manager's clock is moved
// rather than the test sleeping 8 minutes), the volume resync writes a new one.
//
// It needs the API server's serviceaccounts/token (branch c13-tokens).
func TestNodeServiceAccountToken(t *testing.T) {
	c := framework.StartShared(t)
	clk := clocktesting.NewFakeClock(time.Now())
	tokens := token.NewManager(c.Client, clk)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { tokens.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	n := StartNode(t, c, "tokens", NodeOptions{Tokens: tokens})
	n.WaitForNodeReady(t, podTimeout)

	pod := MakePod("with-token").Node(n.Name).Container("app", "nginx:1.27").Obj()
	pod.Spec.Volumes = []v1.Volume{{Name: "vault", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		Sources: []v1.VolumeProjection{{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Audience: "vault", ExpirationSeconds: ptr.To[int64](600), Path: "token"}}},
	}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "vault", MountPath: "/var/run/secrets/vault"}}
	pod = createPod(t, c, pod)
	var apiAccess string
	for _, vol := range pod.Spec.Volumes {
		if strings.HasPrefix(vol.Name, "kube-api-access-") {
			apiAccess = vol.Name
		}
	}
	if apiAccess == "" {
		t.Fatalf("admission added no kube-api-access volume: %+v", pod.Spec.Volumes)
	}
	WaitForPod(t, c.Client, pod.Namespace, pod.Name, podTimeout, "Running", Running)

	podDir := filepath.Join(n.DataDir, "pods", string(pod.UID))
	read := func(vol, file string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(volume.Dir(podDir, volume.ProjectedPlugin, vol), file))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	checkBound := func(jwt string, audience string, lifetime int64) claims {
		t.Helper()
		cl := parseClaims(t, jwt)
		if cl.Subject != "system:serviceaccount:default:default" || cl.Kubernetes.Namespace != "default" ||
			cl.Kubernetes.Pod.Name != pod.Name || cl.Kubernetes.Pod.UID != string(pod.UID) {
			t.Errorf("token claims %+v, want the default service account bound to pod %s (%s)", cl, pod.Name, pod.UID)
		}
		if audience != "" && (len(cl.Audience) != 1 || cl.Audience[0] != audience) {
			t.Errorf("audiences %v, want [%s]", cl.Audience, audience)
		}
		if lifetime > 0 && cl.Expiry-cl.IssuedAt != lifetime {
			t.Errorf("the token lives %d s, want %d", cl.Expiry-cl.IssuedAt, lifetime)
		}
		return cl
	}

	// The kube-api-access volume: token, CA and namespace.
	checkBound(read(apiAccess, "token"), "", 0)
	if ca := read(apiAccess, "ca.crt"); !strings.Contains(ca, "BEGIN CERTIFICATE") {
		t.Errorf("ca.crt = %q", ca)
	}
	if ns := read(apiAccess, "namespace"); ns != "default" {
		t.Errorf("namespace = %q", ns)
	}
	if info, err := os.Stat(filepath.Join(volume.Dir(podDir, volume.ProjectedPlugin, apiAccess), "token")); err != nil || info.Mode().Perm() != 0o644 {
		t.Errorf("token mode %v (%v), want the volume's 0644", info.Mode().Perm(), err)
	}

	first := read("vault", "token")
	firstClaims := checkBound(first, "vault", 600)

	// Past 80 % of its lifetime (and the jitter of at most 10 s), the next resync renews it.
	clk.Step(8*time.Minute + 15*time.Second)
	var renewed string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, volume.ResyncPeriod+15*time.Second, true, func(context.Context) (bool, error) {
		renewed = read("vault", "token")
		return renewed != first, nil
	})
	if err != nil {
		t.Fatalf("the token was not renewed within a resync period after 80 %% of its lifetime")
	}
	if cl := checkBound(renewed, "vault", 600); cl.IssuedAt <= firstClaims.IssuedAt {
		t.Errorf("the renewed token was issued at %d, the first at %d", cl.IssuedAt, firstClaims.IssuedAt)
	}
}
