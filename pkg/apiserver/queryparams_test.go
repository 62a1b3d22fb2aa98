package apiserver

import (
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/apiserver/scheme"
)

func TestDecodeQueryParameters(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	tests := []struct {
		name    string
		query   string
		into    runtime.Object
		want    runtime.Object
		wantErr bool
	}{
		{
			name:  "log options, all set",
			query: "container=c&follow=true&previous=1&timestamps=yes&sinceTime=2026-01-02T03:04:05Z&tailLines=10&limitBytes=500&insecureSkipTLSVerifyBackend=false",
			into:  &corev1.PodLogOptions{},
			want: &corev1.PodLogOptions{Container: "c", Follow: true, Previous: true, Timestamps: true,
				SinceTime: &since, TailLines: ptr.To[int64](10), LimitBytes: ptr.To[int64](500)},
		},
		{
			name:  "false and 0 are false, an empty value is true",
			query: "follow=false&previous=0&timestamps=&sinceSeconds=30",
			into:  &corev1.PodLogOptions{},
			want:  &corev1.PodLogOptions{Timestamps: true, SinceSeconds: ptr.To[int64](30)},
		},
		{
			name:  "the first value counts",
			query: "tailLines=1&tailLines=2",
			into:  &corev1.PodLogOptions{},
			want:  &corev1.PodLogOptions{TailLines: ptr.To[int64](1)},
		},
		{
			name:  "absent parameters reset the field",
			query: "follow=1",
			into:  &corev1.PodLogOptions{Container: "old", TailLines: ptr.To[int64](3)},
			want:  &corev1.PodLogOptions{Follow: true},
		},
		{
			name:    "a bad number",
			query:   "tailLines=ten",
			into:    &corev1.PodLogOptions{},
			wantErr: true,
		},
		{
			name:    "a bad time",
			query:   "sinceTime=yesterday",
			into:    &corev1.PodLogOptions{},
			wantErr: true,
		},
		{
			name:  "exec options: repeated command",
			query: "command=sh&command=-c&command=echo+hi&stdin=1&stdout=1&tty=true&container=c",
			into:  &corev1.PodExecOptions{},
			want:  &corev1.PodExecOptions{Command: []string{"sh", "-c", "echo hi"}, Stdin: true, Stdout: true, TTY: true, Container: "c"},
		},
		{
			name:  "port-forward options: comma-separated and repeated ports",
			query: "ports=80,443&ports=8080",
			into:  &corev1.PodPortForwardOptions{},
			want:  &corev1.PodPortForwardOptions{Ports: []int32{80, 443, 8080}},
		},
		{
			name:    "port-forward options: a port out of range",
			query:   "ports=70000",
			into:    &corev1.PodPortForwardOptions{},
			wantErr: true,
		},
		{
			name:  "attach options",
			query: "stderr=true&container=x",
			into:  &corev1.PodAttachOptions{},
			want:  &corev1.PodAttachOptions{Stderr: true, Container: "x"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			values, err := url.ParseQuery(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			err = scheme.ParameterCodec.DecodeParameters(values, corev1.SchemeGroupVersion, tt.into)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("decoded %+v, want an error", tt.into)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, tt.into); diff != "" {
				t.Errorf("decoded options differ (-want +got):\n%s", diff)
			}
		})
	}
}
