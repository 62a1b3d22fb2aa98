package memory

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The annotations that script a pod's containers. The node agent copies a pod's annotations
// into its PodSandboxConfig, so they are read from the sandbox; a container's own CRI
// annotations are the node agent's, not the user's. Each key applies to every container of
// the pod; the same key suffixed with "." and a container's name applies to that container
// only and wins over the pod-wide key (a key's name part has at most 63 characters, so
// this fits container names of up to 48):
//
//	sim.berth.dev/run-seconds: "30"          every container exits by itself 30 s after its start
//	sim.berth.dev/run-seconds.migrate: "0"   ...but the init container "migrate" at once
//	sim.berth.dev/exit-code.app: "1"         and "app" then exits with 1 (reason "Error")
//
// Without run-seconds a container runs until it is stopped, as a server does; init
// containers therefore need a run-seconds of their own for the pod to get past them.
const (
	// annotationPrefix starts every scripting annotation.
	annotationPrefix = "sim.berth.dev/"

	// AnnotationRunSeconds is how long a container runs before it exits by itself: seconds
	// ("30", "0.5") or a Go duration ("2m"). Unset: it runs until stopped.
	AnnotationRunSeconds = annotationPrefix + "run-seconds"
	// AnnotationExitCode is the exit code of a container that exits by itself (default 0,
	// reason "Completed"; any other code has reason "Error").
	AnnotationExitCode = annotationPrefix + "exit-code"
	// AnnotationStopExitCode is the exit code of a running container stopped with a grace
	// period: the simulated process obeys SIGTERM at once. Default 143 (killed by SIGTERM);
	// "0" for a process that shuts down cleanly. A stop without grace period is a SIGKILL:
	// 137, whatever this says.
	AnnotationStopExitCode = annotationPrefix + "stop-exit-code"
	// AnnotationFailStart makes StartContainer fail with this message, as when runc cannot
	// start the process: the container ends exited with code 128, reason "StartError".
	AnnotationFailStart = annotationPrefix + "fail-start"
	// AnnotationOOM ("true") makes a container exit at its run time (at once without
	// run-seconds) killed by the OOM killer: code 137, reason "OOMKilled".
	AnnotationOOM = annotationPrefix + "oom"
	// AnnotationExecExitCode is the exit code of every command run in the container with
	// ExecSync (exec probes, hooks); default 0, so exec probes succeed.
	AnnotationExecExitCode = annotationPrefix + "exec-exit-code"
)

// Exit codes and reasons as containerd reports them.
const (
	exitCodeSIGKILL    = 137 // 128 + 9
	exitCodeSIGTERM    = 143 // 128 + 15
	exitCodeStartError = 128 // containerd's errorStartExitCode

	reasonCompleted  = "Completed"
	reasonError      = "Error"
	reasonOOMKilled  = "OOMKilled"
	reasonStartError = "StartError"
)

// Script is how one simulated container behaves, parsed from its sandbox's annotations.
// Without annotations it is a server: it runs until stopped, exits with 143 when stopped
// with a grace period, and answers every exec with 0.
type Script struct {
	// Exits says the container exits by itself RunFor after its start.
	Exits  bool
	RunFor time.Duration
	// ExitCode is its exit code when it exits by itself.
	ExitCode int32
	// StopExitCode is its exit code when stopped with a grace period.
	StopExitCode int32
	// OOMKilled makes it exit at RunFor killed by the OOM killer (137, "OOMKilled").
	OOMKilled bool
	// FailStart, when set, is the error StartContainer fails with.
	FailStart string
	// ExecExitCode is the exit code of ExecSync.
	ExecExitCode int32
}

// defaultScript is the zero Script with the SIGTERM exit code every stop without a script
// uses; containers whose script equals it store none.
var defaultScript = Script{StopExitCode: exitCodeSIGTERM}

// ParseScript reads the script of the container named container from a sandbox's
// annotations. A value that does not parse is an error, so that a typo fails the container's
// creation where the user sees it rather than simulating something else.
func ParseScript(annotations map[string]string, container string) (Script, error) {
	s := defaultScript
	lookup := func(key string) (string, bool) {
		if v, ok := annotations[key+"."+container]; ok {
			return v, true
		}
		v, ok := annotations[key]
		return v, ok
	}
	if !hasScript(annotations) {
		return s, nil // most pods: no key to look up
	}
	if v, ok := lookup(AnnotationRunSeconds); ok {
		d, err := parseSeconds(v)
		if err != nil {
			return s, fmt.Errorf("annotation %s: %w", AnnotationRunSeconds, err)
		}
		s.Exits, s.RunFor = true, d
	}
	for _, f := range []struct {
		key string
		to  *int32
	}{
		{AnnotationExitCode, &s.ExitCode},
		{AnnotationStopExitCode, &s.StopExitCode},
		{AnnotationExecExitCode, &s.ExecExitCode},
	} {
		v, ok := lookup(f.key)
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil || n < 0 || n > 255 {
			return s, fmt.Errorf("annotation %s: %q is not an exit code (0-255)", f.key, v)
		}
		*f.to = int32(n)
	}
	if v, ok := lookup(AnnotationOOM); ok {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return s, fmt.Errorf("annotation %s: %q is not a boolean", AnnotationOOM, v)
		}
		s.OOMKilled = b
		if b {
			s.Exits = true // at RunFor, 0 when run-seconds is unset
		}
	}
	if v, ok := lookup(AnnotationFailStart); ok {
		if v == "" {
			v = "simulated start failure"
		}
		s.FailStart = v
	}
	return s, nil
}

func hasScript(annotations map[string]string) bool {
	for k := range annotations {
		if strings.HasPrefix(k, annotationPrefix) {
			return true
		}
	}
	return false
}

// parseSeconds reads "30", "0.5" or a Go duration such as "2m".
func parseSeconds(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	var d time.Duration
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(f) || f < 0 || f > math.MaxInt64/float64(time.Second) {
			return 0, fmt.Errorf("%q is not a number of seconds", v)
		}
		d = time.Duration(f * float64(time.Second))
	} else if d, err = time.ParseDuration(v); err != nil {
		return 0, fmt.Errorf("%q is neither seconds nor a duration", v)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", v)
	}
	return d, nil
}

// exit is how a container that exits by itself ends.
func (s *Script) exit() (code int32, reason string) {
	if s.OOMKilled {
		return exitCodeSIGKILL, reasonOOMKilled
	}
	return s.ExitCode, exitReason(s.ExitCode)
}

// exitReason is containerd's reason for an exit code.
func exitReason(code int32) string {
	if code == 0 {
		return reasonCompleted
	}
	return reasonError
}
