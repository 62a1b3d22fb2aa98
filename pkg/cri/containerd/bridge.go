package containerd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"

	"k8s.io/klog/v2"
)

// The pod bridge is berth's before the first pod: Start creates it and writes, as its alias
// (IFLA_IFALIAS), the endpoint of the containerd it belongs to. The CNI bridge plugin reuses
// a bridge that exists. So a later berth node can tell a bridge a berth node made from any
// other interface, and a live one (its containerd answers) from one left behind by a node
// that stopped: a stopped node's bridge keeps its gateway address and the route to its pod
// CIDR, and a new node on the same CIDR but another bridge would see its host-to-pod traffic
// go into the dead bridge.

// bridgeAliasPrefix starts the alias of a bridge berth made; the containerd endpoint follows.
const bridgeAliasPrefix = "berth containerd "

// route is one route of the main table, as `ip -json route show` prints it.
type route struct {
	Dst string `json:"dst"` // a CIDR, a bare address (a host route) or "default"
	Dev string `json:"dev"`
}

// link is one interface, as `ip -json -details link show` prints it.
type link struct {
	Name     string `json:"ifname"`
	Alias    string `json:"ifalias"`
	LinkInfo struct {
		Kind string `json:"info_kind"`
	} `json:"linkinfo"`
}

// berthEndpoint is the containerd endpoint in the alias of a bridge berth made; ok is false
// for any other interface.
func (l link) berthEndpoint() (endpoint string, ok bool) {
	if l.LinkInfo.Kind != "bridge" || !strings.HasPrefix(l.Alias, bridgeAliasPrefix) {
		return "", false
	}
	return strings.TrimPrefix(l.Alias, bridgeAliasPrefix), true
}

// routeWithin reports whether r sends some or all of podCIDR somewhere: its destination
// lies within podCIDR. A wider route (10.0.0.0/8, the default route) takes nothing from the
// bridge, whose own route to podCIDR is more specific.
func routeWithin(r route, podCIDR *net.IPNet) bool {
	if r.Dst == "" || r.Dst == "default" {
		return false
	}
	dst := r.Dst
	if !strings.Contains(dst, "/") {
		if ip := net.ParseIP(dst); ip != nil && ip.To4() != nil {
			dst += "/32"
		} else {
			dst += "/128"
		}
	}
	_, d, err := net.ParseCIDR(dst)
	if err != nil {
		return false
	}
	cidrOnes, cidrBits := podCIDR.Mask.Size()
	dOnes, dBits := d.Mask.Size()
	return cidrBits == dBits && dOnes >= cidrOnes && podCIDR.Contains(d.IP)
}

// planPodCIDRRoutes decides, from the routes and the interfaces they name, what a node
// starting with bridge on podCIDR (its containerd at endpoint) must do about other
// interfaces that hold routes into podCIDR: the stale berth bridges to delete (made by berth,
// their containerd dead), or an error naming the interface that keeps the node from starting.
// alive says whether a containerd answers on an endpoint.
func planPodCIDRRoutes(podCIDR *net.IPNet, bridge, endpoint string, routes []route, links map[string]link, alive func(endpoint string) bool) (stale []string, err error) {
	seen := map[string]bool{}
	for _, r := range routes {
		if r.Dev == bridge || seen[r.Dev] || !routeWithin(r, podCIDR) {
			continue
		}
		seen[r.Dev] = true
		l, known := links[r.Dev]
		if owner, ok := l.berthEndpoint(); known && ok {
			if owner != endpoint && alive(owner) {
				return nil, fmt.Errorf("pod CIDR %s is already routed to interface %s, the bridge of the berth node whose containerd answers at %s: stop that node or choose another --pod-cidr", podCIDR, r.Dev, owner)
			}
			stale = append(stale, r.Dev)
			continue
		}
		if r.Dev == "" {
			return nil, fmt.Errorf("pod CIDR %s is already routed (%s): remove the route or choose another --pod-cidr", podCIDR, r.Dst)
		}
		if known && l.LinkInfo.Kind == "bridge" {
			return nil, fmt.Errorf("pod CIDR %s is already routed to interface %s (not this node's bridge %s): remove it (ip link delete %s) or choose another --pod-cidr", podCIDR, r.Dev, bridge, r.Dev)
		}
		return nil, fmt.Errorf("pod CIDR %s is already routed to interface %s (not this node's bridge %s): remove the route (ip route del %s dev %s) or choose another --pod-cidr", podCIDR, r.Dev, bridge, r.Dst, r.Dev)
	}
	return stale, nil
}

// takeOverPodCIDR makes podCIDR this node's: it deletes the stale berth bridges that route
// into it, or refuses with planPodCIDRRoutes' error.
func takeOverPodCIDR(ctx context.Context, c Config, endpoint string) error {
	_, podCIDR, err := net.ParseCIDR(c.PodCIDR)
	if err != nil {
		return fmt.Errorf("containerd: pod CIDR: %w", err)
	}
	family := "-4"
	if podCIDR.IP.To4() == nil {
		family = "-6"
	}
	var routes []route
	if err := ipJSON(ctx, &routes, family, "route", "show"); err != nil {
		return fmt.Errorf("containerd: listing routes: %w", err)
	}
	links := map[string]link{}
	for _, r := range routes {
		if r.Dev == "" || r.Dev == c.Bridge || !routeWithin(r, podCIDR) {
			continue
		}
		if l, err := showLink(ctx, r.Dev); err == nil {
			links[r.Dev] = l
		}
	}
	stale, err := planPodCIDRRoutes(podCIDR, c.Bridge, endpoint, routes, links,
		func(e string) bool { return Available(ctx, e) })
	if err != nil {
		return fmt.Errorf("containerd: %w", err)
	}
	for _, name := range stale {
		klog.FromContext(ctx).Info("Deleting a stale berth bridge that routes this node's pod CIDR", "bridge", name, "podCIDR", podCIDR.String(), "formerContainerd", links[name].Alias)
		if err := deleteLink(ctx, name); err != nil {
			return fmt.Errorf("containerd: deleting stale bridge %s: %w", name, err)
		}
	}
	return nil
}

// TakeOverPodCIDR does for a pod CIDR learnt after Start (the Node's spec.podCIDR, sent to
// containerd with CRI UpdateRuntimeConfig) what Start does for one it was given: it deletes
// the stale berth bridges that route podCIDR, or refuses, naming the interface that does.
// Call it before UpdateRuntimeConfig.
func (p *Process) TakeOverPodCIDR(ctx context.Context, podCIDR string) error {
	c := p.config
	c.PodCIDR = podCIDR
	if err := takeOverPodCIDR(ctx, c, p.endpoint); err != nil {
		return err
	}
	return ensureGateway(ctx, c)
}

// ensureBridge creates c.Bridge if it does not exist (saying so) and marks it as the bridge
// of the containerd at endpoint. An interface of that name that is not a bridge, or the
// bridge of another berth node whose containerd answers, is an error.
func ensureBridge(ctx context.Context, c Config, endpoint string) (created bool, err error) {
	alias := bridgeAliasPrefix + endpoint
	l, err := showLink(ctx, c.Bridge)
	switch {
	case errors.Is(err, errNoLink):
		if err := ip(ctx, "link", "add", "name", c.Bridge, "type", "bridge"); err != nil {
			return false, fmt.Errorf("containerd: creating bridge %s: %w", c.Bridge, err)
		}
		created = true
	case err != nil:
		return false, fmt.Errorf("containerd: %w", err)
	case l.LinkInfo.Kind != "bridge":
		return false, fmt.Errorf("containerd: interface %s exists and is not a bridge (%s): choose another --bridge", c.Bridge, l.LinkInfo.Kind)
	case l.Alias == alias:
		return false, nil
	default:
		if owner, ok := l.berthEndpoint(); ok && Available(ctx, owner) {
			return false, fmt.Errorf("containerd: bridge %s belongs to the berth node whose containerd answers at %s: choose another --bridge", c.Bridge, owner)
		}
	}
	if err := ip(ctx, "link", "set", "dev", c.Bridge, "alias", alias); err != nil {
		if created {
			_ = deleteLink(ctx, c.Bridge)
		}
		return false, fmt.Errorf("containerd: marking bridge %s as berth's: %w", c.Bridge, err)
	}
	return created, nil
}

// ensureGateway gives c.Bridge the first address of c.PodCIDR and brings it up, as the CNI
// bridge plugin (isGateway) does for the first pod, which then finds the address it would
// add: so that what listens on the gateway (berth up's cluster DNS, the kube-dns Service's
// endpoint) answers before any pod runs, instead of the machine routing its queries away.
func ensureGateway(ctx context.Context, c Config) error {
	_, podCIDR, err := net.ParseCIDR(c.PodCIDR)
	if err != nil {
		return fmt.Errorf("containerd: pod CIDR: %w", err)
	}
	gw := make(net.IP, len(podCIDR.IP))
	copy(gw, podCIDR.IP)
	gw[len(gw)-1]++
	ones, _ := podCIDR.Mask.Size()
	addr := fmt.Sprintf("%s/%d", gw, ones)
	if err := ip(ctx, "addr", "replace", addr, "dev", c.Bridge); err != nil { // replace: no error if there
		return fmt.Errorf("containerd: giving bridge %s its gateway address: %w", c.Bridge, err)
	}
	if err := ip(ctx, "link", "set", "dev", c.Bridge, "up"); err != nil {
		return fmt.Errorf("containerd: bringing bridge %s up: %w", c.Bridge, err)
	}
	return nil
}

// errNoLink is showLink's answer for an interface that does not exist.
var errNoLink = errors.New("no such interface")

// showLink describes one interface.
func showLink(ctx context.Context, name string) (link, error) {
	var links []link
	if err := ipJSON(ctx, &links, "-details", "link", "show", "dev", name); err != nil {
		if strings.Contains(err.Error(), "does not exist") {
			return link{}, fmt.Errorf("interface %s: %w", name, errNoLink)
		}
		return link{}, err
	}
	if len(links) != 1 {
		return link{}, fmt.Errorf("interface %s: %w", name, errNoLink)
	}
	return links[0], nil
}

// deleteLink deletes an interface; one that is already gone is no error.
func deleteLink(ctx context.Context, name string) error {
	err := ip(ctx, "link", "delete", "dev", name)
	if err != nil && strings.Contains(err.Error(), "Cannot find device") {
		return nil
	}
	return err
}

// ip runs iproute2's ip.
func ip(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ipJSON runs ip -json with args and decodes its answer into v.
func ipJSON(ctx context.Context, v any, args ...string) error {
	args = append([]string{"-json"}, args...)
	cmd := exec.CommandContext(ctx, "ip", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("ip %s: %w", strings.Join(args, " "), err)
	}
	return nil
}
