package serviceaccount

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	jose "gopkg.in/go-jose/go-jose.v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/authenticator"
)

const testIssuer = "https://kubernetes.default.svc.cluster.local"

var (
	keysOnce   sync.Once
	key1, key2 *rsa.PrivateKey
)

func testKeys(t *testing.T) (*rsa.PrivateKey, *rsa.PrivateKey) {
	t.Helper()
	keysOnce.Do(func() {
		var err error
		if key1, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if key2, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
	})
	return key1, key2
}

// fakeGetter holds the cluster's objects by namespace/name.
type fakeGetter struct {
	sas     map[string]*corev1.ServiceAccount
	pods    map[string]*corev1.Pod
	secrets map[string]*corev1.Secret
	nodes   map[string]*corev1.Node
}

func (g *fakeGetter) ServiceAccount(_ context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	if o, ok := g.sas[ns+"/"+name]; ok {
		return o, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("serviceaccounts"), name)
}

func (g *fakeGetter) Pod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	if o, ok := g.pods[ns+"/"+name]; ok {
		return o, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
}

func (g *fakeGetter) Secret(_ context.Context, ns, name string) (*corev1.Secret, error) {
	if o, ok := g.secrets[ns+"/"+name]; ok {
		return o, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("secrets"), name)
}

func (g *fakeGetter) Node(_ context.Context, name string) (*corev1.Node, error) {
	if o, ok := g.nodes[name]; ok {
		return o, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("nodes"), name)
}

func meta(ns, name, uid string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}
}

func world() *fakeGetter {
	return &fakeGetter{
		sas:     map[string]*corev1.ServiceAccount{"ns/robot": {ObjectMeta: meta("ns", "robot", "sa-uid")}},
		pods:    map[string]*corev1.Pod{"ns/web": {ObjectMeta: meta("ns", "web", "pod-uid"), Spec: corev1.PodSpec{NodeName: "n1"}}},
		secrets: map[string]*corev1.Secret{"ns/s": {ObjectMeta: meta("ns", "s", "secret-uid")}},
		nodes:   map[string]*corev1.Node{"n1": {ObjectMeta: meta("", "n1", "node-uid")}},
	}
}

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func testIssuerAt(t *testing.T, iss string, key *rsa.PrivateKey, now time.Time) *Issuer {
	t.Helper()
	i, err := NewIssuer(iss, key)
	if err != nil {
		t.Fatal(err)
	}
	i.now = func() time.Time { return now }
	i.newID = func() string { return "the-jti" }
	return i
}

func authAt(t *testing.T, g Getter, now time.Time, keys ...*rsa.PrivateKey) *Authenticator {
	t.Helper()
	var pubs []PublicKey
	for _, k := range keys {
		p, err := NewPublicKeys(&k.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		pubs = append(pubs, p...)
	}
	a := NewAuthenticator([]string{testIssuer, "https://old.example"}, pubs, []string{testIssuer}, g)
	a.now = func() time.Time { return now }
	return a
}

func payload(t *testing.T, token string) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestClaims: the claims kube-apiserver writes for a pod-bound, extended token.
func TestClaims(t *testing.T) {
	k, _ := testKeys(t)
	g := world()
	tok, jti, err := testIssuerAt(t, testIssuer, k, t0).Issue(Token{
		ServiceAccount: g.sas["ns/robot"], Pod: g.pods["ns/web"], Node: g.nodes["n1"],
		Audiences: []string{testIssuer}, ExpirationSeconds: ExtendedExpirationSeconds, WarnAfterSeconds: WarnOnlyExpirationSeconds,
	})
	if err != nil {
		t.Fatal(err)
	}
	if jti != "the-jti" {
		t.Errorf("jti = %q", jti)
	}
	want := map[string]any{
		"iss": testIssuer, "sub": "system:serviceaccount:ns:robot", "aud": []any{testIssuer},
		"iat": float64(t0.Unix()), "nbf": float64(t0.Unix()), "exp": float64(t0.Unix() + ExtendedExpirationSeconds), "jti": "the-jti",
		"kubernetes.io": map[string]any{
			"namespace":      "ns",
			"serviceaccount": map[string]any{"name": "robot", "uid": "sa-uid"},
			"pod":            map[string]any{"name": "web", "uid": "pod-uid"},
			"node":           map[string]any{"name": "n1", "uid": "node-uid"},
			"warnafter":      float64(t0.Unix() + WarnOnlyExpirationSeconds),
		},
	}
	if got := payload(t, tok); !reflect.DeepEqual(got, want) {
		t.Errorf("claims:\n got %v\nwant %v", got, want)
	}
	parsed, err := jose.ParseSigned(tok)
	if err != nil {
		t.Fatal(err)
	}
	kid, _ := KeyID(&k.PublicKey)
	if h := parsed.Signatures[0].Header; h.Algorithm != "RS256" || h.KeyID != kid {
		t.Errorf("header alg %q kid %q, want RS256 %q", h.Algorithm, h.KeyID, kid)
	}

	if _, _, err := testIssuerAt(t, testIssuer, k, t0).Issue(Token{ServiceAccount: g.sas["ns/robot"], Pod: g.pods["ns/web"], Secret: g.secrets["ns/s"]}); err == nil {
		t.Error("a token bound to a pod and a secret was issued")
	}
}

// TestAuthenticate: who a token is, and every reason kube-apiserver gives for refusing one.
func TestAuthenticate(t *testing.T) {
	k1, k2 := testKeys(t)
	base := world()
	sa, pod, secret, node := base.sas["ns/robot"], base.pods["ns/web"], base.secrets["ns/s"], base.nodes["n1"]
	hour := int64(3600)
	issue := func(iss string, key *rsa.PrivateKey, tok Token) string {
		if tok.ExpirationSeconds == 0 {
			tok.ExpirationSeconds = hour
		}
		if tok.Audiences == nil {
			tok.Audiences = []string{testIssuer}
		}
		s, _, err := testIssuerAt(t, iss, key, t0).Issue(tok)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	deleting := metav1.NewTime(t0.Add(-2 * time.Minute))

	tests := []struct {
		name      string
		token     string
		world     func(*fakeGetter)
		at        time.Duration // after t0
		audiences []string      // the request's, when set
		keys      []*rsa.PrivateKey
		wantUser  string
		wantExtra map[string][]string
		wantErr   string
		wantNone  bool // not ours: no opinion, no error
	}{
		{name: "pod-bound", token: issue(testIssuer, k1, Token{ServiceAccount: sa, Pod: pod, Node: node}),
			wantUser: "system:serviceaccount:ns:robot", wantExtra: map[string][]string{
				"authentication.kubernetes.io/pod-name": {"web"}, "authentication.kubernetes.io/pod-uid": {"pod-uid"},
				"authentication.kubernetes.io/node-name": {"n1"}, "authentication.kubernetes.io/node-uid": {"node-uid"},
				"authentication.kubernetes.io/credential-id": {"JTI=the-jti"}}},
		{name: "unbound", token: issue(testIssuer, k1, Token{ServiceAccount: sa}),
			wantUser: "system:serviceaccount:ns:robot", wantExtra: map[string][]string{"authentication.kubernetes.io/credential-id": {"JTI=the-jti"}}},
		{name: "second issuer accepted", token: issue("https://old.example", k1, Token{ServiceAccount: sa}), wantUser: "system:serviceaccount:ns:robot"},
		{name: "rotated: old key still verifies", token: issue(testIssuer, k2, Token{ServiceAccount: sa}), keys: []*rsa.PrivateKey{k1, k2}, wantUser: "system:serviceaccount:ns:robot"},
		{name: "key no longer trusted", token: issue(testIssuer, k2, Token{ServiceAccount: sa}), wantErr: "invalid signature, no keys found"},
		{name: "another issuer is not ours", token: issue("https://elsewhere.example", k1, Token{ServiceAccount: sa}), wantNone: true},
		{name: "not a JWT", token: "abc.def", wantNone: true},
		{name: "wrong audience", token: issue(testIssuer, k1, Token{ServiceAccount: sa, Audiences: []string{"vault"}}),
			wantErr: `token audiences ["vault"] is invalid for the target audiences ["https://kubernetes.default.svc.cluster.local"]`},
		{name: "audience asked for by a review", token: issue(testIssuer, k1, Token{ServiceAccount: sa, Audiences: []string{"vault"}}), audiences: []string{"vault"},
			wantUser: "system:serviceaccount:ns:robot"},
		{name: "expired", token: issue(testIssuer, k1, Token{ServiceAccount: sa}), at: time.Hour + 2*time.Minute, wantErr: "service account token has expired"},
		{name: "within the leeway", token: issue(testIssuer, k1, Token{ServiceAccount: sa}), at: time.Hour + 30*time.Second, wantUser: "system:serviceaccount:ns:robot"},
		{name: "not yet valid", token: issue(testIssuer, k1, Token{ServiceAccount: sa}), at: -2 * time.Minute, wantErr: "service account token is not valid yet"},
		{name: "service account gone", token: issue(testIssuer, k1, Token{ServiceAccount: sa}), world: func(g *fakeGetter) { delete(g.sas, "ns/robot") },
			wantErr: `serviceaccounts "robot" not found`},
		{name: "service account recreated", token: issue(testIssuer, k1, Token{ServiceAccount: sa}),
			world: func(g *fakeGetter) {
				g.sas["ns/robot"] = &corev1.ServiceAccount{ObjectMeta: meta("ns", "robot", "new")}
			},
			wantErr: "service account UID (new) does not match claim (sa-uid)"},
		{name: "service account being deleted", token: issue(testIssuer, k1, Token{ServiceAccount: sa}),
			world:   func(g *fakeGetter) { s := sa.DeepCopy(); s.DeletionTimestamp = &deleting; g.sas["ns/robot"] = s },
			wantErr: "service account ns/robot has been deleted"},
		{name: "bound pod deleted", token: issue(testIssuer, k1, Token{ServiceAccount: sa, Pod: pod}), world: func(g *fakeGetter) { delete(g.pods, "ns/web") },
			wantErr: "service account token has been invalidated"},
		{name: "bound pod recreated", token: issue(testIssuer, k1, Token{ServiceAccount: sa, Pod: pod}),
			world:   func(g *fakeGetter) { g.pods["ns/web"] = &corev1.Pod{ObjectMeta: meta("ns", "web", "pod-2")} },
			wantErr: "pod UID (pod-2) does not match service account pod ref claim (pod-uid)"},
		{name: "bound pod being deleted", token: issue(testIssuer, k1, Token{ServiceAccount: sa, Pod: pod}),
			world:   func(g *fakeGetter) { p := pod.DeepCopy(); p.DeletionTimestamp = &deleting; g.pods["ns/web"] = p },
			wantErr: "service account token has been invalidated"},
		{name: "bound pod just began deleting", token: issue(testIssuer, k1, Token{ServiceAccount: sa, Pod: pod}),
			world: func(g *fakeGetter) {
				p := pod.DeepCopy()
				now := metav1.NewTime(t0)
				p.DeletionTimestamp = &now
				g.pods["ns/web"] = p
			},
			wantUser: "system:serviceaccount:ns:robot"},
		{name: "pod's node is not looked up", token: issue(testIssuer, k1, Token{ServiceAccount: sa, Pod: pod, Node: node}), world: func(g *fakeGetter) { delete(g.nodes, "n1") },
			wantUser: "system:serviceaccount:ns:robot"},
		{name: "bound secret deleted", token: issue(testIssuer, k1, Token{ServiceAccount: sa, Secret: secret}), world: func(g *fakeGetter) { delete(g.secrets, "ns/s") },
			wantErr: "service account token has been invalidated"},
		{name: "bound secret recreated", token: issue(testIssuer, k1, Token{ServiceAccount: sa, Secret: secret}),
			world:   func(g *fakeGetter) { g.secrets["ns/s"] = &corev1.Secret{ObjectMeta: meta("ns", "s", "s2")} },
			wantErr: "secret UID (s2) does not match service account secret ref claim (secret-uid)"},
		{name: "bound node", token: issue(testIssuer, k1, Token{ServiceAccount: sa, Node: node}), wantUser: "system:serviceaccount:ns:robot",
			wantExtra: map[string][]string{"authentication.kubernetes.io/node-name": {"n1"}, "authentication.kubernetes.io/node-uid": {"node-uid"},
				"authentication.kubernetes.io/credential-id": {"JTI=the-jti"}}},
		{name: "bound node deleted", token: issue(testIssuer, k1, Token{ServiceAccount: sa, Node: node}), world: func(g *fakeGetter) { delete(g.nodes, "n1") },
			wantErr: "service account token has been invalidated"},
		{name: "bound node recreated", token: issue(testIssuer, k1, Token{ServiceAccount: sa, Node: node}),
			world:   func(g *fakeGetter) { g.nodes["n1"] = &corev1.Node{ObjectMeta: meta("", "n1", "n2")} },
			wantErr: "node UID (n2) does not match service account node ref claim (node-uid)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := world()
			if tc.world != nil {
				tc.world(g)
			}
			keys := tc.keys
			if keys == nil {
				keys = []*rsa.PrivateKey{k1}
			}
			a := authAt(t, g, t0.Add(tc.at), keys...)
			ctx := context.Background()
			if tc.audiences != nil {
				ctx = authenticator.WithAudiences(ctx, tc.audiences)
			}
			resp, ok, err := a.AuthenticateToken(ctx, tc.token)
			switch {
			case tc.wantNone:
				if ok || err != nil {
					t.Fatalf("got %v, %v; want no opinion", ok, err)
				}
			case tc.wantErr != "":
				if ok || err == nil || err.Error() != tc.wantErr {
					t.Fatalf("got %v, %v; want error %q", ok, err, tc.wantErr)
				}
			default:
				if !ok || err != nil {
					t.Fatalf("got %v, %v; want authenticated", ok, err)
				}
				u := resp.User
				if u.GetName() != tc.wantUser || u.GetUID() != "sa-uid" {
					t.Errorf("user %q uid %q", u.GetName(), u.GetUID())
				}
				if want := []string{"system:serviceaccounts", "system:serviceaccounts:ns"}; !reflect.DeepEqual(u.GetGroups(), want) {
					t.Errorf("groups %v, want %v", u.GetGroups(), want)
				}
				if tc.wantExtra != nil && !reflect.DeepEqual(u.GetExtra(), tc.wantExtra) {
					t.Errorf("extra:\n got %v\nwant %v", u.GetExtra(), tc.wantExtra)
				}
			}
		})
	}
}

// TestOpenIDMetadata: the documents kube-apiserver serves, byte for byte in shape.
func TestOpenIDMetadata(t *testing.T) {
	k1, k2 := testKeys(t)
	keys, err := NewPublicKeys(k1, &k2.PublicKey, &k1.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 {
		t.Fatalf("%d keys, want the repeated one dropped", len(keys))
	}
	md, err := NewOpenIDMetadata(testIssuer, "", "10.0.0.1:6443", keys)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	md.ServeConfig(rec, httptest.NewRequest("GET", OpenIDConfigPath, nil))
	wantConfig := `{"issuer":"https://kubernetes.default.svc.cluster.local","jwks_uri":"https://10.0.0.1:6443/openid/v1/jwks",` +
		`"response_types_supported":["id_token"],"subject_types_supported":["public"],"id_token_signing_alg_values_supported":["RS256"]}`
	if rec.Body.String() != wantConfig || rec.Header().Get("Content-Type") != "application/json" || rec.Header().Get("Cache-Control") != "public, max-age=3600" {
		t.Errorf("config: %s %v", rec.Body, rec.Header())
	}

	rec = httptest.NewRecorder()
	md.ServeKeys(rec, httptest.NewRequest("GET", JWKSPath, nil))
	if ct := rec.Header().Get("Content-Type"); ct != "application/jwk-set+json" || rec.Header().Get("Cache-Control") != "public, max-age=3600" {
		t.Errorf("keys headers: %v", rec.Header())
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(rec.Body.Bytes(), &set); err != nil {
		t.Fatal(err)
	}
	if len(set.Keys) != 2 || set.Keys[0].KeyID != keys[0].KeyID || set.Keys[0].Algorithm != "RS256" || set.Keys[0].Use != "sig" || !set.Keys[0].IsPublic() {
		t.Fatalf("keys: %+v", set.Keys)
	}
	// The published key verifies a token.
	tok, _, err := testIssuerAt(t, testIssuer, k1, t0).Issue(Token{ServiceAccount: world().sas["ns/robot"], ExpirationSeconds: 3600})
	if err != nil {
		t.Fatal(err)
	}
	sig, err := jose.ParseSigned(tok)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sig.Verify(&set.Keys[0]); err != nil {
		t.Errorf("the JWKS's key does not verify the token: %v", err)
	}

	md, err = NewOpenIDMetadata(testIssuer, "https://issuer.example/keys", "", keys)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md.config), `"jwks_uri":"https://issuer.example/keys"`) {
		t.Errorf("config with --service-account-jwks-uri: %s", md.config)
	}
	for _, bad := range []string{"http://x", "https://x?q=1", "https://x#f", "plain"} {
		if _, err := NewOpenIDMetadata(bad, "", "a:1", keys); err == nil {
			t.Errorf("issuer %q: want an error", bad)
		}
	}
}
