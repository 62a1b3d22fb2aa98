package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// dnsCmd waits until the cluster DNS answers, before the suite starts: the DNS tests, the
// Services tests that dial a Service by its name and the OIDC discovery test all resolve
// names from their pods. It asks each endpoint of the kube-system/kube-dns Service (its
// EndpointSlices, where berth up's DNS server listens on this machine) for the kubernetes
// Service's name, until one answers with that Service's cluster IP. It asks the endpoints
// and not the Service's cluster IP, which only the node's service proxy routes, and only
// for pods.
func dnsCmd(args []string) error {
	var kubeconfig, domain string
	var timeout time.Duration
	if err := flags("dns", args, func(fs *flag.FlagSet) {
		fs.StringVar(&kubeconfig, "kubeconfig", "", "admin kubeconfig")
		fs.StringVar(&domain, "dns-domain", "cluster.local", "the cluster's DNS domain")
		fs.DurationVar(&timeout, "timeout", 90*time.Second, "how long to wait")
	}); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	name := "kubernetes.default.svc." + domain + "."
	for {
		err := checkDNS(ctx, cs, name)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the cluster DNS did not answer %s within %v: %w", name, timeout, err)
		case <-time.After(time.Second):
		}
	}
}

// checkDNS asks every UDP endpoint of kube-system/kube-dns for name's A record and wants the
// kubernetes Service's cluster IP from one of them.
func checkDNS(ctx context.Context, cs kubernetes.Interface, name string) error {
	svc, err := cs.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return err
	}
	want := svc.Spec.ClusterIP
	slices, err := cs.DiscoveryV1().EndpointSlices(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=kube-dns",
	})
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range slices.Items {
		port := int32(0)
		for _, p := range s.Ports {
			if p.Port != nil && (p.Protocol == nil || *p.Protocol == v1.ProtocolUDP) {
				port = *p.Port
				break
			}
		}
		if port == 0 {
			continue
		}
		for _, e := range s.Endpoints {
			for _, a := range e.Addresses {
				server := net.JoinHostPort(a, strconv.Itoa(int(port)))
				got, err := lookupA(ctx, server, name)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				for _, ip := range got {
					if ip.String() == want {
						return nil
					}
				}
				errs = append(errs, fmt.Errorf("%s answered %s with %v, not %s", server, name, got, want))
			}
		}
	}
	if len(errs) == 0 {
		return errors.New("kube-system/kube-dns has no endpoints yet")
	}
	return errors.Join(errs...)
}

// lookupA asks server (host:port) alone for name's A records.
func lookupA(ctx context.Context, server, name string) ([]net.IP, error) {
	r := &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, server)
		},
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	ips, err := r.LookupIP(ctx, "ip4", name)
	if err != nil {
		return nil, fmt.Errorf("asking %s for %s: %w", server, name, err)
	}
	return ips, nil
}
