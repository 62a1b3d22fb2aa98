package proxy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// bridgeNetfilterDir holds the br_netfilter sysctls (a var for tests).
var bridgeNetfilterDir = "/proc/sys/net/bridge"

// ensureBridgeNetfilter turns on net.bridge.bridge-nf-call-iptables (and -ip6tables for an
// ip6 table) where br_netfilter is loaded. Without it, the reply of a pod to a pod on the
// same bridge that reached it through a cluster IP is bridged past conntrack, never
// un-DNATed, and the client drops it: kube-proxy warns of the same ("Missing br-netfilter
// module or unset sysctl br-nf-call-iptables"). It returns why it could not, for a warning.
func ensureBridgeNetfilter(ipv6 bool) error {
	names := []string{"bridge-nf-call-iptables"}
	if ipv6 {
		names = append(names, "bridge-nf-call-ip6tables")
	}
	for _, name := range names {
		file := filepath.Join(bridgeNetfilterDir, name)
		b, err := os.ReadFile(file)
		if os.IsNotExist(err) {
			return fmt.Errorf("the br_netfilter module is not loaded (no %s): pods reaching a pod of the same bridge through a Service may get no answer", file)
		}
		if err != nil {
			return err
		}
		if strings.TrimSpace(string(b)) == "1" {
			continue
		}
		if err := os.WriteFile(file, []byte("1\n"), 0o644); err != nil {
			return fmt.Errorf("setting net.bridge.%s to 1: %w", name, err)
		}
	}
	return nil
}

// warnBridgeNetfilter logs ensureBridgeNetfilter's failure, once per Run.
func (p *Proxier) warnBridgeNetfilter(logger klog.Logger) {
	ipv6 := false
	for _, f := range p.families {
		ipv6 = ipv6 || f.fc.rules.apiFamily == v1.IPv6Protocol
	}
	if err := ensureBridgeNetfilter(ipv6); err != nil {
		logger.Info("Warning: bridged traffic bypasses the service rules", "err", err)
	}
}
