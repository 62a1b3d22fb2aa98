package container

import (
	"errors"
	"fmt"
)

// SyncAction is a step SyncPod took.
type SyncAction string

const (
	StartContainer   SyncAction = "StartContainer"
	KillContainer    SyncAction = "KillContainer"
	SetupNetwork     SyncAction = "SetupNetwork"
	TeardownNetwork  SyncAction = "TeardownNetwork"
	InitContainer    SyncAction = "InitContainer"
	CreatePodSandbox SyncAction = "CreatePodSandbox"
	ConfigPodSandbox SyncAction = "ConfigPodSandbox"
	KillPodSandbox   SyncAction = "KillPodSandbox"
	ResizePodInPlace SyncAction = "ResizePodInPlace"
)

// The reasons a container waits, as users see them in its status.
var (
	ErrCrashLoopBackOff      = errors.New("CrashLoopBackOff")
	ErrContainerNotFound     = errors.New("no matching container")
	ErrRunContainer          = errors.New("RunContainerError")
	ErrKillContainer         = errors.New("KillContainerError")
	ErrCreatePodSandbox      = errors.New("CreatePodSandboxError")
	ErrConfigPodSandbox      = errors.New("ConfigPodSandboxError")
	ErrKillPodSandbox        = errors.New("KillPodSandboxError")
	ErrPostStartHook         = errors.New("PostStartHookError")
	ErrCreateContainerConfig = errors.New("CreateContainerConfigError")
	ErrPreCreateHook         = errors.New("PreCreateHookError")
	ErrCreateContainer       = errors.New("CreateContainerError")
	ErrPreStartHook          = errors.New("PreStartHookError")
	ErrImagePull             = errors.New("ErrImagePull")
	ErrImagePullBackOff      = errors.New("ImagePullBackOff")
	ErrImageInspect          = errors.New("ImageInspectError")
	ErrImageNeverPull        = errors.New("ErrImageNeverPull")
	ErrInvalidImageName      = errors.New("InvalidImageName")
	ErrResizePodInPlace      = errors.New("ResizePodInPlaceError")
	// ErrInternal is berth's: the pod's sync panicked (a bug of the node agent's, which the pod
	// worker contained); the message has the panic.
	ErrInternal = errors.New("InternalError")
)

// SyncResult is the outcome of one step on one target (a container name, a pod).
type SyncResult struct {
	Action SyncAction
	Target interface{}
	// Error is one of the Err values above, or nil; Message says more.
	Error   error
	Message string
}

// NewSyncResult starts a result.
func NewSyncResult(action SyncAction, target interface{}) *SyncResult {
	return &SyncResult{Action: action, Target: target}
}

// Fail records a failure.
func (r *SyncResult) Fail(err error, msg string) {
	r.Error, r.Message = err, msg
}

// PodSyncResult is what one SyncPod did.
type PodSyncResult struct {
	SyncResults []*SyncResult
	// SyncError is an error of SyncPod itself, outside a step.
	SyncError error
}

// AddSyncResult appends step results.
func (p *PodSyncResult) AddSyncResult(result ...*SyncResult) {
	p.SyncResults = append(p.SyncResults, result...)
}

// AddPodSyncResult merges another PodSyncResult.
func (p *PodSyncResult) AddPodSyncResult(result PodSyncResult) {
	p.AddSyncResult(result.SyncResults...)
	p.Fail(result.SyncError)
}

// Fail records an error of SyncPod itself.
func (p *PodSyncResult) Fail(err error) {
	if p.SyncError == nil {
		p.SyncError = err
	}
}

// Error joins every failure into one error, nil when everything succeeded.
func (p *PodSyncResult) Error() error {
	var errs []error
	for _, r := range p.SyncResults {
		if r.Error != nil {
			errs = append(errs, fmt.Errorf("failed to %q for %q with %v: %q", r.Action, r.Target, r.Error, r.Message))
		}
	}
	if p.SyncError != nil {
		errs = append(errs, fmt.Errorf("failed to SyncPod: %w", p.SyncError))
	}
	return errors.Join(errs...)
}
