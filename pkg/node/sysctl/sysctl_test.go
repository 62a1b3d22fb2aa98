package sysctl

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/node/admission"
)

func TestSafeSysctlsByKernel(t *testing.T) {
	always := []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
		"net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start"}
	for _, tc := range []struct {
		kernel       string
		want, absent []string
	}{
		{kernel: "", want: always, absent: []string{"net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time"}},
		{kernel: "3.15.0", want: always, absent: []string{"net.ipv4.ip_local_reserved_ports"}},
		{kernel: "4.5.0", want: []string{"net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_keepalive_intvl"},
			absent: []string{"net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_rmem"}},
		{kernel: "4.14.9", want: []string{"net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_notsent_lowat"}, absent: []string{"net.ipv4.tcp_rmem"}},
		{kernel: "6.18.44-fc-v1045", want: []string{"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_slow_start_after_idle"}},
	} {
		var kernel *version.Version
		if tc.kernel != "" {
			kernel = version.MustParseGeneric(tc.kernel)
		}
		got := SafeSysctls(kernel)
		for _, s := range tc.want {
			if !slices.Contains(got, s) {
				t.Errorf("kernel %q: %s not safe, got %v", tc.kernel, s, got)
			}
		}
		for _, s := range tc.absent {
			if slices.Contains(got, s) {
				t.Errorf("kernel %q: %s safe before the kernel namespaced it", tc.kernel, s)
			}
		}
	}
}

func TestNewAllowlistRefuses(t *testing.T) {
	for _, tc := range []struct{ pattern, want string }{
		{"kernel.msg*", ""},
		{"net.ipv4.route.*", ""},
		{"net/ipv4/neigh/*", ""},
		{"kernel.shmmax", ""},
		{"foo-", `sysctl "foo-" must have at most 253 characters and match regex ([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]`},
		{"kernel.panic", `the sysctls "kernel.panic" are not known to be namespaced`},
		{"vm.*", `the sysctls "vm." are not known to be namespaced`},
	} {
		_, err := NewAllowlist([]string{tc.pattern})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.pattern, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("%q: error %v, want %q", tc.pattern, err, tc.want)
		}
	}
}

func podWithSysctls(names ...string) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: v1.PodSpec{SecurityContext: &v1.PodSecurityContext{}}}
	for _, n := range names {
		pod.Spec.SecurityContext.Sysctls = append(pod.Spec.SecurityContext.Sysctls, v1.Sysctl{Name: n, Value: "1"})
	}
	return pod
}

func TestAdmit(t *testing.T) {
	w, err := NewAllowlist(append(SafeSysctls(version.MustParseGeneric("6.1")), "kernel.msg*", "net.core.somaxconn", "user.max_user_namespaces"))
	if err != nil {
		t.Fatal(err)
	}
	hostNet := func(p *v1.Pod) *v1.Pod { p.Spec.HostNetwork = true; return p }
	hostIPC := func(p *v1.Pod) *v1.Pod { p.Spec.HostIPC = true; return p }
	ownUsers := func(p *v1.Pod) *v1.Pod { p.Spec.HostUsers = ptr.To(false); return p }
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want string // "" admits; else the message
	}{
		{"no security context", &v1.Pod{}, ""},
		{"no sysctls", podWithSysctls(), ""},
		{"safe", podWithSysctls("kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range"), ""},
		{"safe with slashes", podWithSysctls("kernel/shm_rmid_forced"), ""},
		{"unsafe allowed by name", podWithSysctls("net.core.somaxconn"), ""},
		{"unsafe allowed by pattern", podWithSysctls("kernel.msgmax"), ""},
		{"unsafe, not allowed", podWithSysctls("kernel.shm_rmid_forced", "kernel.sem"),
			`forbidden sysctl: "kernel.sem" not allowlisted`},
		{"slashes normalized in the message", podWithSysctls("net/ipv4/conf/eth0.100/forwarding"),
			`forbidden sysctl: "net.ipv4.conf.eth0/100.forwarding" not allowlisted`},
		{"net with host network", hostNet(podWithSysctls("net.ipv4.ip_local_port_range")),
			`forbidden sysctl: "net.ipv4.ip_local_port_range" not allowed with host Net enabled`},
		{"ipc with host network", hostNet(podWithSysctls("kernel.shm_rmid_forced")), ""},
		{"ipc with host IPC", hostIPC(podWithSysctls("kernel.shm_rmid_forced")),
			`forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host IPC enabled`},
		{"ipc pattern with host IPC", hostIPC(podWithSysctls("kernel.msgmnb")),
			`forbidden sysctl: "kernel.msgmnb" not allowed with host IPC enabled`},
		{"user with host users", podWithSysctls("user.max_user_namespaces"),
			`forbidden sysctl: "user.max_user_namespaces" not allowed with host User enabled`},
		{"user with its own users", ownUsers(podWithSysctls("user.max_user_namespaces")), ""},
	} {
		got := w.Admit(&admission.PodAdmitAttributes{Pod: tc.pod})
		switch {
		case tc.want == "" && !got.Admit:
			t.Errorf("%s: rejected: %s: %s", tc.name, got.Reason, got.Message)
		case tc.want != "" && (got.Admit || got.Reason != ForbiddenReason || got.Message != tc.want):
			t.Errorf("%s: got %+v, want %s %q", tc.name, got, ForbiddenReason, tc.want)
		}
	}
}

// The conformance case: kernel.msgmax is namespaced but not safe, and a node that allows no
// unsafe sysctl rejects it; the node's allowedUnsafeSysctls lets it through.
func TestNodeAllowlist(t *testing.T) {
	logger := klog.Background()
	pod := podWithSysctls("kernel.msgmax")
	w, err := NodeAllowlist(logger, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := w.Admit(&admission.PodAdmitAttributes{Pod: pod})
	if got.Admit || got.Reason != ForbiddenReason || got.Message != `forbidden sysctl: "kernel.msgmax" not allowlisted` {
		t.Errorf("default node: got %+v", got)
	}
	if got := w.Admit(&admission.PodAdmitAttributes{Pod: podWithSysctls("kernel.shm_rmid_forced")}); !got.Admit {
		t.Errorf("default node rejects a safe sysctl: %+v", got)
	}
	w, err = NodeAllowlist(logger, []string{"kernel.msgmax"})
	if err != nil {
		t.Fatal(err)
	}
	if got := w.Admit(&admission.PodAdmitAttributes{Pod: pod}); !got.Admit {
		t.Errorf("allowedUnsafeSysctls [kernel.msgmax]: %+v", got)
	}
	if _, err := NodeAllowlist(logger, []string{"kernel.panic"}); err == nil {
		t.Error("an allowedUnsafeSysctls entry that is not namespaced was accepted")
	}
}
