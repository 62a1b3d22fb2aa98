package oom

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

const (
	memcgKill  = "6,23409,23409127540,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=e3b4,mems_allowed=0,oom_memcg=/kubepods/burstable/pod403b,task_memcg=/kubepods/burstable/pod403b/e3b4,task=tail,pid=7498,uid=0"
	globalKill = "6,23500,23500000000,-;oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/kubepods/besteffort/pod9/c9,task=stress,pid=4242,uid=0"
)

func TestParseLine(t *testing.T) {
	k, ok := ParseLine(memcgKill)
	if !ok || k.System() || k.VictimCgroup != "/kubepods/burstable/pod403b" || k.ProcessName != "tail" || k.Pid != 7498 {
		t.Errorf("memcg kill parsed as %+v %t", k, ok)
	}
	k, ok = ParseLine(globalKill)
	if !ok || !k.System() || k.TaskCgroup != "/kubepods/besteffort/pod9/c9" || k.ProcessName != "stress" || k.Pid != 4242 {
		t.Errorf("global kill parsed as %+v %t", k, ok)
	}
	if _, ok := ParseLine("6,1,1,-;vethb35e077d: entered promiscuous mode"); ok {
		t.Error("an unrelated line parsed as a kill")
	}
}

func TestWatcherRecordsOnlySystemOOM(t *testing.T) {
	r, w := io.Pipe()
	recorder := record.NewFakeRecorder(10)
	watcher := &Watcher{recorder: recorder, node: &v1.ObjectReference{Kind: "Node", Name: "n"},
		open: func() (io.ReadCloser, error) { return r, nil }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := watcher.Start(ctx); err != nil {
		t.Fatal(err)
	}
	go io.WriteString(w, strings.Join([]string{memcgKill, "6,2,2,-;eth0: link up", globalKill}, "\n")+"\n")
	select {
	case ev := <-recorder.Events:
		if want := "Warning SystemOOM System OOM encountered, victim process: stress, pid: 4242"; ev != want {
			t.Errorf("event %q, want %q", ev, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no SystemOOM event")
	}
	select {
	case ev := <-recorder.Events:
		t.Errorf("unexpected event %q", ev)
	case <-time.After(100 * time.Millisecond):
	}
}
