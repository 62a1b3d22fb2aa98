package componentstatus

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

func ok(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }

// closedURL is a URL nothing listens at.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return "https://" + addr + "/healthz"
}

func TestHTTPProber(t *testing.T) {
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(ok))
	defer tlsSrv.Close()
	plain := httptest.NewServer(http.HandlerFunc(ok))
	defer plain.Close()
	failing := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "[-]leader failed", http.StatusInternalServerError)
	}))
	defer failing.Close()
	plainAsTLS := "https://" + strings.TrimPrefix(plain.URL, "http://") + "/healthz"

	tests := []struct {
		name        string
		prober      *HTTPProber
		wantStatus  corev1.ConditionStatus
		wantMessage string // prefix
	}{
		{name: "https healthy", prober: &HTTPProber{URL: tlsSrv.URL + "/healthz"}, wantStatus: corev1.ConditionTrue, wantMessage: "ok"},
		{name: "plain http, fallback", prober: &HTTPProber{URL: plainAsTLS, PlainHTTPFallback: true}, wantStatus: corev1.ConditionTrue, wantMessage: "ok"},
		{name: "plain http, no fallback", prober: &HTTPProber{URL: plainAsTLS}, wantStatus: corev1.ConditionFalse, wantMessage: "Get \"" + plainAsTLS + "\": http: server gave HTTP response to HTTPS client"},
		{name: "500", prober: &HTTPProber{URL: failing.URL + "/healthz"}, wantStatus: corev1.ConditionFalse, wantMessage: "HTTP probe failed with statuscode: 500"},
		{name: "nothing listening", prober: &HTTPProber{URL: closedURL(t)}, wantStatus: corev1.ConditionFalse, wantMessage: "Get \"https://127.0.0.1:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.prober.Probe(context.Background())
			if r.Status != tc.wantStatus || !strings.HasPrefix(r.Message, tc.wantMessage) || r.Error != "" {
				t.Errorf("got %+v, want status %s, message %q...", r, tc.wantStatus, tc.wantMessage)
			}
		})
	}
	if r := (&HTTPProber{URL: closedURL(t)}).Probe(context.Background()); !strings.Contains(r.Message, "connection refused") {
		t.Errorf("refused: %+v", r)
	}
}

type fixed Result

func (f fixed) Probe(context.Context) Result { return Result(f) }

func TestREST(t *testing.T) {
	r := NewREST(map[string]Prober{
		"scheduler":          fixed{Status: corev1.ConditionTrue, Message: "ok"},
		"controller-manager": fixed{Status: corev1.ConditionFalse, Message: "Get \"https://127.0.0.1:10257/healthz\": connection refused"},
		"etcd-0":             fixed{Status: corev1.ConditionFalse, Error: "context deadline exceeded"},
	})
	ctx := context.Background()
	obj, err := r.Get(ctx, "scheduler", nil)
	if err != nil {
		t.Fatal(err)
	}
	cs := obj.(*corev1.ComponentStatus)
	if cs.Name != "scheduler" || len(cs.Conditions) != 1 || cs.Conditions[0].Type != corev1.ComponentHealthy || cs.Conditions[0].Status != corev1.ConditionTrue || cs.Conditions[0].Message != "ok" {
		t.Errorf("get: %+v", cs)
	}
	if _, err := r.Get(ctx, "kubelet", nil); !apierrors.IsNotFound(err) {
		t.Errorf("unknown component: %v", err)
	}

	obj, err = r.List(ctx, &metainternalversion.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list := obj.(*corev1.ComponentStatusList)
	tbl, err := r.ConvertToTable(ctx, list, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]any{
		{"controller-manager", "Unhealthy", "Get \"https://127.0.0.1:10257/healthz\": connection refused", ""},
		{"etcd-0", "Unhealthy", "", "context deadline exceeded"},
		{"scheduler", "Healthy", "ok", ""},
	}
	if len(tbl.Rows) != len(want) {
		t.Fatalf("rows: %+v", tbl.Rows)
	}
	for i, row := range tbl.Rows {
		for j, cell := range row.Cells {
			if cell != want[i][j] {
				t.Errorf("row %d cell %d = %v, want %v", i, j, cell, want[i][j])
			}
		}
	}

	obj, _ = r.List(ctx, &metainternalversion.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "etcd-0")})
	if l := obj.(*corev1.ComponentStatusList); len(l.Items) != 1 || l.Items[0].Name != "etcd-0" {
		t.Errorf("field selector: %+v", l.Items)
	}
	obj, _ = r.List(ctx, &metainternalversion.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{"a": "b"})})
	if l := obj.(*corev1.ComponentStatusList); len(l.Items) != 0 {
		t.Errorf("label selector matched %+v", l.Items)
	}
	if r.NamespaceScoped() || r.ShortNames()[0] != "cs" {
		t.Errorf("scope or short names")
	}
}
