package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-cluster/berth/pkg/cri/testimage"
)

// goImages are the images of the tests' Go programs (test/e2e/<name>) on top of busybox, in
// the loopback registry, each built once per test binary.
var goImages struct {
	sync.Mutex
	built map[string]*goImage
}

type goImage struct {
	once sync.Once
	ref  string
	err  error
}

// goProgramImage builds test/e2e/<name> statically and returns the image <name>:e2e that
// holds it as /<name>.
func goProgramImage(t *testing.T, name string) string { return goProgramImageTag(t, name, "e2e") }

// goProgramImageTag is goProgramImage under another tag: the same program as another image
// reference, for a rollout from one image to the next.
func goProgramImageTag(t *testing.T, name, tag string) string {
	t.Helper()
	host := registryHost(t)
	goImages.Lock()
	if goImages.built == nil {
		goImages.built = map[string]*goImage{}
	}
	img, ok := goImages.built[name+":"+tag]
	if !ok {
		img = &goImage{}
		goImages.built[name+":"+tag] = img
	}
	goImages.Unlock()
	img.once.Do(func() {
		bin := filepath.Join(workDir, "bin", name+"-"+tag)
		cmd := exec.Command("go", "build", "-ldflags=-s -w", "-o", bin, "./test/e2e/"+name)
		cmd.Dir = moduleRoot
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			img.err = fmt.Errorf("go build ./test/e2e/%s: %w\n%s", name, err, out)
			return
		}
		data, err := os.ReadFile(bin)
		if err != nil {
			img.err = err
			return
		}
		image, err := testimage.Busybox(name)
		if err == nil {
			image, err = testimage.AddFile(image, "/"+name, 0o755, data)
		}
		if err == nil {
			err = testimage.Push(host, name+":"+tag, image)
		}
		img.ref, img.err = host+"/"+name+":"+tag, err
	})
	if img.err != nil {
		t.Fatalf("the image of test/e2e/%s: %v", name, img.err)
	}
	return img.ref
}

// inClusterImage is the image of test/e2e/incluster: a client-go program that lists the pods
// of its namespace with rest.InClusterConfig.
func inClusterImage(t *testing.T) string { return goProgramImage(t, "incluster") }

// netexecImage is the image of test/e2e/netexec: an HTTP server, a small part of agnhost's
// netexec.
func netexecImage(t *testing.T) string { return goProgramImage(t, "netexec") }

// TestInClusterClient: a default pod (no volumes of its own) gets the ServiceAccount
// admission plugin's kube-api-access-<5> volume, and a client-go program in it that uses
// rest.InClusterConfig() reaches the API server as system:serviceaccount:NS:default. Without
// a grant it is refused in Kubernetes' words; a Role and RoleBinding let it list the pods of
// its namespace.
func TestInClusterClient(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	image := inClusterImage(t)
	pod := func(name string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - {name: client, image: %s, command: ["/incluster"]}
`, name, image)
	}

	c.mustIn(t, pod("refused"), "apply", "-n", ns, "-f", "-")
	c.waitPhase(t, ns, "refused", "Failed")
	wantContains(t, c.must(t, "logs", "-n", ns, "refused"),
		fmt.Sprintf(`error: pods is forbidden: User "system:serviceaccount:%s:default" cannot list resource "pods" in API group "" in the namespace "%s"`, ns, ns))

	volumes := c.jsonpath(t, ns, "pod/refused", `{range .spec.volumes[*]}{.name}{" "}{.projected.sources[0].serviceAccountToken.expirationSeconds}{" "}{.projected.sources[1].configMap.name}{"\n"}{end}`)
	wantMatch(t, volumes, `(?m)^kube-api-access-[a-z0-9]{5} 3607 kube-root-ca.crt$`)
	wantContains(t, c.jsonpath(t, ns, "pod/refused", `{.spec.containers[0].volumeMounts[0].mountPath}`), "/var/run/secrets/kubernetes.io/serviceaccount")

	c.must(t, "create", "role", "pod-reader", "-n", ns, "--verb=get,list", "--resource=pods")
	c.must(t, "create", "rolebinding", "pod-reader", "-n", ns, "--role=pod-reader", "--serviceaccount="+ns+":default")
	c.mustIn(t, pod("allowed"), "apply", "-n", ns, "-f", "-")
	c.waitPhase(t, ns, "allowed", "Succeeded")
	wantMatch(t, c.must(t, "logs", "-n", ns, "allowed"), fmt.Sprintf(`listed [0-9]+ pods in %s`, ns))

	// Another namespace stays closed: the Role grants one namespace.
	other := c.newNamespace(t)
	r := c.kubectl(t, "auth", "can-i", "list", "pods", "-n", other, "--as", "system:serviceaccount:"+ns+":default")
	if strings.TrimSpace(r.stdout) != "no" {
		t.Errorf("the service account may list pods in another namespace: %s", r)
	}
}

// TestServiceAccountTokenRefresh: a projected serviceAccountToken of the shortest lifetime
// the API allows (600 s) is rewritten by the node agent before it expires (at 80 % of its
// lifetime, as the kubelet's token manager does), and the new token authenticates. The test
// waits in parallel with the rest of the suite.
func TestServiceAccountTokenRefresh(t *testing.T) {
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: holder}
spec:
  terminationGracePeriodSeconds: 1
  automountServiceAccountToken: false
  containers:
  - name: c
    image: %s
    command: ["sleep", "3600"]
    volumeMounts: [{name: token, mountPath: /token}]
  volumes:
  - name: token
    projected:
      sources:
      - serviceAccountToken: {path: token, expirationSeconds: 600, audience: berth-e2e}
`, busyboxImage(t)), "apply", "-n", ns, "-f", "-")
	c.waitPhase(t, ns, "holder", "Running")
	read := func() string {
		return strings.TrimSpace(c.must(t, "exec", "-n", ns, "holder", "--", "cat", "/token/token"))
	}
	first := read()
	claims := jwtClaims(t, first)
	if got := claims.Exp - claims.Iat; got != 600 {
		t.Fatalf("the token lives %d s, want 600", got)
	}
	if claims.Sub != "system:serviceaccount:"+ns+":default" || claims.Kubernetes.Pod.Name != "holder" {
		t.Fatalf("the token is for %s (pod %q), want the default service account bound to pod holder", claims.Sub, claims.Kubernetes.Pod.Name)
	}

	t.Parallel()
	expiry := time.Unix(claims.Exp, 0)
	var second string
	for second == "" || second == first {
		if time.Now().After(expiry) {
			var lines []string
			for _, l := range strings.Split(c.proc.output.String(), "\n") {
				if strings.Contains(l, "oken") || strings.Contains(l, "volume") {
					lines = append(lines, l)
				}
			}
			t.Fatalf("the token was not refreshed before it expired at %s; berth up's lines on tokens and volumes:\n%s", expiry, tail(strings.Join(lines, "\n"), 40))
		}
		time.Sleep(10 * time.Second)
		second = read()
	}
	refreshed := jwtClaims(t, second)
	if age := refreshed.Iat - claims.Iat; age < 400 {
		t.Errorf("the token was refreshed after %d s, before 80 %% of its lifetime", age)
	}
	review := c.mustIn(t, fmt.Sprintf(`{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": %q, "audiences": ["berth-e2e"]}}`, second),
		"create", "-o", "jsonpath={.status.authenticated} {.status.user.username}", "-f", "-")
	if want := "true system:serviceaccount:" + ns + ":default"; strings.TrimSpace(review) != want {
		t.Errorf("the refreshed token's review: %q, want %q", review, want)
	}
}

// tokenClaims are the claims of a service-account token the tests look at.
type tokenClaims struct {
	Iss        string   `json:"iss"`
	Sub        string   `json:"sub"`
	Aud        []string `json:"aud"`
	Iat        int64    `json:"iat"`
	Exp        int64    `json:"exp"`
	Kubernetes struct {
		Namespace string `json:"namespace"`
		Pod       struct {
			Name string `json:"name"`
			UID  string `json:"uid"`
		} `json:"pod"`
		ServiceAccount struct {
			Name string `json:"name"`
		} `json:"serviceaccount"`
	} `json:"kubernetes.io"`
}

// jwtClaims decodes a JWT's payload without checking it: the API server checks it.
func jwtClaims(t *testing.T, token string) tokenClaims {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", token)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatalf("the JWT's payload: %v", err)
	}
	var c tokenClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		t.Fatalf("the JWT's payload %s: %v", payload, err)
	}
	return c
}
