// Package images is the first step of seed 001's startContainer ("1 拉镜像"): before a
// container is created, EnsureImageExists makes sure its image is in the runtime. It follows
// the container's imagePullPolicy (Always, IfNotPresent, Never), pulls with the pod's image
// pull secrets (kubernetes.io/dockerconfigjson and kubernetes.io/dockercfg) matched to the
// image's registry, backs off per pod and image after a failed pull (10 s doubling to 5 min:
// ErrImagePull first, then ImagePullBackOff while backing off), and reports on the pod with
// the kubelet's events: Pulling, Pulled, Failed, BackOff, InspectFailed, ErrImageNeverPull.
//
// Beside the puller: the image garbage collector (gc.go) and the image list the node status
// reports, refreshed every 30 s (list.go).
package images

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	crierrors "k8s.io/cri-api/pkg/errors"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// The event reasons, as the kubelet writes them.
const (
	EventPulling        = "Pulling"
	EventPulled         = "Pulled"
	EventFailed         = "Failed"
	EventInspectFailed  = "InspectFailed"
	EventNeverPull      = "ErrImageNeverPull"
	EventBackOffPulling = "BackOff"
)

// The kubelet's image pull back-off.
const (
	DefaultBackOffInitial = 10 * time.Second
	DefaultBackOffMax     = 300 * time.Second
)

// ImageService is what the puller needs of the runtime: the image half of
// container.Runtime plus the size of a pulled image.
type ImageService interface {
	PullImage(ctx context.Context, image container.ImageSpec, auth *runtimeapi.AuthConfig, podSandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
	// GetImageRef returns the image's id in the runtime, "" when absent.
	GetImageRef(ctx context.Context, image container.ImageSpec) (string, error)
	GetImageSize(ctx context.Context, image container.ImageSpec) (uint64, error)
}

// Config says how images are pulled.
type Config struct {
	// SerializeImagePulls pulls one image at a time (the kubelet's serializeImagePulls).
	SerializeImagePulls bool
	// MaxParallelImagePulls caps concurrent pulls when pulls are not serialized; 0 means
	// no cap.
	MaxParallelImagePulls int
	// BackOff is the per pod and image back-off after failed pulls; nil means the
	// kubelet's 10 s doubling to 5 min.
	BackOff *flowcontrol.Backoff
}

// Puller ensures images exist before containers start. It is safe for concurrent use by
// every pod worker.
type Puller struct {
	service  ImageService
	recorder record.EventRecorder
	backOff  *flowcontrol.Backoff
	// tokens bounds concurrent pulls; nil means unbounded.
	tokens chan struct{}
	// lastErr keeps, per back-off key, why the last pull failed, for the back-off message.
	lastErr sync.Map
}

// NewPuller returns a puller that pulls through service and records events with recorder.
func NewPuller(cfg Config, service ImageService, recorder record.EventRecorder) *Puller {
	p := &Puller{service: service, recorder: recorder, backOff: cfg.BackOff}
	if p.backOff == nil {
		p.backOff = flowcontrol.NewBackOff(DefaultBackOffInitial, DefaultBackOffMax)
	}
	switch {
	case cfg.SerializeImagePulls:
		p.tokens = make(chan struct{}, 1)
	case cfg.MaxParallelImagePulls > 0:
		p.tokens = make(chan struct{}, cfg.MaxParallelImagePulls)
	}
	return p
}

// EnsureImageExists makes sure image is in the runtime for a container of pod and returns
// the runtime's image reference. On failure, err is one of container.ErrImagePull,
// ErrImagePullBackOff, ErrImageNeverPull, ErrImageInspect, ErrInvalidImageName (or the CRI's
// RegistryUnavailable / SignatureValidationFailed), and message says why. Events go to
// objRef (the container's reference); with no objRef they are logged instead.
func (p *Puller) EnsureImageExists(ctx context.Context, objRef *v1.ObjectReference, pod *v1.Pod, image string, pullPolicy v1.PullPolicy, pullSecrets []v1.Secret, podSandboxConfig *runtimeapi.PodSandboxConfig, runtimeHandler string) (imageRef, message string, err error) {
	logger := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod), "image", image)
	if pullPolicy == "" {
		pullPolicy = DefaultPullPolicy(image)
	}
	withTag, err := applyDefaultImageTag(image)
	if err != nil {
		msg := fmt.Sprintf("Failed to apply default image tag %q: %v", image, err)
		p.event(logger, objRef, v1.EventTypeWarning, EventInspectFailed, msg)
		return "", msg, container.ErrInvalidImageName
	}
	spec := container.ImageSpec{Image: withTag, RuntimeHandler: runtimeHandler}

	if pullPolicy != v1.PullAlways {
		ref, err := p.service.GetImageRef(ctx, spec)
		if err != nil {
			msg := fmt.Sprintf("Failed to inspect image %q: %v", ref, err)
			p.event(logger, objRef, v1.EventTypeWarning, EventInspectFailed, msg)
			return "", msg, container.ErrImageInspect
		}
		if ref != "" {
			msg := fmt.Sprintf("Container image %q already present on machine", image)
			p.event(logger, objRef, v1.EventTypeNormal, EventPulled, msg)
			return ref, msg, nil
		}
		if pullPolicy == v1.PullNever {
			msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", image)
			p.event(logger, objRef, v1.EventTypeWarning, EventNeverPull, msg)
			return "", msg, container.ErrImageNeverPull
		}
	}

	key := string(pod.UID) + "_" + image
	if p.backOff.IsInBackOffSinceUpdate(key, p.backOff.Clock.Now()) {
		msg := fmt.Sprintf("Back-off pulling image %q", image)
		p.event(logger, objRef, v1.EventTypeNormal, EventBackOffPulling, msg)
		if prev, ok := p.lastErr.Load(key); ok {
			msg = fmt.Sprintf("%s: %s", msg, prev)
		}
		return "", msg, container.ErrImagePullBackOff
	}
	p.lastErr.Delete(key)

	auths, err := p.credentials(withTag, pullSecrets)
	if err != nil {
		msg := fmt.Sprintf("Failed to read image pull secrets for image %q: %v", image, err)
		p.event(logger, objRef, v1.EventTypeWarning, EventFailed, msg)
		return "", msg, container.ErrImagePull
	}

	p.event(logger, objRef, v1.EventTypeNormal, EventPulling, fmt.Sprintf("Pulling image %q", image))
	start := time.Now()
	ref, size, pullTime, err := p.pull(ctx, spec, auths, podSandboxConfig)
	if err != nil {
		p.event(logger, objRef, v1.EventTypeWarning, EventFailed, fmt.Sprintf("Failed to pull image %q: %v", image, err))
		p.backOff.Next(key, p.backOff.Clock.Now())
		msg, reason := pullError(image, err)
		p.lastErr.Store(key, fmt.Sprintf("%v: %s", reason, msg))
		return "", msg, reason
	}
	total := time.Since(start).Truncate(time.Millisecond)
	p.event(logger, objRef, v1.EventTypeNormal, EventPulled, fmt.Sprintf("Successfully pulled image %q in %v (%v including waiting). Image size: %v bytes.",
		image, pullTime.Truncate(time.Millisecond), total, size))
	p.backOff.GC()
	return ref, "", nil
}

// credentials returns the pull secrets' credentials for the image's registry; nil means an
// anonymous pull.
func (p *Puller) credentials(image string, secrets []v1.Secret) ([]*runtimeapi.AuthConfig, error) {
	if len(secrets) == 0 {
		return nil, nil
	}
	name, err := parseImageName(image)
	if err != nil {
		return nil, err
	}
	k, err := newKeyring(secrets)
	if err != nil {
		return nil, err
	}
	return k.lookup(name.Repository), nil
}

// pull waits for a pull slot, then tries each credential in turn (an anonymous pull when
// there are none) until one works. It returns the image reference, its size (best effort)
// and how long the pull itself took.
func (p *Puller) pull(ctx context.Context, spec container.ImageSpec, auths []*runtimeapi.AuthConfig, sandbox *runtimeapi.PodSandboxConfig) (string, uint64, time.Duration, error) {
	if p.tokens != nil {
		select {
		case p.tokens <- struct{}{}:
			defer func() { <-p.tokens }()
		case <-ctx.Done():
			return "", 0, 0, fmt.Errorf("waiting to pull: %w", ctx.Err())
		}
	}
	start := time.Now()
	if len(auths) == 0 {
		auths = []*runtimeapi.AuthConfig{nil}
	}
	var errs []error
	for _, auth := range auths {
		ref, err := p.service.PullImage(ctx, spec, auth, sandbox)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		size, _ := p.service.GetImageSize(ctx, spec)
		return ref, size, time.Since(start), nil
	}
	if len(errs) == 1 {
		return "", 0, 0, errs[0]
	}
	return "", 0, 0, utilerrors.NewAggregate(errs)
}

// pullError turns a failed pull into the message and waiting reason the user sees.
func pullError(image string, err error) (string, error) {
	for _, known := range []struct {
		reason error
		why    string
	}{
		{crierrors.ErrRegistryUnavailable, "the registry is unavailable"},
		{crierrors.ErrSignatureValidationFailed, "the signature validation failed"},
	} {
		if rest, ok := strings.CutPrefix(err.Error(), known.reason.Error()); ok {
			return fmt.Sprintf("image pull failed for %s because %s%s", image, known.why, rest), known.reason
		}
	}
	return err.Error(), container.ErrImagePull
}

func (p *Puller) event(logger klog.Logger, ref *v1.ObjectReference, eventType, reason, msg string) {
	if ref != nil && p.recorder != nil {
		p.recorder.Event(ref, eventType, reason, msg)
		return
	}
	if eventType == v1.EventTypeWarning {
		logger.Error(nil, msg, "reason", reason)
		return
	}
	logger.Info(msg, "reason", reason)
}
