package dns

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"time"

	"github.com/miekg/dns"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/util/panics"
)

// ServeDNS answers one query (dns.Handler): from the zone's records, or through the upstream
// servers. A panic while answering is recovered, logged and counted
// (berth_recovered_panics_total{component="dns"}), and the query gets SERVFAIL.
func (s *Server) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	start := time.Now()
	ctx := s.context()
	source, written := sourceZone, false
	defer func() {
		if r := recover(); r != nil {
			panics.Record(ctx, component, r)
			if !written {
				m := new(dns.Msg)
				m.SetRcode(req, dns.RcodeServerFailure)
				_ = w.WriteMsg(m)
			}
			observe(source, dns.RcodeServerFailure, start)
		}
	}()
	_, tcp := w.RemoteAddr().(*net.TCPAddr)
	var m *dns.Msg
	m, source = s.respond(ctx, req)
	fit(m, req, tcp)
	written = true
	if err := w.WriteMsg(m); err != nil {
		klog.FromContext(ctx).V(4).Info("Could not send a DNS answer", "client", w.RemoteAddr(), "err", err)
	}
	observe(source, m.Rcode, start)
}

// respond is the answer to req and where it came from.
func (s *Server) respond(ctx context.Context, req *dns.Msg) (*dns.Msg, string) {
	m := new(dns.Msg)
	switch {
	case len(req.Question) != 1:
		m.SetRcodeFormatError(req)
		return m, sourceZone
	case req.Opcode != dns.OpcodeQuery:
		m.SetRcode(req, dns.RcodeNotImplemented)
		return m, sourceZone
	}
	opt := req.IsEdns0()
	if opt != nil && opt.Version() != 0 {
		m.SetRcode(req, dns.RcodeBadVers) // RFC 6891 6.1.3
		m.SetEdns0(maxUDPSize, false)
		return m, sourceZone
	}

	a := s.resolver.resolve(req.Question[0])
	if a.forward {
		return s.forward(ctx, req), sourceForward
	}
	m.SetReply(req)
	m.Authoritative = a.zone
	m.RecursionAvailable = true
	m.Rcode = a.rcode
	m.Answer, m.Extra = a.answer, a.extra
	if a.follow != "" {
		s.follow(ctx, m, a.follow, req.Question[0].Qtype)
	}
	if a.zone && len(m.Answer) == 0 {
		switch m.Rcode {
		case dns.RcodeNameError:
			if !s.HasSynced() {
				m.Rcode = dns.RcodeServerFailure
				break
			}
			fallthrough
		case dns.RcodeSuccess:
			m.Ns = []dns.RR{s.resolver.soa()} // RFC 2308: how long to cache the denial
		}
	}
	if opt != nil {
		m.SetEdns0(maxUDPSize, false)
	}
	return m, sourceZone
}

// forward is the upstream servers' answer to req, or SERVFAIL (REFUSED when too many queries
// are being forwarded already, as CoreDNS's max_concurrent).
func (s *Server) forward(ctx context.Context, req *dns.Msg) *dns.Msg {
	resp, err := s.forwarder.exchange(ctx, req)
	if err == nil {
		return resp
	}
	klog.FromContext(ctx).V(2).Info("Could not forward a DNS query", "name", req.Question[0].Name, "type", dns.TypeToString[req.Question[0].Qtype], "err", err)
	m := new(dns.Msg)
	rcode := dns.RcodeServerFailure
	if errors.Is(err, errTooManyForwards) {
		rcode = dns.RcodeRefused
	}
	m.SetRcode(req, rcode)
	m.RecursionAvailable = true
	if req.IsEdns0() != nil {
		m.SetEdns0(maxUDPSize, false)
	}
	return m
}

// follow completes an ExternalName's CNAME to target, outside the zone, with the upstream
// servers' records for target (CoreDNS's upstream lookup). When they cannot be had, the CNAME
// stands alone: the client may follow it itself.
func (s *Server) follow(ctx context.Context, m *dns.Msg, target string, qtype uint16) {
	q := new(dns.Msg)
	q.SetQuestion(target, qtype)
	resp, err := s.forwarder.exchange(ctx, q)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Could not look up an ExternalName's target", "target", target, "err", err)
		return
	}
	m.Answer = append(m.Answer, resp.Answer...)
	if resp.Rcode == dns.RcodeNameError {
		m.Rcode = resp.Rcode // the last name's rcode (RFC 6604)
	}
}

// fit makes m fit the client's transport: 64 KiB over TCP; over UDP, 512 bytes, or the
// client's EDNS0 buffer size up to maxUDPSize. The additional section goes first, whole and
// without the TC bit (RFC 2181 9: it is not required); then answers are cut and TC set, and
// the client asks again over TCP.
func fit(m, req *dns.Msg, tcp bool) {
	m.Compress = true
	size := dns.MaxMsgSize
	if !tcp {
		size = dns.MinMsgSize
		if opt := req.IsEdns0(); opt != nil {
			size = min(max(int(opt.UDPSize()), dns.MinMsgSize), maxUDPSize)
		}
	}
	if m.Len() <= size {
		return
	}
	m.Extra = optOnly(m.Extra)
	if m.Len() <= size {
		return
	}
	m.Truncate(size)
	m.Compress = true
}

func optOnly(rrs []dns.RR) []dns.RR {
	var out []dns.RR
	for _, rr := range rrs {
		if rr.Header().Rrtype == dns.TypeOPT {
			out = append(out, rr)
		}
	}
	return out
}

// guardedReader unpacks each query once under recover before miekg/dns does. miekg/dns unpacks
// a query in a goroutine of its own before it calls the handler, where a panic (a bug that a
// crafted packet finds) would end berth's whole process; here it is logged, counted and
// answered SERVFAIL, and the packet dropped.
type guardedReader struct {
	next dns.PacketConnReader
	s    *Server
}

// errDropped tells miekg/dns's UDP loop to read the next packet (a temporary net.Error).
type errDropped struct{}

func (errDropped) Error() string   { return "a query that could not be unpacked was dropped" }
func (errDropped) Timeout() bool   { return false }
func (errDropped) Temporary() bool { return true }

func (g guardedReader) ReadTCP(conn net.Conn, timeout time.Duration) ([]byte, error) {
	m, err := g.next.ReadTCP(conn, timeout)
	if err == nil && !g.s.unpacks(m) {
		if reply := servfailFor(m); reply != nil {
			_, _ = conn.Write(binary.BigEndian.AppendUint16(nil, uint16(len(reply))))
			_, _ = conn.Write(reply)
		}
		return nil, errDropped{} // ends the connection
	}
	return m, err
}

func (g guardedReader) ReadUDP(conn *net.UDPConn, timeout time.Duration) ([]byte, *dns.SessionUDP, error) {
	m, session, err := g.next.ReadUDP(conn, timeout)
	if err == nil && !g.s.unpacks(m) {
		if reply := servfailFor(m); reply != nil {
			_, _ = dns.WriteToSessionUDP(conn, reply, session)
		}
		return nil, nil, errDropped{}
	}
	return m, session, err
}

func (g guardedReader) ReadPacketConn(conn net.PacketConn, timeout time.Duration) ([]byte, net.Addr, error) {
	m, addr, err := g.next.ReadPacketConn(conn, timeout)
	if err == nil && !g.s.unpacks(m) {
		if reply := servfailFor(m); reply != nil {
			_, _ = conn.WriteTo(reply, addr)
		}
		return nil, nil, errDropped{}
	}
	return m, addr, err
}

// unpacks says whether unpacking m returns (with or without an error, which miekg/dns answers
// with FORMERR) rather than panicking.
func (s *Server) unpacks(m []byte) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			panics.Record(s.context(), component, r)
			ok = false
		}
	}()
	if len(m) < 12 {
		return true // miekg/dns drops it
	}
	var msg dns.Msg
	_ = msg.Unpack(m)
	return true
}

// servfailFor is a bare SERVFAIL reply, header only, to the query whose bytes are m.
func servfailFor(m []byte) []byte {
	if len(m) < 12 || m[2]&0x80 != 0 {
		return nil // too short to answer, or a response: never answer those
	}
	reply := make([]byte, 12)
	copy(reply[:2], m[:2])                   // ID
	reply[2] = 0x80 | m[2]&0x79              // QR, the query's opcode and RD
	reply[3] = 0x80 | dns.RcodeServerFailure // RA, SERVFAIL
	return reply
}
