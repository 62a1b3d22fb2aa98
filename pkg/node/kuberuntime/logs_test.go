package kuberuntime

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestParseCRILog(t *testing.T) {
	tests := []struct {
		line    string
		want    logRecord
		wantErr bool
	}{
		{line: "2016-10-06T00:17:09.669794202Z stdout F hello world\n",
			want: logRecord{timestamp: time.Date(2016, 10, 6, 0, 17, 9, 669794202, time.UTC), stream: "stdout", text: []byte("hello world\n")}},
		{line: "2016-10-06T00:17:09.669794203Z stderr P part\n",
			want: logRecord{timestamp: time.Date(2016, 10, 6, 0, 17, 9, 669794203, time.UTC), stream: "stderr", partial: true, text: []byte("part")}},
		{line: "2016-10-06T00:17:10Z stdout F:extra  two spaces\n", // future tags after ":"
			want: logRecord{timestamp: time.Date(2016, 10, 6, 0, 17, 10, 0, time.UTC), stream: "stdout", text: []byte(" two spaces\n")}},
		{line: "2016-10-06T00:17:10+02:00 stdout F \n",
			want: logRecord{timestamp: time.Date(2016, 10, 5, 22, 17, 10, 0, time.UTC), stream: "stdout", text: []byte("\n")}},
		{line: "garbage\n", wantErr: true},
		{line: "2016-10-06T00:17:10Z stdin F x\n", wantErr: true},
		{line: "2016-10-06T00:17:10Z stdout\n", wantErr: true},
		{line: "yesterday stdout F x\n", wantErr: true},
	}
	for _, tt := range tests {
		var got logRecord
		err := parseCRILog([]byte(tt.line), &got)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseCRILog(%q) error = %v, wantErr %v", tt.line, err, tt.wantErr)
			continue
		}
		if err == nil && (!got.timestamp.Equal(tt.want.timestamp) || got.stream != tt.want.stream || got.partial != tt.want.partial || !bytes.Equal(got.text, tt.want.text)) {
			t.Errorf("parseCRILog(%q) = %+v, want %+v", tt.line, got, tt.want)
		}
	}
}

// testLog is a log of five records: three stdout lines, one stderr line, and a stdout line
// split in two partial records.
const testLog = `2024-01-01T00:00:01.000000001Z stdout F one
2024-01-01T00:00:02.000000002Z stderr F two
2024-01-01T00:00:03Z stdout F three
2024-01-01T00:00:04Z stdout P fo
2024-01-01T00:00:04.5Z stdout F ur
2024-01-01T00:00:05Z stdout F five
`

func writeLog(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func ptr[T any](v T) *T { return &v }

func TestReadLogs(t *testing.T) {
	path := writeLog(t, testLog)
	tests := []struct {
		name         string
		opts         LogOptions
		noStderr     bool
		stdout       string
		stderr       string
		combinedOnly string
	}{
		{name: "everything", stdout: "one\nthree\nfour\nfive\n", stderr: "two\n"},
		{name: "tail 2 (records)", opts: LogOptions{TailLines: ptr(int64(2))}, stdout: "ur\nfive\n"},
		{name: "tail 3", opts: LogOptions{TailLines: ptr(int64(3))}, stdout: "four\nfive\n"},
		{name: "tail 0", opts: LogOptions{TailLines: ptr(int64(0))}},
		{name: "tail more than there is", opts: LogOptions{TailLines: ptr(int64(100))}, stdout: "one\nthree\nfour\nfive\n", stderr: "two\n"},
		{name: "since", opts: LogOptions{Since: time.Date(2024, 1, 1, 0, 0, 3, 0, time.UTC)}, stdout: "three\nfour\nfive\n"},
		{name: "timestamps", opts: LogOptions{Timestamps: true, TailLines: ptr(int64(3))},
			stdout: "2024-01-01T00:00:04.000000000Z four\n2024-01-01T00:00:05.000000000Z five\n"},
		{name: "timestamps keep their nanoseconds", opts: LogOptions{Timestamps: true, TailLines: ptr(int64(6))},
			combinedOnly: "2024-01-01T00:00:01.000000001Z one\n2024-01-01T00:00:02.000000002Z two\n2024-01-01T00:00:03.000000000Z three\n2024-01-01T00:00:04.000000000Z four\n2024-01-01T00:00:05.000000000Z five\n"},
		{name: "limit bytes", opts: LogOptions{LimitBytes: ptr(int64(6))}, stdout: "one\n", stderr: "tw"},
		{name: "only stdout", noStderr: true, stdout: "one\nthree\nfour\nfive\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			var errW *bytes.Buffer = &stderr
			if tt.combinedOnly != "" {
				errW = &stdout
			}
			var err error
			if tt.noStderr {
				err = ReadLogs(context.Background(), path, &tt.opts, nil, &stdout, nil)
			} else {
				err = ReadLogs(context.Background(), path, &tt.opts, nil, &stdout, errW)
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.combinedOnly != "" {
				if stdout.String() != tt.combinedOnly {
					t.Errorf("output = %q, want %q", stdout.String(), tt.combinedOnly)
				}
				return
			}
			if stdout.String() != tt.stdout || stderr.String() != tt.stderr {
				t.Errorf("stdout = %q, stderr = %q; want %q, %q", stdout.String(), stderr.String(), tt.stdout, tt.stderr)
			}
		})
	}
}

func TestReadLogsIncompleteAndBadRecords(t *testing.T) {
	path := writeLog(t, "2024-01-01T00:00:01Z stdout F one\nnot a record\n2024-01-01T00:00:02Z stdout F tw")
	var out bytes.Buffer
	if err := ReadLogs(context.Background(), path, &LogOptions{}, nil, &out, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "one\ntw" {
		t.Errorf("output = %q", out.String())
	}
	// The incomplete last record does not count as a line for tail.
	out.Reset()
	if err := ReadLogs(context.Background(), path, &LogOptions{TailLines: ptr(int64(1))}, nil, &out, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "tw" {
		t.Errorf("tail 1 = %q", out.String())
	}
}

func TestTailStartLongFile(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 5000; i++ {
		b.WriteString("2024-01-01T00:00:01Z stdout F line\n")
	}
	b.WriteString("2024-01-01T00:00:01Z stdout F last\n")
	path := writeLog(t, b.String())
	var out bytes.Buffer
	if err := ReadLogs(context.Background(), path, &LogOptions{TailLines: ptr(int64(2))}, nil, &out, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "line\nlast\n" {
		t.Errorf("tail 2 = %q", out.String())
	}
}

// syncBuffer is a buffer a follower writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestReadLogsFollow(t *testing.T) {
	path := writeLog(t, "2024-01-01T00:00:01Z stdout F one\n")
	var running atomic.Bool
	running.Store(true)
	isRunning := func(context.Context) (bool, error) { return running.Load(), nil }
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- ReadLogs(context.Background(), path, &LogOptions{Follow: true}, isRunning, &out, &out) }()

	waitFor(t, "the first line", func() bool { return out.String() == "one\n" })
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// A record written in two writes is read once complete.
	f.WriteString("2024-01-01T00:00:02Z stdout F tw")
	time.Sleep(50 * time.Millisecond)
	f.WriteString("o\n")
	waitFor(t, "the second line", func() bool { return out.String() == "one\ntwo\n" })

	// The container stops after a last line: the follower writes it and returns.
	f.WriteString("2024-01-01T00:00:03Z stdout F three\n")
	running.Store(false)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the follower did not stop with the container")
	}
	if out.String() != "one\ntwo\nthree\n" {
		t.Errorf("output = %q", out.String())
	}
}

func TestReadLogsFollowStopsWithContext(t *testing.T) {
	path := writeLog(t, "2024-01-01T00:00:01Z stdout F one\n")
	ctx, cancel := context.WithCancel(context.Background())
	isRunning := func(context.Context) (bool, error) { return true, nil }
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- ReadLogs(ctx, path, &LogOptions{Follow: true}, isRunning, &out, &out) }()
	waitFor(t, "the first line", func() bool { return out.String() == "one\n" })
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("ReadLogs returned no error on a cancelled context")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the follower did not stop with its context")
	}
}

func TestNewLogOptions(t *testing.T) {
	now := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
	o := NewLogOptions(&v1.PodLogOptions{SinceSeconds: ptr(int64(60)), TailLines: ptr(int64(5)), Timestamps: true, Follow: true}, now)
	if !o.Since.Equal(now.Add(-time.Minute)) || *o.TailLines != 5 || !o.Timestamps || !o.Follow {
		t.Errorf("NewLogOptions = %+v", o)
	}
	since := metav1.NewTime(now.Add(-time.Hour))
	if o := NewLogOptions(&v1.PodLogOptions{SinceTime: &since}, now); !o.Since.Equal(since.Time) {
		t.Errorf("sinceTime = %v", o.Since)
	}
	if o := NewLogOptions(nil, now); o.TailLines != nil || o.Follow {
		t.Errorf("nil options = %+v", o)
	}
}

func TestTerminationMessage(t *testing.T) {
	dir := t.TempDir()
	msgFile := filepath.Join(dir, "msg")
	logFile := writeLog(t, testLog)
	status := func(exit int32, reason string) *runtimeapi.ContainerStatus {
		return &runtimeapi.ContainerStatus{
			ExitCode: exit, Reason: reason, LogPath: logFile,
			Mounts: []*runtimeapi.Mount{{ContainerPath: "/dev/termination-log", HostPath: msgFile}},
		}
	}
	ctx := context.Background()
	if got := TerminationMessage(ctx, status(1, "Error"), "/dev/termination-log", v1.TerminationMessageFallbackToLogsOnError); got != "one\ntwo\nthree\nfour\nfive\n" {
		t.Errorf("missing file, fallback = %q", got)
	}
	if got := TerminationMessage(ctx, status(1, "Error"), "/dev/termination-log", v1.TerminationMessageReadFile); got != "" {
		t.Errorf("missing file, File policy = %q", got)
	}
	if got := TerminationMessage(ctx, status(0, "Completed"), "/dev/termination-log", v1.TerminationMessageFallbackToLogsOnError); got != "" {
		t.Errorf("success does not fall back, got %q", got)
	}
	os.WriteFile(msgFile, []byte("bye"), 0o644)
	if got := TerminationMessage(ctx, status(1, "Error"), "/dev/termination-log", v1.TerminationMessageFallbackToLogsOnError); got != "bye" {
		t.Errorf("file wins over the log, got %q", got)
	}
	os.WriteFile(msgFile, bytes.Repeat([]byte("x"), 5000), 0o644)
	if got := TerminationMessage(ctx, status(0, "Completed"), "/dev/termination-log", v1.TerminationMessageReadFile); len(got) != maxTerminationMessageLength {
		t.Errorf("message length = %d, want the last %d bytes", len(got), maxTerminationMessageLength)
	}
	// The log fallback keeps the last 2 KiB of the last 80 lines.
	var b strings.Builder
	for i := 0; i < 200; i++ {
		b.WriteString("2024-01-01T00:00:01Z stdout F 0123456789012345678901234567890123456789\n")
	}
	s := status(2, "Error")
	s.LogPath = writeLog(t, b.String())
	os.WriteFile(msgFile, nil, 0o644)
	if got := TerminationMessage(ctx, s, "/dev/termination-log", v1.TerminationMessageFallbackToLogsOnError); len(got) != maxTerminationMessageLogLength {
		t.Errorf("log fallback length = %d", len(got))
	}
}
