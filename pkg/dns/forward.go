package dns

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

const (
	// forwardTryTimeout bounds one upstream's answer; forwardTimeout all of them. A pod's
	// resolver waits 5 s (resolv.conf's default timeout) before it asks again.
	forwardTryTimeout = 2 * time.Second
	forwardTimeout    = 4 * time.Second
	// maxConcurrentForwards is kubeadm's and k3s's max_concurrent for CoreDNS's forward
	// plugin: past it a query is refused at once rather than queued.
	maxConcurrentForwards = 1000
	// upstreamUDPSize is the EDNS0 buffer size asked of upstream servers for a client that sent
	// none, so that answers past 512 bytes come back without a TCP round trip (the DNS flag
	// day 2020 size, which avoids IP fragmentation).
	upstreamUDPSize = 1232
)

var errTooManyForwards = errors.New("too many queries are being forwarded")

// forwarder sends questions outside the zone to the upstream servers, in order of preference
// (resolv.conf's: the next only when one fails, times out or answers SERVFAIL or REFUSED),
// starting from the last one that answered, so that a dead first server costs one query a
// timeout rather than every query; over UDP, and again over TCP when the answer is truncated.
//
// It keeps no cache: the node's resolver that the upstreams normally are (the host's
// configured servers, systemd-resolved's uplinks) caches already, the zone's own records are
// answered from memory, and a cache that honours TTLs and RFC 2308's negative caching is
// more memory and more code to get right than the round trip it saves on a host-local path.
type forwarder struct {
	upstreams []string
	udp, tcp  *dns.Client
	sem       chan struct{}
	// preferred is the index of the upstream that answered last.
	preferred atomic.Int32
}

func newForwarder(upstreams []string) *forwarder {
	return &forwarder{
		upstreams: upstreams,
		udp:       &dns.Client{Net: "udp", Timeout: forwardTryTimeout, UDPSize: upstreamUDPSize},
		tcp:       &dns.Client{Net: "tcp", Timeout: forwardTryTimeout},
		sem:       make(chan struct{}, maxConcurrentForwards),
	}
}

// exchange asks the upstream servers req's question and returns their answer to req: with
// req's ID, and without an OPT record when req had none.
func (f *forwarder) exchange(ctx context.Context, req *dns.Msg) (*dns.Msg, error) {
	if len(f.upstreams) == 0 {
		return nil, errNoUpstream
	}
	select {
	case f.sem <- struct{}{}:
		defer func() { <-f.sem }()
	default:
		return nil, errTooManyForwards
	}
	ctx, cancel := context.WithTimeout(ctx, forwardTimeout)
	defer cancel()

	m := req.Copy()
	m.Id = dns.Id()
	addedOPT := m.IsEdns0() == nil
	if addedOPT {
		m.SetEdns0(upstreamUDPSize, false)
	}
	var resp *dns.Msg
	var errs []error
	first := int(f.preferred.Load())
	for i := range f.upstreams {
		if ctx.Err() != nil {
			break
		}
		n := (first + i) % len(f.upstreams)
		u := f.upstreams[n]
		r, err := f.try(ctx, m, u)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", u, err))
			continue
		}
		resp = r
		if r.Rcode != dns.RcodeServerFailure && r.Rcode != dns.RcodeRefused {
			f.preferred.Store(int32(n))
			break
		}
	}
	if resp == nil {
		if len(errs) == 0 {
			errs = append(errs, ctx.Err())
		}
		return nil, errors.Join(errs...)
	}
	resp.Id = req.Id
	if addedOPT {
		resp.Extra = removeOPT(resp.Extra)
	}
	return resp, nil
}

// try asks one upstream server, over UDP and then, for a truncated answer, over TCP (keeping
// the truncated answer if TCP fails).
func (f *forwarder) try(ctx context.Context, m *dns.Msg, addr string) (*dns.Msg, error) {
	ctx, cancel := context.WithTimeout(ctx, forwardTryTimeout)
	defer cancel()
	r, _, err := f.udp.ExchangeContext(ctx, m, addr)
	if err == nil && r.Truncated {
		if full, _, err := f.tcp.ExchangeContext(ctx, m, addr); err == nil && sameQuestion(m, full) {
			r = full
		}
	}
	if err == nil && !sameQuestion(m, r) {
		err = errors.New("the answer is to another question")
	}
	return r, err
}

func sameQuestion(req, resp *dns.Msg) bool {
	if len(req.Question) != len(resp.Question) {
		return false
	}
	for i, q := range req.Question {
		p := resp.Question[i]
		if q.Qtype != p.Qtype || q.Qclass != p.Qclass || !strings.EqualFold(q.Name, p.Name) {
			return false
		}
	}
	return true
}

func removeOPT(rrs []dns.RR) []dns.RR {
	out := rrs[:0]
	for _, rr := range rrs {
		if rr.Header().Rrtype != dns.TypeOPT {
			out = append(out, rr)
		}
	}
	return out
}
