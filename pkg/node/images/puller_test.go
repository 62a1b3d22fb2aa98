package images

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// fakeImages is an image store that fails pulls while failPulls > 0.
type fakeImages struct {
	mu        sync.Mutex
	present   map[string]bool
	failPulls int
	pulls     []string
	auths     []*runtimeapi.AuthConfig
	// wantUser, when set, is the only user a pull succeeds for.
	wantUser string
	inflight int
	maxSeen  int
	hold     chan struct{}
}

func (f *fakeImages) PullImage(_ context.Context, image container.ImageSpec, auth *runtimeapi.AuthConfig, _ *runtimeapi.PodSandboxConfig) (string, error) {
	f.mu.Lock()
	f.inflight++
	f.maxSeen = max(f.maxSeen, f.inflight)
	f.pulls = append(f.pulls, image.Image)
	f.auths = append(f.auths, auth)
	hold := f.hold
	f.mu.Unlock()
	if hold != nil {
		<-hold
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inflight--
	if f.failPulls > 0 {
		f.failPulls--
		return "", errors.New("rpc error: code = NotFound desc = no such image")
	}
	if f.wantUser != "" && (auth == nil || auth.Username != f.wantUser) {
		return "", errors.New("unauthorized: " + auth.GetUsername())
	}
	if f.present == nil {
		f.present = map[string]bool{}
	}
	f.present[image.Image] = true
	return "sha256:" + image.Image, nil
}

func (f *fakeImages) GetImageRef(_ context.Context, image container.ImageSpec) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.present[image.Image] {
		return "sha256:" + image.Image, nil
	}
	return "", nil
}

func (f *fakeImages) GetImageSize(context.Context, container.ImageSpec) (uint64, error) {
	return 1234, nil
}

func testPod() *v1.Pod {
	p := &v1.Pod{}
	p.Name, p.Namespace, p.UID = "web", "default", "uid-1"
	return p
}

func drain(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestEnsureImageExistsPolicies(t *testing.T) {
	ref := &v1.ObjectReference{Kind: "Pod", Name: "web"}
	tests := []struct {
		name       string
		image      string
		policy     v1.PullPolicy
		present    bool
		wantErr    error
		wantPulls  int
		wantEvents []string
	}{
		{"IfNotPresent, present", "app:v1", v1.PullIfNotPresent, true, nil, 0,
			[]string{`Normal Pulled Container image "app:v1" already present on machine`}},
		{"IfNotPresent, absent", "app:v1", v1.PullIfNotPresent, false, nil, 1,
			[]string{`Normal Pulling Pulling image "app:v1"`, `Normal Pulled Successfully pulled image "app:v1" in `}},
		{"Always, present", "app:v1", v1.PullAlways, true, nil, 1,
			[]string{`Normal Pulling Pulling image "app:v1"`, `Normal Pulled Successfully pulled image "app:v1" in `}},
		{"Never, present", "app:v1", v1.PullNever, true, nil, 0,
			[]string{`Normal Pulled Container image "app:v1" already present on machine`}},
		{"Never, absent", "app:v1", v1.PullNever, false, container.ErrImageNeverPull, 0,
			[]string{`Warning ErrImageNeverPull Container image "app:v1" is not present with pull policy of Never`}},
		{"default policy of :latest pulls", "app", "", true, nil, 1,
			[]string{`Normal Pulling Pulling image "app"`, `Normal Pulled Successfully pulled image "app" in `}},
		{"invalid name", "App", v1.PullIfNotPresent, false, container.ErrInvalidImageName, 0,
			[]string{`Warning InspectFailed Failed to apply default image tag "App": `}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeImages{}
			if tt.present {
				img, _ := applyDefaultImageTag(tt.image)
				fake.present = map[string]bool{img: true}
			}
			rec := record.NewFakeRecorder(10)
			p := NewPuller(Config{}, fake, rec)
			imageRef, msg, err := p.EnsureImageExists(context.Background(), ref, testPod(), tt.image, tt.policy, nil, nil, "")
			if err != tt.wantErr {
				t.Fatalf("err = %v (%s), want %v", err, msg, tt.wantErr)
			}
			if err == nil && imageRef == "" {
				t.Errorf("no image reference")
			}
			if len(fake.pulls) != tt.wantPulls {
				t.Errorf("pulls = %v, want %d", fake.pulls, tt.wantPulls)
			}
			events := drain(rec)
			if len(events) != len(tt.wantEvents) {
				t.Fatalf("events = %q, want %q", events, tt.wantEvents)
			}
			for i := range events {
				if !strings.HasPrefix(events[i], tt.wantEvents[i]) {
					t.Errorf("event %d = %q, want prefix %q", i, events[i], tt.wantEvents[i])
				}
			}
		})
	}
}

func TestPulledEventText(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	p := NewPuller(Config{}, &fakeImages{}, rec)
	if _, _, err := p.EnsureImageExists(context.Background(), &v1.ObjectReference{}, testPod(), "app:v1", v1.PullAlways, nil, nil, ""); err != nil {
		t.Fatal(err)
	}
	events := drain(rec)
	last := events[len(events)-1]
	if !strings.Contains(last, " including waiting). Image size: 1234 bytes.") {
		t.Errorf("Pulled event = %q", last)
	}
}

func TestPullBackOff(t *testing.T) {
	clock := testingclock.NewFakeClock(time.Now())
	fake := &fakeImages{failPulls: 3}
	rec := record.NewFakeRecorder(100)
	p := NewPuller(Config{BackOff: flowcontrol.NewFakeBackOff(DefaultBackOffInitial, DefaultBackOffMax, clock)}, fake, rec)
	ensure := func() (string, error) {
		_, msg, err := p.EnsureImageExists(context.Background(), &v1.ObjectReference{}, testPod(), "app:v1", v1.PullIfNotPresent, nil, nil, "")
		return msg, err
	}
	steps := []struct {
		advance time.Duration
		wantErr error
		wantMsg string
	}{
		{0, container.ErrImagePull, "rpc error: code = NotFound desc = no such image"},
		{time.Second, container.ErrImagePullBackOff, `Back-off pulling image "app:v1": ErrImagePull: rpc error: code = NotFound desc = no such image`},
		{10 * time.Second, container.ErrImagePull, "rpc error"}, // 11 s after the failure: out of the 10 s back-off
		{15 * time.Second, container.ErrImagePullBackOff, "Back-off pulling image"},
		{6 * time.Second, container.ErrImagePull, "rpc error"}, // 21 s: out of the 20 s back-off
		{39 * time.Second, container.ErrImagePullBackOff, "Back-off pulling image"},
		{2 * time.Second, nil, ""}, // 41 s: out of the 40 s back-off, and the pull works
	}
	for i, s := range steps {
		clock.Step(s.advance)
		msg, err := ensure()
		if err != s.wantErr || !strings.HasPrefix(msg, s.wantMsg) {
			t.Fatalf("step %d: err = %v, msg = %q; want %v, %q", i, err, msg, s.wantErr, s.wantMsg)
		}
	}
	if len(fake.pulls) != 4 {
		t.Errorf("pulls = %d, want 4", len(fake.pulls))
	}
	var backOffEvents int
	for _, e := range drain(rec) {
		if strings.HasPrefix(e, `Normal BackOff Back-off pulling image "app:v1"`) {
			backOffEvents++
		}
	}
	if backOffEvents != 3 {
		t.Errorf("BackOff events = %d, want 3", backOffEvents)
	}
}

func TestPullWithSecrets(t *testing.T) {
	fake := &fakeImages{wantUser: "right"}
	secret := dockerConfigJSONSecret("creds", `{"auths": {
		"registry.example.com": {"username": "wrong", "password": "x"},
		"registry.example.com/team": {"username": "right", "password": "y"},
		"other.example.com": {"username": "other", "password": "z"}
	}}`)
	p := NewPuller(Config{}, fake, nil)
	_, msg, err := p.EnsureImageExists(context.Background(), nil, testPod(), "registry.example.com/team/app:v1", v1.PullAlways, []v1.Secret{secret}, nil, "")
	if err != nil {
		t.Fatalf("err = %v: %s", err, msg)
	}
	if len(fake.auths) != 1 || fake.auths[0].Username != "right" {
		t.Errorf("pulled with %v, want the most specific credential first", fake.auths)
	}

	// Every credential fails: the errors are aggregated.
	fake = &fakeImages{wantUser: "nobody"}
	p = NewPuller(Config{}, fake, nil)
	_, msg, err = p.EnsureImageExists(context.Background(), nil, testPod(), "registry.example.com/team/app:v1", v1.PullAlways, []v1.Secret{secret}, nil, "")
	if err != container.ErrImagePull || msg != "[unauthorized: right, unauthorized: wrong]" {
		t.Errorf("err = %v, msg = %q", err, msg)
	}
	if len(fake.auths) != 2 {
		t.Errorf("tried %d credentials, want 2", len(fake.auths))
	}

	// No matching credential: an anonymous pull.
	fake = &fakeImages{}
	p = NewPuller(Config{}, fake, nil)
	if _, _, err := p.EnsureImageExists(context.Background(), nil, testPod(), "elsewhere.io/app:v1", v1.PullAlways, []v1.Secret{secret}, nil, ""); err != nil {
		t.Fatal(err)
	}
	if len(fake.auths) != 1 || fake.auths[0] != nil {
		t.Errorf("auths = %v, want one anonymous pull", fake.auths)
	}
}

func TestRegistryUnavailable(t *testing.T) {
	msg, reason := pullError("r.io/app:v1", errors.New("RegistryUnavailable: connection refused"))
	if reason.Error() != "RegistryUnavailable" || msg != "image pull failed for r.io/app:v1 because the registry is unavailable: connection refused" {
		t.Errorf("pullError = %q, %v", msg, reason)
	}
}

func TestParallelPullLimit(t *testing.T) {
	for name, tt := range map[string]struct {
		cfg  Config
		want int
	}{
		"serialized":    {Config{SerializeImagePulls: true}, 1},
		"two at a time": {Config{MaxParallelImagePulls: 2}, 2},
		"unbounded":     {Config{}, 4},
	} {
		t.Run(name, func(t *testing.T) {
			fake := &fakeImages{hold: make(chan struct{})}
			p := NewPuller(tt.cfg, fake, nil)
			var wg sync.WaitGroup
			for i := 0; i < 4; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					pod := testPod()
					pod.UID = types.UID("u" + string(rune(0x61+i)))
					p.EnsureImageExists(context.Background(), nil, pod, "app:v"+string(rune('0'+i)), v1.PullAlways, nil, nil, "")
				}(i)
			}
			// Let the pulls that may start start, then release them all.
			deadline := time.Now().Add(2 * time.Second)
			for time.Now().Before(deadline) {
				fake.mu.Lock()
				n := fake.inflight
				fake.mu.Unlock()
				if n == tt.want {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(20 * time.Millisecond)
			close(fake.hold)
			wg.Wait()
			if fake.maxSeen != tt.want {
				t.Errorf("max concurrent pulls = %d, want %d", fake.maxSeen, tt.want)
			}
		})
	}
}
