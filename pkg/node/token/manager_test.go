package token

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// fakeAPI answers TokenRequests on a fake clientset as kube-apiserver does: a token that
// expires expirationSeconds after now, echoing the spec.
type fakeAPI struct {
	clock *clocktesting.FakeClock

	mu    sync.Mutex
	calls []*authenticationv1.TokenRequest
	fail  error
}

func (f *fakeAPI) react(action k8stesting.Action) (bool, runtime.Object, error) {
	create := action.(k8stesting.CreateAction)
	tr := create.GetObject().(*authenticationv1.TokenRequest).DeepCopy()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return true, nil, f.fail
	}
	f.calls = append(f.calls, tr)
	tr.Name, tr.Namespace = create.(k8stesting.CreateActionImpl).Name, action.GetNamespace()
	tr.Status.Token = fmt.Sprintf("token-%d", len(f.calls))
	tr.Status.ExpirationTimestamp = metav1.NewTime(f.clock.Now().Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second))
	return true, tr, nil
}

func (f *fakeAPI) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func newTestManager(t *testing.T) (*Manager, *fakeAPI, *fake.Clientset) {
	t.Helper()
	api := &fakeAPI{clock: clocktesting.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))}
	client := fake.NewClientset()
	client.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "token" {
			return false, nil, nil
		}
		return api.react(a)
	})
	return NewManager(client, api.clock), api, client
}

func request(pod types.UID, seconds int64, audiences ...string) *authenticationv1.TokenRequest {
	return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		Audiences:         audiences,
		ExpirationSeconds: ptr.To(seconds),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "p-" + string(pod), UID: pod},
	}}
}

func TestGetServiceAccountTokenRequest(t *testing.T) {
	m, api, _ := newTestManager(t)
	tr, err := m.GetServiceAccountToken(context.Background(), "ns", "robot", request("uid-1", 3607, "vault"))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Status.Token != "token-1" {
		t.Errorf("token %q", tr.Status.Token)
	}
	got := api.calls[0]
	if got.Spec.BoundObjectRef.Kind != "Pod" || got.Spec.BoundObjectRef.UID != "uid-1" || got.Spec.BoundObjectRef.Name != "p-uid-1" ||
		*got.Spec.ExpirationSeconds != 3607 || len(got.Spec.Audiences) != 1 || got.Spec.Audiences[0] != "vault" {
		t.Errorf("the API got %+v", got.Spec)
	}
}

// TestTokenRefresh: a token is reused until 80 % of its lifetime passed (or 24 h), then renewed.
func TestTokenRefresh(t *testing.T) {
	tests := []struct {
		name     string
		lifetime time.Duration
		after    time.Duration
		renewed  bool
	}{
		{"an hour's token after 10 minutes", time.Hour, 10 * time.Minute, false},
		{"an hour's token after 45 minutes (jitter is at most 10 s)", time.Hour, 47*time.Minute + 49*time.Second, false},
		{"an hour's token in its last 12 minutes", time.Hour, 50 * time.Minute, true},
		{"a 10-minute token after 7 minutes", 10 * time.Minute, 7 * time.Minute, false},
		{"a 10-minute token just past 8 minutes", 10 * time.Minute, 8*time.Minute + time.Second, true},
		{"a 40-hour token after 23 hours", 40 * time.Hour, 23 * time.Hour, false},
		{"a 40-hour token after 25 hours", 40 * time.Hour, 25 * time.Hour, true},
		{"an expired token", time.Hour, 70 * time.Minute, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, api, _ := newTestManager(t)
			req := request("uid-1", int64(tt.lifetime.Seconds()))
			if _, err := m.GetServiceAccountToken(context.Background(), "ns", "default", req); err != nil {
				t.Fatal(err)
			}
			api.clock.Step(tt.after)
			tr, err := m.GetServiceAccountToken(context.Background(), "ns", "default", req)
			if err != nil {
				t.Fatal(err)
			}
			want, wantCalls := "token-1", 1
			if tt.renewed {
				want, wantCalls = "token-2", 2
			}
			if tr.Status.Token != want || api.count() != wantCalls {
				t.Errorf("got %s after %d requests, want %s after %d", tr.Status.Token, api.count(), want, wantCalls)
			}
		})
	}
}

func TestRequiresRefreshWithoutLifetime(t *testing.T) {
	m := newManager(nil, clocktesting.NewFakeClock(time.Now()))
	tr := &authenticationv1.TokenRequest{Status: authenticationv1.TokenRequestStatus{ExpirationTimestamp: metav1.NewTime(time.Now().Add(-time.Hour))}}
	if m.requiresRefresh(context.Background(), tr) {
		t.Error("a token of unknown lifetime was renewed")
	}
}

// TestRefreshFailure: a failed renewal keeps a token that is still valid, and fails for an
// expired one or when there is none.
func TestRefreshFailure(t *testing.T) {
	m, api, _ := newTestManager(t)
	req := request("uid-1", 3600)
	ctx := context.Background()
	api.fail = errors.New("boom")
	if _, err := m.GetServiceAccountToken(ctx, "ns", "default", req); err == nil || !strings.Contains(err.Error(), "failed to fetch token: ") {
		t.Errorf("no token yet: %v", err)
	}
	api.fail = nil
	if _, err := m.GetServiceAccountToken(ctx, "ns", "default", req); err != nil {
		t.Fatal(err)
	}
	api.fail = errors.New("boom")
	api.clock.Step(50 * time.Minute)
	tr, err := m.GetServiceAccountToken(ctx, "ns", "default", req)
	if err != nil || tr.Status.Token != "token-1" {
		t.Errorf("a valid token whose renewal failed: %v, %v", tr, err)
	}
	api.clock.Step(11 * time.Minute)
	if _, err := m.GetServiceAccountToken(ctx, "ns", "default", req); err == nil || !strings.Contains(err.Error(), "expired and refresh failed: ") {
		t.Errorf("an expired token whose renewal failed: %v", err)
	}
}

// TestCacheKey: what differs in the request is another token.
func TestCacheKey(t *testing.T) {
	m, api, _ := newTestManager(t)
	ctx := context.Background()
	withUID := request("uid-1", 3600)
	withUID.UID = "sa-uid-2"
	for _, c := range []struct {
		ns, name string
		tr       *authenticationv1.TokenRequest
	}{
		{"ns", "default", request("uid-1", 3600)},
		{"ns", "default", request("uid-1", 3600)}, // hit
		{"ns", "other", request("uid-1", 3600)},
		{"ns2", "default", request("uid-1", 3600)},
		{"ns", "default", request("uid-1", 3607)},
		{"ns", "default", request("uid-1", 3600, "aud")},
		{"ns", "default", request("uid-2", 3600)},
		{"ns", "default", withUID},
	} {
		if _, err := m.GetServiceAccountToken(ctx, c.ns, c.name, c.tr); err != nil {
			t.Fatal(err)
		}
	}
	if api.count() != 7 {
		t.Errorf("%d requests, want 7 (one cache hit)", api.count())
	}
}

func TestDeleteServiceAccountToken(t *testing.T) {
	m, api, _ := newTestManager(t)
	ctx := context.Background()
	for _, uid := range []types.UID{"a", "a", "b"} {
		for _, aud := range []string{"x", "y"} {
			if _, err := m.GetServiceAccountToken(ctx, "ns", "default", request(uid, 3600, aud)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if api.count() != 4 {
		t.Fatalf("%d requests, want 4", api.count())
	}
	m.DeleteServiceAccountToken("a")
	if len(m.cache) != 2 {
		t.Errorf("%d cached after deleting pod a's, want b's 2", len(m.cache))
	}
	for _, uid := range []types.UID{"a", "b"} {
		if _, err := m.GetServiceAccountToken(ctx, "ns", "default", request(uid, 3600, "x")); err != nil {
			t.Fatal(err)
		}
	}
	if api.count() != 5 {
		t.Errorf("%d requests, want 5: pod a's token again, b's from the cache", api.count())
	}
}

func TestCleanup(t *testing.T) {
	m, api, _ := newTestManager(t)
	if _, err := m.GetServiceAccountToken(context.Background(), "ns", "default", request("a", 600)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.GetServiceAccountToken(context.Background(), "ns", "default", request("b", 3600)); err != nil {
		t.Fatal(err)
	}
	api.clock.Step(601 * time.Second)
	m.cleanup()
	if len(m.cache) != 1 {
		t.Errorf("%d cached, want the unexpired one", len(m.cache))
	}
}

// TestTokenRequestNotServed: an API server without serviceaccounts/token is named as such.
func TestTokenRequestNotServed(t *testing.T) {
	client := fake.NewClientset()
	client.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "serviceaccounts"}}}}
	m := NewManager(client, nil)
	_, err := m.GetServiceAccountToken(context.Background(), "ns", "default", request("a", 3600))
	if err == nil || !strings.Contains(err.Error(), "the API server does not have TokenRequest endpoints enabled") {
		t.Errorf("got %v", err)
	}
	// Served, the account is missing: the API's own NotFound.
	client.Resources[0].APIResources = append(client.Resources[0].APIResources, metav1.APIResource{Name: "serviceaccounts/token"})
	_, err = m.GetServiceAccountToken(context.Background(), "ns", "default", request("a", 3600))
	if err == nil || strings.Contains(err.Error(), "TokenRequest endpoints") {
		t.Errorf("got %v, want the API's error", err)
	}
}
