package memory

import (
	"testing"
	"time"
)

func TestParseScript(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        Script
		err         bool
	}{
		{name: "none", want: defaultScript},
		{name: "unrelated", annotations: map[string]string{"app": "x"}, want: defaultScript},
		{
			name:        "seconds",
			annotations: map[string]string{AnnotationRunSeconds: "30"},
			want:        Script{Exits: true, RunFor: 30 * time.Second, StopExitCode: 143},
		},
		{
			name:        "fraction",
			annotations: map[string]string{AnnotationRunSeconds: "0.5"},
			want:        Script{Exits: true, RunFor: 500 * time.Millisecond, StopExitCode: 143},
		},
		{
			name:        "duration",
			annotations: map[string]string{AnnotationRunSeconds: "2m"},
			want:        Script{Exits: true, RunFor: 2 * time.Minute, StopExitCode: 143},
		},
		{
			name: "container's keys win",
			annotations: map[string]string{
				AnnotationRunSeconds: "30", AnnotationRunSeconds + ".c": "0",
				AnnotationExitCode: "1", AnnotationExitCode + ".other": "2",
			},
			want: Script{Exits: true, RunFor: 0, ExitCode: 1, StopExitCode: 143},
		},
		{
			name:        "oom without run time exits at once",
			annotations: map[string]string{AnnotationOOM: "true"},
			want:        Script{Exits: true, OOMKilled: true, StopExitCode: 143},
		},
		{
			name:        "everything",
			annotations: map[string]string{AnnotationFailStart: "no", AnnotationExecExitCode: "7", AnnotationStopExitCode: "0"},
			want:        Script{FailStart: "no", ExecExitCode: 7},
		},
		{name: "empty fail-start still fails", annotations: map[string]string{AnnotationFailStart: ""}, want: Script{FailStart: "simulated start failure", StopExitCode: 143}},
		{name: "bad seconds", annotations: map[string]string{AnnotationRunSeconds: "soon"}, err: true},
		{name: "negative", annotations: map[string]string{AnnotationRunSeconds: "-1"}, err: true},
		{name: "NaN", annotations: map[string]string{AnnotationRunSeconds: "NaN"}, err: true},
		{name: "huge", annotations: map[string]string{AnnotationRunSeconds: "1e300"}, err: true},
		{name: "bad exit code", annotations: map[string]string{AnnotationExitCode + ".c": "256"}, err: true},
		{name: "bad oom", annotations: map[string]string{AnnotationOOM: "yes please"}, err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseScript(tt.annotations, "c")
			if (err != nil) != tt.err {
				t.Fatalf("error %v, want error %v", err, tt.err)
			}
			if !tt.err && got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
