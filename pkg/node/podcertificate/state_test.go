package podcertificate

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func pcrWith(cond string, chain string) *certificatesv1.PodCertificateRequest {
	p := &certificatesv1.PodCertificateRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "req-1"}}
	if cond != "" {
		p.Status.Conditions = []metav1.Condition{{Type: cond, Status: metav1.ConditionTrue, Reason: "Because", Message: "so"}}
	}
	if cond == certificatesv1.PodCertificateRequestConditionTypeIssued {
		p.Status.CertificateChain = chain
		p.Status.BeginRefreshAt = &metav1.Time{Time: t0.Add(time.Hour)}
		p.Status.NotAfter = &metav1.Time{Time: t0.Add(2 * time.Hour)}
	}
	return p
}

func TestNext(t *testing.T) {
	const jitter = time.Minute
	chain := "junk\n-----BEGIN CERTIFICATE-----\nQUJD\n-----END CERTIFICATE-----\n"
	issued := state{phase: phaseIssued, key: []byte("old key"), chain: []byte("old chain"), beginRefreshAt: t0.Add(time.Hour), notAfter: t0.Add(2 * time.Hour)}
	waiting := state{pending: "req-1", pendingKey: []byte("new key"), abandonAt: t0.Add(10 * time.Minute)}
	refreshing := issued
	refreshing.pending, refreshing.pendingKey, refreshing.abandonAt = "req-1", []byte("new key"), t0.Add(80*time.Minute)
	for _, tc := range []struct {
		name    string
		s       state
		now     time.Time
		pcr     *certificatesv1.PodCertificateRequest
		want    state
		request bool
		events  []string
		err     bool
	}{
		{name: "a new source asks", s: state{}, now: t0, want: state{}, request: true},
		{name: "its request not seen yet", s: waiting, now: t0, want: waiting},
		{name: "its request not seen for too long", s: waiting, now: t0.Add(11 * time.Minute), want: state{abandonAt: waiting.abandonAt}, err: true},
		{name: "its request pending", s: waiting, now: t0, pcr: pcrWith("", ""), want: waiting},
		{name: "its request issued", s: waiting, now: t0, pcr: pcrWith(certificatesv1.PodCertificateRequestConditionTypeIssued, chain),
			want: state{phase: phaseIssued, key: []byte("new key"), chain: []byte("-----BEGIN CERTIFICATE-----\nQUJD\n-----END CERTIFICATE-----\n"), beginRefreshAt: t0.Add(time.Hour + jitter), notAfter: t0.Add(2 * time.Hour)}},
		{name: "its request denied", s: waiting, now: t0, pcr: pcrWith(certificatesv1.PodCertificateRequestConditionTypeDenied, ""),
			want: state{phase: phaseDenied, reason: "Because", message: "so"}, events: []string{"Denied"}},
		{name: "its request failed", s: waiting, now: t0, pcr: pcrWith(certificatesv1.PodCertificateRequestConditionTypeFailed, ""),
			want: state{phase: phaseFailed, reason: "Because", message: "so"}, events: []string{"Failed"}},
		{name: "denied stays", s: state{phase: phaseDenied}, now: t0, want: state{phase: phaseDenied}},
		{name: "fresh credentials wait", s: issued, now: t0.Add(59 * time.Minute), want: issued},
		{name: "at beginRefreshAt a new request", s: issued, now: t0.Add(61 * time.Minute), want: issued, request: true},
		{name: "an overdue refresh is reported once", s: refreshing, now: t0.Add(71 * time.Minute), pcr: pcrWith("", ""),
			want: func() state { s := refreshing; s.overdueReported = true; return s }(), events: []string{"CertificateOverdueForRefresh"}},
		{name: "an expired one too", s: func() state { s := refreshing; s.overdueReported = true; return s }(), now: t0.Add(121 * time.Minute), pcr: pcrWith("", ""),
			want: func() state { s := refreshing; s.overdueReported, s.expiredReported = true, true; return s }(), events: []string{"CertificateExpired"}},
		{name: "the refresh issued replaces the credentials", s: refreshing, now: t0.Add(61 * time.Minute), pcr: pcrWith(certificatesv1.PodCertificateRequestConditionTypeIssued, chain),
			want: state{phase: phaseIssued, key: []byte("new key"), chain: []byte("-----BEGIN CERTIFICATE-----\nQUJD\n-----END CERTIFICATE-----\n"), beginRefreshAt: t0.Add(time.Hour + jitter), notAfter: t0.Add(2 * time.Hour)}},
	} {
		got, d := next(tc.s, tc.now, tc.pcr, jitter)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: state\n%+v\nwant\n%+v", tc.name, got, tc.want)
		}
		var events []string
		for _, e := range d.events {
			events = append(events, e.reason)
		}
		if d.request != tc.request || !reflect.DeepEqual(events, tc.events) || (d.err != nil) != tc.err {
			t.Errorf("%s: decision %+v, want request=%v events=%v err=%v", tc.name, d, tc.request, tc.events, tc.err)
		}
	}
}

func TestCredentials(t *testing.T) {
	if _, _, err := (state{}).credentials(); !errors.Is(err, errNotIssued) {
		t.Errorf("no credentials: %v", err)
	}
	refreshing := state{phase: phaseIssued, key: []byte("k"), chain: []byte("c"), pending: "req-2"}
	if k, c, err := refreshing.credentials(); err != nil || string(k) != "k" || string(c) != "c" {
		t.Errorf("while refreshing: %q %q %v, want the old credentials", k, c, err)
	}
	_, _, err := state{phase: phaseDenied, reason: "R", message: "M"}.credentials()
	if err == nil || !strings.Contains(err.Error(), `PodCertificateRequest was permanently denied: reason="R" message="M"`) {
		t.Errorf("denied: %v", err)
	}
}
