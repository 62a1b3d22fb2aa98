package framework

import (
	"errors"
	"strings"
)

// Code is the outcome of a plugin call.
type Code int

const (
	// Success: the plugin is content.
	Success Code = iota
	// Error: something went wrong inside; the pod is retried with back-off.
	Error
	// Unschedulable: the node does not fit now, but preemption might make it fit.
	Unschedulable
	// UnschedulableAndUnresolvable: the node does not fit, and preempting pods won't help.
	UnschedulableAndUnresolvable
	// Wait: a Permit plugin holds the pod until it allows or rejects it.
	Wait
	// Skip: the plugin has nothing to do for this pod; its later extension points are skipped.
	Skip
	// Pending: the pod waits for something outside the scheduler (PreEnqueue).
	Pending
)

var codeNames = []string{"Success", "Error", "Unschedulable", "UnschedulableAndUnresolvable", "Wait", "Skip", "Pending"}

func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "Unknown"
}

// Status is a plugin's answer. A nil *Status means Success.
type Status struct {
	code    Code
	reasons []string
	err     error
	plugin  string
}

// NewStatus returns a Status with a code and the reasons users see ("Insufficient cpu").
func NewStatus(code Code, reasons ...string) *Status {
	s := &Status{code: code, reasons: reasons}
	if code == Error && len(reasons) > 0 {
		s.err = errors.New(strings.Join(reasons, ", "))
	}
	return s
}

// AsStatus wraps an error as an Error status; nil stays nil.
func AsStatus(err error) *Status {
	if err == nil {
		return nil
	}
	return &Status{code: Error, reasons: []string{err.Error()}, err: err}
}

// Code returns the code; Success for nil.
func (s *Status) Code() Code {
	if s == nil {
		return Success
	}
	return s.code
}

// Reasons returns the reasons.
func (s *Status) Reasons() []string {
	if s == nil {
		return nil
	}
	if s.err != nil && len(s.reasons) == 0 {
		return []string{s.err.Error()}
	}
	return s.reasons
}

// Message joins the reasons.
func (s *Status) Message() string {
	return strings.Join(s.Reasons(), ", ")
}

// AppendReason adds a reason.
func (s *Status) AppendReason(reason string) { s.reasons = append(s.reasons, reason) }

// Plugin is the plugin that answered so (set by the runtime).
func (s *Status) Plugin() string {
	if s == nil {
		return ""
	}
	return s.plugin
}

// WithPlugin records which plugin answered and returns s.
func (s *Status) WithPlugin(plugin string) *Status {
	if s != nil {
		s.plugin = plugin
	}
	return s
}

// WithError records the error behind an Error status and returns s.
func (s *Status) WithError(err error) *Status {
	s.err = err
	return s
}

// IsSuccess reports Success (or nil).
func (s *Status) IsSuccess() bool { return s.Code() == Success }

// IsWait reports Wait.
func (s *Status) IsWait() bool { return s.Code() == Wait }

// IsSkip reports Skip.
func (s *Status) IsSkip() bool { return s.Code() == Skip }

// IsRejected reports that the pod does not fit (Unschedulable, UnschedulableAndUnresolvable
// or Pending).
func (s *Status) IsRejected() bool {
	c := s.Code()
	return c == Unschedulable || c == UnschedulableAndUnresolvable || c == Pending
}

// AsError returns the status as an error, nil when it is a success.
func (s *Status) AsError() error {
	if s.IsSuccess() || s.IsWait() || s.IsSkip() {
		return nil
	}
	if s.err != nil {
		return s.err
	}
	return errors.New(s.Message())
}

func (s *Status) String() string {
	if s == nil {
		return "Success"
	}
	return s.code.String() + ": " + s.Message()
}
