package proxy

import (
	"context"
	"fmt"
	"testing"

	"sigs.k8s.io/knftables"
)

// benchServices are n Services of one TCP port, every fourth a NodePort, each with m
// endpoints (the first on this node), and the slice of Service i with its endpoints
// shifted by shift (a change of endpoints).
func benchServices(n, m int) (objs []any, slice func(i, shift int) any) {
	slice = func(i, shift int) any {
		s := makeSlice("bench", fmt.Sprintf("svc-%d", i), fmt.Sprintf("svc-%d-1", i)).port("http", tcp, 8080)
		for j := range m {
			node := "node-b"
			if j == 0 {
				node = testNode
			}
			s.ep(fmt.Sprintf("10.%d.%d.%d", 1+i/250, i%250, 1+(j+shift)%250), node)
		}
		return s.obj()
	}
	for i := range n {
		svc := makeService("bench", fmt.Sprintf("svc-%d", i), fmt.Sprintf("10.96.%d.%d", i/250, 1+i%250)).port("http", tcp, 80)
		if i%4 == 0 {
			svc.nodePort(int32(30000 + i))
		}
		objs = append(objs, svc.obj(), slice(i, 0))
	}
	return objs, slice
}

// planOnlyNFT writes transactions out (as knftables does for nft) and applies none: the
// proxy's own share of a sync.
type planOnlyNFT struct{ knftables.Interface }

func (planOnlyNFT) Run(_ context.Context, tx *knftables.Transaction) error {
	_ = tx.String()
	return nil
}

// BenchmarkSyncProxyRules1000x10 measures the sync of 1,000 Services of 10 endpoints each:
// a full sync, and a partial sync of one changed Service among them (its endpoints
// change), against the real nft in a scratch network namespace (as root), against
// knftables' fake (whose element lookups are linear: its time is mostly its own), and
// with the transactions only written out (the proxy's own work: planning, diffing, the
// transaction's text).
func BenchmarkSyncProxyRules1000x10(b *testing.B) {
	objs, slice := benchServices(1000, 10)
	for _, backend := range []string{"nft", "fake", "plan-only"} {
		setup := func(b *testing.B) (*fixture, func(func())) {
			f := newFixture(b, defaultTestConfig())
			do := func(fn func()) { fn() }
			switch backend {
			case "plan-only":
				f.fp.nft = planOnlyNFT{f.fake}
			case "nft":
				requireRealNetworking(b)
				th := enterNetns(b, addNetns(b, "bench"))
				var err error
				th.do(func() { f.fp.nft, err = knftables.New(knftables.IPv4Family, TableName) })
				if err != nil {
					b.Fatal(err)
				}
				do = th.do
			}
			f.set(objs...)
			do(func() { f.sync(true) })
			return f, do
		}
		b.Run(backend+"/full", func(b *testing.B) {
			f, do := setup(b)
			var stats syncStats
			b.ResetTimer()
			for range b.N {
				do(func() { stats = f.sync(true) })
			}
			b.ReportMetric(float64(stats.operations), "nft-ops/sync")
		})
		b.Run(backend+"/partial", func(b *testing.B) {
			f, do := setup(b)
			var stats syncStats
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				f.set(slice(i%1000, 1+i/1000))
				b.StartTimer()
				do(func() { stats = f.sync(false) })
				if stats.changed != 1 {
					b.Fatalf("the partial sync changed %d services", stats.changed)
				}
			}
			b.ReportMetric(float64(stats.operations), "nft-ops/sync")
		})
	}
}
