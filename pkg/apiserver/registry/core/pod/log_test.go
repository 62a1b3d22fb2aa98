package pod

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericrest "k8s.io/apiserver/pkg/registry/generic/rest"
	"k8s.io/utils/ptr"
)

func TestValidatePodLogOptions(t *testing.T) {
	now := metav1.Now()
	tests := []struct {
		name string
		opts corev1.PodLogOptions
		want []string
	}{
		{"nothing set", corev1.PodLogOptions{}, nil},
		{"all fine", corev1.PodLogOptions{TailLines: ptr.To[int64](0), LimitBytes: ptr.To[int64](1), SinceSeconds: ptr.To[int64](1)}, nil},
		{"negative tail", corev1.PodLogOptions{TailLines: ptr.To[int64](-1)}, []string{"tailLines: Invalid value: -1: must be greater than or equal to 0"}},
		{"zero limit", corev1.PodLogOptions{LimitBytes: ptr.To[int64](0)}, []string{"limitBytes: Invalid value: 0: must be greater than 0"}},
		{"zero since", corev1.PodLogOptions{SinceSeconds: ptr.To[int64](0)}, []string{"sinceSeconds: Invalid value: 0: must be greater than 0"}},
		{"both since", corev1.PodLogOptions{SinceSeconds: ptr.To[int64](0), SinceTime: &now}, []string{"Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"}},
		{"stream", corev1.PodLogOptions{Stream: ptr.To("Stdout")}, []string{"stream: Forbidden: may not be specified"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ValidatePodLogOptions(&tt.opts)
			if len(errs) != len(tt.want) {
				t.Fatalf("got %v, want %v", errs, tt.want)
			}
			for i, err := range errs {
				if !strings.Contains(err.Error(), tt.want[i]) {
					t.Errorf("error %d is %q, want it to contain %q", i, err.Error(), tt.want[i])
				}
			}
		})
	}
}

// objects is a getter over a fixed set of objects.
type objects map[string]runtime.Object

func (o objects) Get(_ context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	if obj, ok := o[name]; ok {
		return obj, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("things"), name)
}

func logPod(name, node string, containers ...string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: corev1.PodSpec{NodeName: node}}
	for _, c := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c})
	}
	return pod
}

func logNode(name string, port int32, addresses ...corev1.NodeAddress) *corev1.Node {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	node.Status.Addresses = addresses
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = port
	return node
}

func TestLogREST(t *testing.T) {
	initPod := logPod("init", "n1", "app")
	initPod.Spec.InitContainers = []corev1.Container{{Name: "setup"}}
	pods := objects{
		"one":      logPod("one", "n1", "c"),
		"two":      logPod("two", "n1", "a", "b"),
		"init":     initPod,
		"pending":  logPod("pending", "", "c"),
		"lost":     logPod("lost", "gone", "c"),
		"nowhere":  logPod("nowhere", "bare", "c"),
		"hostname": logPod("hostname", "named", "c"),
	}
	nodes := objects{
		"n1": logNode("n1", 12345,
			corev1.NodeAddress{Type: corev1.NodeHostName, Address: "n1.example"},
			corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}),
		"bare":  logNode("bare", 0),
		"named": logNode("named", 0, corev1.NodeAddress{Type: corev1.NodeHostName, Address: "named.example"}),
	}
	since := metav1.NewTime(time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC))
	tests := []struct {
		name     string
		pod      string
		opts     corev1.PodLogOptions
		wantURL  string // "" for no location
		wantErr  string
		wantCode int32
	}{
		{name: "the only container", pod: "one", wantURL: "https://10.0.0.1:12345/containerLogs/ns/one/c"},
		{name: "options pass on", pod: "one",
			opts:    corev1.PodLogOptions{Follow: true, Previous: true, Timestamps: true, TailLines: ptr.To[int64](5), LimitBytes: ptr.To[int64](9), SinceTime: &since},
			wantURL: "https://10.0.0.1:12345/containerLogs/ns/one/c?follow=true&limitBytes=9&previous=true&sinceTime=2026-05-06T07%3A08%3A09Z&tailLines=5&timestamps=true"},
		{name: "since seconds", pod: "one", opts: corev1.PodLogOptions{SinceSeconds: ptr.To[int64](60)},
			wantURL: "https://10.0.0.1:12345/containerLogs/ns/one/c?sinceSeconds=60"},
		{name: "a named container", pod: "two", opts: corev1.PodLogOptions{Container: "b"}, wantURL: "https://10.0.0.1:12345/containerLogs/ns/two/b"},
		{name: "an init container", pod: "init", opts: corev1.PodLogOptions{Container: "setup"}, wantURL: "https://10.0.0.1:12345/containerLogs/ns/init/setup"},
		{name: "no container named, two to choose from", pod: "two", wantCode: 400,
			wantErr: "a container name must be specified for pod two, choose one of: [a b]"},
		{name: "no container named, init containers listed too", pod: "init", wantURL: "https://10.0.0.1:12345/containerLogs/ns/init/app"},
		{name: "an unknown container", pod: "one", opts: corev1.PodLogOptions{Container: "x"}, wantCode: 400,
			wantErr: "container x is not valid for pod one"},
		{name: "not on a node yet: nothing to stream", pod: "pending"},
		{name: "an unknown pod", pod: "ghost", wantCode: 404, wantErr: "not found"},
		{name: "invalid options", pod: "one", opts: corev1.PodLogOptions{TailLines: ptr.To[int64](-1)}, wantCode: 422,
			wantErr: `PodLogOptions "one" is invalid: tailLines`},
		{name: "a missing node", pod: "lost", wantCode: 404, wantErr: `"gone" not found`},
		{name: "a node without addresses", pod: "nowhere", wantErr: "no preferred addresses found"},
		{name: "a hostname and the default port", pod: "hostname", wantURL: "https://named.example:10250/containerLogs/ns/hostname/c"},
	}
	r := &LogREST{podLocator{pods: pods, nodes: nodes, kubelet: &KubeletConnection{Port: DefaultKubeletPort}}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := r.Get(context.Background(), tt.pod, &tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
				}
				if tt.wantCode != 0 {
					if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != tt.wantCode {
						t.Errorf("got error %#v, want code %d", err, tt.wantCode)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			streamer := obj.(*genericrest.LocationStreamer)
			got := ""
			if streamer.Location != nil {
				got = streamer.Location.String()
			}
			if got != tt.wantURL {
				t.Errorf("location is %q, want %q", got, tt.wantURL)
			}
			if streamer.ContentType != "text/plain" || streamer.Flush != tt.opts.Follow {
				t.Errorf("content type %q, flush %v; want text/plain, %v", streamer.ContentType, streamer.Flush, tt.opts.Follow)
			}
		})
	}
}
