package podcertificate

import (
	"bytes"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
)

// The kubelet's times: a request not seen this long after it was made is taken as deleted and
// made again, and a credential still not refreshed this long after beginRefreshAt is reported
// as overdue.
const (
	assumeDeletedThreshold = 10 * time.Minute
	refreshOverdueDuration = 10 * time.Minute
)

// phase is where a projection's credentials stand.
//
//	none ──request issued──► issued ──beginRefreshAt passed: new request──► issued (old creds
//	  │                         │                                            until the new ones)
//	  └──denied / failed──► denied / failed (terminal: the pod's volume setup fails)
type phase int

const (
	// phaseNone: no credentials yet (a request may be pending).
	phaseNone phase = iota
	// phaseIssued: credentials held; a refresh request may be pending.
	phaseIssued
	// phaseDenied and phaseFailed: the signer's last word; nothing more is asked.
	phaseDenied
	phaseFailed
)

// state is one projection's credentials and its outstanding request. It is a value: next
// returns the new one, and does no I/O.
type state struct {
	phase phase
	// key and chain are the PEM private key and certificate chain (phaseIssued).
	key, chain               []byte
	beginRefreshAt, notAfter time.Time
	// pending names the outstanding PodCertificateRequest ("" for none), pendingKey its key,
	// and abandonAt when a request the informer has not seen is taken as deleted.
	pending    string
	pendingKey []byte
	abandonAt  time.Time
	// reason and message of a denial or failure.
	reason, message string
	// overdueReported and expiredReported: the warning event was sent once.
	overdueReported, expiredReported bool
}

// event is a warning event for the pod.
type event struct {
	reason, message string
}

// decision is what next asks the driver to do.
type decision struct {
	// request: make a new PodCertificateRequest (the first, or a refresh).
	request bool
	events  []event
	// err: retry the projection after a back-off.
	err error
}

// next is the projection's new state and what to do, given the time and the outstanding
// request as the informer has it (nil when it is not there); jitter spreads refreshes (the
// kubelet's up to 5 min).
func next(s state, now time.Time, pcr *certificatesv1.PodCertificateRequest, jitter time.Duration) (state, decision) {
	if s.pending != "" {
		if pcr == nil {
			if now.After(s.abandonAt) {
				s.pending, s.pendingKey = "", nil
				return s, decision{err: errors.New("PodCertificateRequest appears to have been deleted")}
			}
			return s, decision{} // the informer has not seen it yet
		}
		for _, c := range pcr.Status.Conditions {
			name := pcr.Namespace + "/" + pcr.Name
			switch c.Type {
			case certificatesv1.PodCertificateRequestConditionTypeDenied:
				return state{phase: phaseDenied, reason: c.Reason, message: c.Message}, decision{events: []event{{
					reason:  certificatesv1.PodCertificateRequestConditionTypeDenied,
					message: fmt.Sprintf("PodCertificateRequest %s was denied, reason=%q, message=%q", name, c.Reason, c.Message),
				}}}
			case certificatesv1.PodCertificateRequestConditionTypeFailed:
				return state{phase: phaseFailed, reason: c.Reason, message: c.Message}, decision{events: []event{{
					reason:  certificatesv1.PodCertificateRequestConditionTypeFailed,
					message: fmt.Sprintf("PodCertificateRequest %s failed, reason=%q, message=%q", name, c.Reason, c.Message),
				}}}
			case certificatesv1.PodCertificateRequestConditionTypeIssued:
				issued := state{phase: phaseIssued, key: s.pendingKey, chain: cleanChain(pcr.Status.CertificateChain)}
				if pcr.Status.BeginRefreshAt != nil {
					issued.beginRefreshAt = pcr.Status.BeginRefreshAt.Add(jitter)
				}
				if pcr.Status.NotAfter != nil {
					issued.notAfter = pcr.Status.NotAfter.Time
				}
				return issued, decision{}
			}
		}
		if s.phase != phaseIssued {
			return s, decision{}
		}
		s, events := s.lateness(now)
		return s, decision{events: events}
	}
	switch s.phase {
	case phaseNone:
		return s, decision{request: true}
	case phaseIssued:
		if now.Before(s.beginRefreshAt) {
			return s, decision{}
		}
		s, events := s.lateness(now)
		return s, decision{request: true, events: events}
	}
	return s, decision{} // denied, failed
}

// lateness reports, once each, a refresh overdue and credentials expired.
func (s state) lateness(now time.Time) (state, []event) {
	var events []event
	if now.After(s.beginRefreshAt.Add(refreshOverdueDuration)) && !s.overdueReported {
		s.overdueReported = true
		events = append(events, event{reason: "CertificateOverdueForRefresh", message: "PodCertificate refresh overdue"})
	}
	if now.After(s.notAfter) && !s.expiredReported {
		s.expiredReported = true
		events = append(events, event{reason: "CertificateExpired", message: "PodCertificate expired"})
	}
	return s, events
}

// requested is the state once the driver has made request name with key, created at
// created.
func (s state) requested(name string, key []byte, created time.Time, jitter time.Duration) state {
	s.pending, s.pendingKey = name, key
	s.abandonAt = created.Add(assumeDeletedThreshold + jitter)
	return s
}

// credentials are what the volume gets: the key and chain, or why there are none.
func (s state) credentials() (key, chain []byte, err error) {
	switch s.phase {
	case phaseIssued:
		return s.key, s.chain, nil
	case phaseDenied:
		return nil, nil, fmt.Errorf("PodCertificateRequest was permanently denied: reason=%q message=%q", s.reason, s.message)
	case phaseFailed:
		return nil, nil, fmt.Errorf("PodCertificateRequest was permanently failed: reason=%q message=%q", s.reason, s.message)
	}
	return nil, nil, errNotIssued
}

var errNotIssued = errors.New("credential bundle is not issued yet")

// cleanChain is the chain's certificates re-encoded as bare CERTIFICATE blocks, dropping
// headers and any text between them.
func cleanChain(in string) []byte {
	var out bytes.Buffer
	rest := []byte(in)
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return out.Bytes()
		}
		_ = pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: b.Bytes})
	}
}
