package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	jose "gopkg.in/go-jose/go-jose.v2"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/berth-cluster/berth/pkg/cluster"
	"github.com/berth-cluster/berth/test/integration/framework"
)

const defaultIssuer = "https://kubernetes.default.svc.cluster.local"

// kubectl runs the real kubectl with args and returns its standard output.
func kubectl(t *testing.T, ctx context.Context, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("this test drives the real kubectl, and none is on PATH (.ci/run requires one): %v", err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// tokenKubeconfig writes a kubeconfig that presents only token, with the cluster's CA.
func tokenKubeconfig(t *testing.T, c *framework.Cluster, token string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["berth"] = &clientcmdapi.Cluster{Server: c.Config.Host, CertificateAuthorityData: c.Config.CAData}
	cfg.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["sa"] = &clientcmdapi.Context{Cluster: "berth", AuthInfo: "sa"}
	cfg.CurrentContext = "sa"
	path := filepath.Join(t.TempDir(), "token.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func tokenClient(t *testing.T, c *framework.Cluster, token string) kubernetes.Interface {
	t.Helper()
	return kubernetes.NewForConfigOrDie(&rest.Config{Host: c.Config.Host, BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.Config.CAData}})
}

func review(t *testing.T, ctx context.Context, client kubernetes.Interface, token string, audiences ...string) authenticationv1.TokenReviewStatus {
	t.Helper()
	tr, err := client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: audiences}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenReview: %v", err)
	}
	return tr.Status
}

// TestServiceAccountTokens: kubectl create token, a TokenReview of the token, a request made
// with it (who am I, and 403 for the rest until RBAC), the JWKS verifying it, and a token
// bound to a pod that dies with the pod.
func TestServiceAccountTokens(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	sa, err := c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	admin := cluster.AdminKubeconfigPath(c.DataDir)
	token := strings.TrimSpace(kubectl(t, ctx, "--kubeconfig", admin, "-n", ns, "create", "token", "robot"))
	user := "system:serviceaccount:" + ns + ":robot"

	t.Run("TokenReview", func(t *testing.T) {
		st := review(t, ctx, c.Client, token)
		if !st.Authenticated || st.Error != "" || st.User.Username != user || st.User.UID != string(sa.UID) {
			t.Fatalf("review: %+v", st)
		}
		wantGroups := []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
		if !slices.Equal(st.User.Groups, wantGroups) || !slices.Equal(st.Audiences, []string{defaultIssuer}) {
			t.Errorf("groups %v audiences %v, want %v [%s]", st.User.Groups, st.Audiences, wantGroups, defaultIssuer)
		}
		if id := st.User.Extra["authentication.kubernetes.io/credential-id"]; len(id) != 1 || !strings.HasPrefix(id[0], "JTI=") {
			t.Errorf("credential-id %v", id)
		}
		if st := review(t, ctx, c.Client, "not-a-token"); st.Authenticated || st.Error != "invalid bearer token" {
			t.Errorf("a review of garbage: %+v", st)
		}
	})

	t.Run("audiences", func(t *testing.T) {
		vault := strings.TrimSpace(kubectl(t, ctx, "--kubeconfig", admin, "-n", ns, "create", "token", "robot", "--audience", "vault", "--duration", "20m"))
		st := review(t, ctx, c.Client, vault)
		if st.Authenticated || !strings.Contains(st.Error, `token audiences ["vault"] is invalid for the target audiences`) {
			t.Errorf("a vault token for the API server: %+v", st)
		}
		if st := review(t, ctx, c.Client, vault, "vault"); !st.Authenticated || !slices.Equal(st.Audiences, []string{"vault"}) {
			t.Errorf("a vault token reviewed for vault: %+v", st)
		}
		if _, err := tokenClient(t, c, vault).CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
			t.Errorf("a request with a vault token: %v, want 401", err)
		}
	})

	t.Run("requests", func(t *testing.T) {
		client := tokenClient(t, c, token)
		ssr, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if u := ssr.Status.UserInfo; u.Username != user || !slices.Contains(u.Groups, "system:authenticated") {
			t.Errorf("SelfSubjectReview: %+v", u)
		}
		_, err = client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "`+user+`" cannot list resource "pods"`) {
			t.Errorf("listing pods with the token: %v, want 403 for %s", err, user)
		}

		var who struct {
			Status authenticationv1.SelfSubjectReviewStatus `json:"status"`
		}
		out := kubectl(t, ctx, "--kubeconfig", tokenKubeconfig(t, c, token), "auth", "whoami", "-o", "json")
		if err := json.Unmarshal([]byte(out), &who); err != nil || who.Status.UserInfo.Username != user {
			t.Errorf("kubectl auth whoami with the token: %s (%v)", out, err)
		}
		out = kubectl(t, ctx, "--kubeconfig", tokenKubeconfig(t, c, token), "auth", "whoami")
		for _, want := range []string{user, "system:serviceaccounts:" + ns, "authentication.kubernetes.io/credential-id"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl auth whoami does not print %q:\n%s", want, out)
			}
		}
		out = kubectl(t, ctx, "--kubeconfig", admin, "auth", "whoami")
		if !strings.Contains(out, "admin") || !strings.Contains(out, "system:masters") {
			t.Errorf("kubectl auth whoami as the admin:\n%s", out)
		}
	})

	t.Run("JWKS", func(t *testing.T) {
		httpClient, err := rest.HTTPClientFor(c.Config)
		if err != nil {
			t.Fatal(err)
		}
		get := func(path string) (*http.Response, []byte) {
			resp, err := httpClient.Get(c.Config.Host + path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("GET %s: %d %s %v", path, resp.StatusCode, body, err)
			}
			return resp, body
		}
		resp, body := get("/.well-known/openid-configuration")
		var doc struct {
			Issuer  string   `json:"issuer"`
			JWKSURI string   `json:"jwks_uri"`
			Algs    []string `json:"id_token_signing_alg_values_supported"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Issuer != defaultIssuer || !strings.HasPrefix(doc.JWKSURI, "https://") || !strings.HasSuffix(doc.JWKSURI, "/openid/v1/jwks") || !slices.Equal(doc.Algs, []string{"RS256"}) {
			t.Errorf("discovery document: %s", body)
		}
		// The JWKS is at the address the kubernetes Service leads to, one pods reach (of the
		// service range's family), not at any other address of the machine.
		ep, err := c.Client.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil || len(ep.Subsets) == 0 || len(ep.Subsets[0].Addresses) == 0 {
			t.Fatalf("the kubernetes Endpoints: %v %v", ep, err)
		}
		if u, err := url.Parse(doc.JWKSURI); err != nil || u.Hostname() != ep.Subsets[0].Addresses[0].IP {
			t.Errorf("jwks_uri %s, want it at the kubernetes Service's endpoint %s", doc.JWKSURI, ep.Subsets[0].Addresses[0].IP)
		}
		if ct, cc := resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"); ct != "application/json" || cc != "public, max-age=3600" {
			t.Errorf("discovery document headers: %q %q", ct, cc)
		}
		resp, body = get("/openid/v1/jwks")
		if ct := resp.Header.Get("Content-Type"); ct != "application/jwk-set+json" {
			t.Errorf("JWKS content type %q", ct)
		}
		var set jose.JSONWebKeySet
		if err := json.Unmarshal(body, &set); err != nil {
			t.Fatal(err)
		}
		sig, err := jose.ParseSigned(token)
		if err != nil {
			t.Fatal(err)
		}
		keys := set.Key(sig.Signatures[0].Header.KeyID)
		if len(keys) != 1 {
			t.Fatalf("the JWKS has %d keys for the token's kid: %s", len(keys), body)
		}
		if _, err := sig.Verify(&keys[0]); err != nil {
			t.Errorf("the JWKS's key does not verify the token: %v", err)
		}
	})

	t.Run("bound pod", func(t *testing.T) {
		pod := simplePod("web")
		pod.Spec.ServiceAccountName = "robot"
		pod, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		bound := strings.TrimSpace(kubectl(t, ctx, "--kubeconfig", admin, "-n", ns, "create", "token", "robot", "--bound-object-kind", "Pod", "--bound-object-name", "web"))
		st := review(t, ctx, c.Client, bound)
		if !st.Authenticated || !slices.Equal(st.User.Extra["authentication.kubernetes.io/pod-name"], []string{"web"}) ||
			!slices.Equal(st.User.Extra["authentication.kubernetes.io/pod-uid"], []string{string(pod.UID)}) {
			t.Fatalf("a pod-bound token: %+v", st)
		}
		// Another service account's token may not be bound to this pod.
		_, err = c.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "default", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web"}}}, metav1.CreateOptions{})
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `cannot bind token for serviceaccount "default" to pod running with different serviceaccount name.`) {
			t.Errorf("binding default's token to robot's pod: %v", err)
		}

		if err := c.Client.CoreV1().Pods(ns).Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: ptrTo(int64(0))}); err != nil {
			t.Fatal(err)
		}
		// An authenticated token is remembered for 10 s, as kube-apiserver does.
		var last authenticationv1.TokenReviewStatus
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			last = review(t, ctx, c.Client, bound)
			return !last.Authenticated, nil
		})
		if err != nil || last.Error != "service account token has been invalidated" {
			t.Fatalf("after the pod was deleted: %+v (%v)", last, err)
		}
		if st := review(t, ctx, c.Client, token); !st.Authenticated {
			t.Errorf("the unbound token died with the pod: %+v", st)
		}
	})

	t.Run("discovery", func(t *testing.T) {
		res, err := c.Client.Discovery().ServerResourcesForGroupVersion("authentication.k8s.io/v1")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range res.APIResources {
			names = append(names, r.Name+"/"+strings.Join(r.Verbs, ","))
		}
		slices.Sort(names)
		if want := []string{"selfsubjectreviews/create", "tokenreviews/create"}; !slices.Equal(names, want) {
			t.Errorf("authentication.k8s.io/v1: %v, want %v", names, want)
		}
		core, err := c.Client.Discovery().ServerResourcesForGroupVersion("v1")
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(core.APIResources, func(r metav1.APIResource) bool { return r.Name == "serviceaccounts/token" })
		if i < 0 {
			t.Fatal("serviceaccounts/token is not in discovery")
		}
		if r := core.APIResources[i]; r.Group != "authentication.k8s.io" || r.Version != "v1" || r.Kind != "TokenRequest" || !slices.Equal(r.Verbs, []string{"create"}) {
			t.Errorf("serviceaccounts/token: %+v", r)
		}
	})
}

// TestServiceAccountTokenAcrossRestart: the signing key is kept in the data dir, so a token
// issued before a restart still authenticates after it.
func TestServiceAccountTokenAcrossRestart(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	first := framework.Start(t, framework.Options{DataDir: dir})
	ns := newNamespace(t, ctx, first.Client)
	tr, err := first.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Until(tr.Status.ExpirationTimestamp.Time); d < 59*time.Minute || d > 61*time.Minute {
		t.Errorf("a default token expires in %v, want an hour", d)
	}
	key, err := os.ReadFile(filepath.Join(cluster.PKIDir(dir), "sa.key"))
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}

	second := framework.Start(t, framework.Options{DataDir: dir})
	if again, err := os.ReadFile(filepath.Join(cluster.PKIDir(dir), "sa.key")); err != nil || !bytes.Equal(again, key) {
		t.Fatalf("sa.key changed across the restart (%v)", err)
	}
	if st := review(t, ctx, second.Client, tr.Status.Token); !st.Authenticated || st.User.Username != "system:serviceaccount:"+ns+":default" {
		t.Errorf("a token issued before the restart: %+v", st)
	}
	ssr, err := tokenClient(t, second, tr.Status.Token).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || ssr.Status.UserInfo.Username != "system:serviceaccount:"+ns+":default" {
		t.Errorf("a request with it after the restart: %+v, %v", ssr, err)
	}
}
