// Package extender is the scheduler's client of HTTP extenders: external services that take
// part in findNodesThatFitPod (filter), prioritizeNodes (prioritize) and bind, speaking
// kube-scheduler's extender protocol (k8s.io/kube-scheduler/extender/v1, JSON over HTTP POST).
package extender

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	configv1 "k8s.io/kube-scheduler/config/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// DefaultTimeout is how long a call may take when the configuration says nothing.
const DefaultTimeout = 5 * time.Second

// HTTPExtender is one configured extender.
type HTTPExtender struct {
	urlPrefix        string
	filterVerb       string
	prioritizeVerb   string
	bindVerb         string
	weight           int64
	nodeCacheCapable bool
	managedResources sets.Set[string]
	ignorable        bool
	client           *http.Client
}

// New builds an extender from its configuration.
func New(c configv1.Extender) (*HTTPExtender, error) {
	timeout := c.HTTPTimeout.Duration
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if c.EnableHTTPS {
		tlsConfig, err := makeTLSConfig(c.TLSConfig)
		if err != nil {
			return nil, fmt.Errorf("extender %s: %w", c.URLPrefix, err)
		}
		transport.TLSClientConfig = tlsConfig
	}
	managed := sets.New[string]()
	for _, r := range c.ManagedResources {
		managed.Insert(r.Name)
	}
	return &HTTPExtender{
		urlPrefix:        strings.TrimRight(c.URLPrefix, "/"),
		filterVerb:       c.FilterVerb,
		prioritizeVerb:   c.PrioritizeVerb,
		bindVerb:         c.BindVerb,
		weight:           c.Weight,
		nodeCacheCapable: c.NodeCacheCapable,
		managedResources: managed,
		ignorable:        c.Ignorable,
		client:           &http.Client{Transport: transport, Timeout: timeout},
	}, nil
}

func makeTLSConfig(c *configv1.ExtenderTLSConfig) (*tls.Config, error) {
	if c == nil {
		return &tls.Config{}, nil
	}
	cfg := &tls.Config{InsecureSkipVerify: c.Insecure, ServerName: c.ServerName} //nolint:gosec // the user's explicit choice
	caData := c.CAData
	if c.CAFile != "" {
		data, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, err
		}
		caData = data
	}
	if len(caData) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caData) {
			return nil, fmt.Errorf("no certificates in the CA data")
		}
		cfg.RootCAs = pool
	}
	certData, keyData := c.CertData, c.KeyData
	if c.CertFile != "" {
		var err error
		if certData, err = os.ReadFile(c.CertFile); err != nil {
			return nil, err
		}
		if keyData, err = os.ReadFile(c.KeyFile); err != nil {
			return nil, err
		}
	}
	if len(certData) > 0 {
		cert, err := tls.X509KeyPair(certData, keyData)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// Name identifies the extender in messages.
func (e *HTTPExtender) Name() string { return e.urlPrefix }

// IsIgnorable reports whether a failure of the extender may be ignored.
func (e *HTTPExtender) IsIgnorable() bool { return e.ignorable }

// IsFilter, IsPrioritizer and IsBinder say which verbs the extender has.
func (e *HTTPExtender) IsFilter() bool      { return e.filterVerb != "" }
func (e *HTTPExtender) IsPrioritizer() bool { return e.prioritizeVerb != "" }
func (e *HTTPExtender) IsBinder() bool      { return e.bindVerb != "" }

// Weight is the multiplier of the extender's priorities.
func (e *HTTPExtender) Weight() int64 { return e.weight }

// IsInterested reports whether the extender cares about pod: always, unless it manages
// resources, in which case only pods asking for one of them.
func (e *HTTPExtender) IsInterested(pod *v1.Pod) bool {
	if e.managedResources.Len() == 0 {
		return true
	}
	for _, cs := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range cs {
			for name := range c.Resources.Requests {
				if e.managedResources.Has(string(name)) {
					return true
				}
			}
			for name := range c.Resources.Limits {
				if e.managedResources.Has(string(name)) {
					return true
				}
			}
		}
	}
	return false
}

// Filter asks the extender which of nodes fit pod. It returns the nodes that do, and the
// reasons for those that don't (failed: preemption may help; unresolvable: it won't).
func (e *HTTPExtender) Filter(ctx context.Context, pod *v1.Pod, nodes []*framework.NodeInfo) (fit []*framework.NodeInfo, failed, unresolvable map[string]string, err error) {
	defer panics.Recover(ctx, framework.PanicComponent, func(p error) { fit, failed, unresolvable, err = nil, nil, nil, e.panicked(p) })
	if !e.IsFilter() {
		return nodes, nil, nil, nil
	}
	args := e.args(pod, nodes)
	var result extenderv1.ExtenderFilterResult
	if err := e.send(ctx, e.filterVerb, args, &result); err != nil {
		return nil, nil, nil, err
	}
	if result.Error != "" {
		return nil, nil, nil, fmt.Errorf("extender %s: %s", e.urlPrefix, result.Error)
	}
	byName := make(map[string]*framework.NodeInfo, len(nodes))
	for _, n := range nodes {
		byName[n.Node().Name] = n
	}
	var names []string
	switch {
	case e.nodeCacheCapable && result.NodeNames != nil:
		names = *result.NodeNames
	case result.Nodes != nil:
		for i := range result.Nodes.Items {
			names = append(names, result.Nodes.Items[i].Name)
		}
	}
	for _, name := range names {
		n, ok := byName[name]
		if !ok {
			return nil, nil, nil, fmt.Errorf("extender %q claims a filtered node %q which is not found in the input node list", e.urlPrefix, name)
		}
		fit = append(fit, n)
	}
	return fit, result.FailedNodes, result.FailedAndUnresolvableNodes, nil
}

// Prioritize asks the extender to score nodes (0..10 each, before the weight).
func (e *HTTPExtender) Prioritize(ctx context.Context, pod *v1.Pod, nodes []*framework.NodeInfo) (_ extenderv1.HostPriorityList, err error) {
	defer panics.Recover(ctx, framework.PanicComponent, func(p error) { err = e.panicked(p) })
	if !e.IsPrioritizer() {
		return nil, nil
	}
	var result extenderv1.HostPriorityList
	if err := e.send(ctx, e.prioritizeVerb, e.args(pod, nodes), &result); err != nil {
		return nil, err
	}
	return result, nil
}

// Bind asks the extender to bind pod to node.
func (e *HTTPExtender) Bind(ctx context.Context, pod *v1.Pod, node string) (err error) {
	defer panics.Recover(ctx, framework.PanicComponent, func(p error) { err = e.panicked(p) })
	if !e.IsBinder() {
		return fmt.Errorf("extender %s does not bind", e.urlPrefix)
	}
	args := &extenderv1.ExtenderBindingArgs{PodName: pod.Name, PodNamespace: pod.Namespace, PodUID: pod.UID, Node: node}
	var result extenderv1.ExtenderBindingResult
	if err := e.send(ctx, e.bindVerb, args, &result); err != nil {
		return err
	}
	if result.Error != "" {
		return fmt.Errorf("extender %s: %s", e.urlPrefix, result.Error)
	}
	return nil
}

// panicked is the error of a call that panicked (in decoding what the extender sent, say):
// the scheduler handles it as any failure of the extender, instead of ending the process.
func (e *HTTPExtender) panicked(err error) error {
	return fmt.Errorf("panic in extender %s: %w", e.urlPrefix, err)
}

// args sends node names to a node-cache-capable extender, whole nodes otherwise.
func (e *HTTPExtender) args(pod *v1.Pod, nodes []*framework.NodeInfo) *extenderv1.ExtenderArgs {
	args := &extenderv1.ExtenderArgs{Pod: pod}
	if e.nodeCacheCapable {
		names := make([]string, 0, len(nodes))
		for _, n := range nodes {
			names = append(names, n.Node().Name)
		}
		args.NodeNames = &names
		return args
	}
	list := &v1.NodeList{Items: make([]v1.Node, 0, len(nodes))}
	for _, n := range nodes {
		list.Items = append(list.Items, *n.Node())
	}
	args.Nodes = list
	return args
}

func (e *HTTPExtender) send(ctx context.Context, verb string, args, result interface{}) error {
	body, err := json.Marshal(args)
	if err != nil {
		return err
	}
	url := e.urlPrefix + "/" + verb
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("extender %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("failed %v with extender at URL %v, code %v", verb, url, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(result); err != nil {
		return fmt.Errorf("extender %s: decoding the answer: %w", url, err)
	}
	return nil
}
