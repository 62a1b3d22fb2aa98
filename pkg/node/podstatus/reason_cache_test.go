package podstatus

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-cluster/berth/pkg/node/container"
)

func TestReasonCache(t *testing.T) {
	c := NewReasonCache()
	uid := types.UID("u")
	failed := container.NewSyncResult(container.StartContainer, "a")
	failed.Fail(container.ErrImagePull, "pull failed")
	sandbox := container.NewSyncResult(container.CreatePodSandbox, "p")
	sandbox.Fail(container.ErrCreatePodSandbox, "no")
	c.Update(uid, container.PodSyncResult{SyncResults: []*container.SyncResult{failed, sandbox}})

	reason, msg, ok := c.Get(uid, "a")
	if !ok || reason != container.ErrImagePull || msg != "pull failed" {
		t.Fatalf("Get(a) = %v %q %v", reason, msg, ok)
	}
	if _, _, ok := c.Get(uid, "p"); ok {
		t.Fatalf("a sandbox failure must not be cached as a container reason")
	}
	if _, _, ok := c.Get("other", "a"); ok {
		t.Fatalf("reasons are per pod")
	}

	c.Update(uid, container.PodSyncResult{SyncResults: []*container.SyncResult{container.NewSyncResult(container.StartContainer, "a")}})
	if _, _, ok := c.Get(uid, "a"); ok {
		t.Fatalf("a successful start must clear the reason")
	}
}

func TestReasonCacheIsBounded(t *testing.T) {
	c := NewReasonCache()
	for i := 0; i <= maxReasonCacheEntries; i++ {
		r := container.NewSyncResult(container.StartContainer, fmt.Sprintf("c%d", i))
		r.Fail(container.ErrCrashLoopBackOff, "")
		c.Update("u", container.PodSyncResult{SyncResults: []*container.SyncResult{r}})
	}
	if _, _, ok := c.Get("u", "c0"); ok {
		t.Fatalf("the oldest entry should have been evicted")
	}
	if _, _, ok := c.Get("u", fmt.Sprintf("c%d", maxReasonCacheEntries)); !ok {
		t.Fatalf("the newest entry is missing")
	}
}
