package apiserver

import (
	"context"
	"sync"

	"github.com/berth-cluster/berth/pkg/util/panics"
)

// background holds the goroutines the API server's post-start hooks leave running (the CRD
// group registration, the APIService auto-registration, the API Priority and Fairness
// configuration, the authentication info ConfigMap). Each ends with its hook's context,
// which the server cancels as it shuts down, and Server.Run waits for them all before it
// returns, so that none outlives the server.
type background struct{ wg sync.WaitGroup }

// Go runs f in a goroutine the server waits for. A panic that escapes f is recovered,
// logged and counted as component's; the goroutine then ends. f recovers the panics of its
// own units of work (an object, a pass) and retries them, so one that escapes is a bug in
// the loop itself.
func (b *background) Go(ctx context.Context, component string, f func()) {
	b.wg.Go(func() {
		_ = panics.Call(ctx, component, func() error { f(); return nil })
	})
}

// wait returns once every goroutine has ended.
func (b *background) wait() { b.wg.Wait() }
