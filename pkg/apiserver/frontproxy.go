package apiserver

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/util/panics"
)

// FrontProxyConfig is how the API server trusts a front proxy and is one itself, as
// kube-apiserver's --requestheader-* and --proxy-client-* flags say.
//
// A front proxy (the aggregator of another API server, an authenticating proxy) connects
// with a client certificate from RequestHeaderClientCAFile whose common name is one of
// RequestHeaderAllowedNames, and says who the request is for in the headers: the user in
// the first of RequestHeaderUsernameHeaders that is set, the groups in all of
// RequestHeaderGroupHeaders, the extra fields in headers with one of
// RequestHeaderExtraHeaderPrefixes. The aggregator is one towards the aggregated API
// servers: it proxies to them with ProxyClientCertFile and ProxyClientKeyFile, and they
// learn what to trust from kube-system/extension-apiserver-authentication, which the API
// server publishes (publishAuthenticationInfo).
type FrontProxyConfig struct {
	// RequestHeaderClientCAFile holds the CAs of front proxies' client certificates; empty
	// turns request-header authentication off.
	RequestHeaderClientCAFile string
	// RequestHeaderAllowedNames are the common names a front proxy's certificate may have;
	// empty allows any certificate of RequestHeaderClientCAFile.
	RequestHeaderAllowedNames []string
	// The headers of the user's name, groups and extra fields (X-Remote-User,
	// X-Remote-Group and X-Remote-Extra- as kubeadm sets them).
	RequestHeaderUsernameHeaders, RequestHeaderGroupHeaders, RequestHeaderExtraHeaderPrefixes []string
	// ProxyClientCertFile and ProxyClientKeyFile are the client certificate the aggregator
	// presents to aggregated API servers (none when empty).
	ProxyClientCertFile, ProxyClientKeyFile string
}

// requestHeaderConfig is the request-header authenticator's configuration, as
// genericoptions.RequestHeaderAuthenticationOptions makes it; nil when there is no CA.
func (c FrontProxyConfig) requestHeaderConfig() (*authenticatorfactory.RequestHeaderConfig, error) {
	if c.RequestHeaderClientCAFile == "" {
		return nil, nil
	}
	ca, err := dynamiccertificates.NewDynamicCAContentFromFile("request-header", c.RequestHeaderClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("request-header client CA: %w", err)
	}
	return &authenticatorfactory.RequestHeaderConfig{
		UsernameHeaders: headerrequest.StaticStringSlice(c.RequestHeaderUsernameHeaders),
		// No --requestheader-uid-headers (kubeadm sets none); the filters read it all the same.
		UIDHeaders:          headerrequest.StaticStringSlice(nil),
		GroupHeaders:        headerrequest.StaticStringSlice(c.RequestHeaderGroupHeaders),
		ExtraHeaderPrefixes: headerrequest.StaticStringSlice(c.RequestHeaderExtraHeaderPrefixes),
		CAContentProvider:   ca,
		AllowedClientNames:  headerrequest.StaticStringSlice(c.RequestHeaderAllowedNames),
	}, nil
}

// The ConfigMap in which kube-apiserver tells the servers behind it (aggregated API servers,
// which genericoptions.DelegatingAuthenticationOptions configures from it) how it
// authenticates: the CA of its clients' certificates, and how to trust it as a front proxy.
const (
	authenticationInfoNamespace = metav1.NamespaceSystem
	authenticationInfoName      = "extension-apiserver-authentication"
	// authenticationInfoHook is kube-apiserver's name of the hook that keeps it.
	authenticationInfoHook = "start-cluster-authentication-info-controller"
)

// authenticationInfo is what this API server puts in the ConfigMap.
type authenticationInfo struct {
	clientCA      dynamiccertificates.CAContentProvider
	requestHeader *authenticatorfactory.RequestHeaderConfig // nil: no front proxy
}

// publishAuthenticationInfo is the post-start hook that keeps the ConfigMap up to date, as
// kube-apiserver's cluster-authentication-trust controller does: at start, when a CA file
// changes, and every minute (to put back a ConfigMap someone deleted).
func publishAuthenticationInfo(info authenticationInfo, bg *background) genericapiserver.PostStartHookFunc {
	return func(ctx genericapiserver.PostStartHookContext) error {
		client, err := kubernetes.NewForConfig(ctx.LoopbackClientConfig)
		if err != nil {
			return fmt.Errorf("%s: %w", authenticationInfoHook, err)
		}
		changed := make(chan struct{}, 1)
		listener := enqueueFunc(func() {
			select {
			case changed <- struct{}{}:
			default:
			}
		})
		info.clientCA.AddListener(listener)
		if info.requestHeader != nil {
			info.requestHeader.CAContentProvider.AddListener(listener)
		}
		bg.Go(ctx, authenticationInfoHook, func() {
			tick := time.NewTicker(time.Minute)
			defer tick.Stop()
			for {
				// Retried quickly at start: the API may not serve ConfigMaps yet. A pass
				// that panics (an odd ConfigMap) is that pass's error, retried.
				_ = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
					if err := panics.Call(ctx, authenticationInfoHook, func() error { return info.sync(ctx, client) }); err != nil {
						klog.ErrorS(err, "Publishing the authentication info", "configmap", authenticationInfoNamespace+"/"+authenticationInfoName)
						return false, nil
					}
					return true, nil
				})
				select {
				case <-ctx.Done():
					return
				case <-changed:
				case <-tick.C:
				}
			}
		})
		return nil
	}
}

type enqueueFunc func()

func (f enqueueFunc) Enqueue() { f() }

// sync writes the ConfigMap if it lacks what this API server publishes.
func (info authenticationInfo) sync(ctx context.Context, client kubernetes.Interface) error {
	cms := client.CoreV1().ConfigMaps(authenticationInfoNamespace)
	cm, err := cms.Get(ctx, authenticationInfoName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cm, err = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: authenticationInfoNamespace, Name: authenticationInfoName}}, nil
	}
	if err != nil {
		return err
	}
	data, err := info.merge(cm.Data, time.Now())
	if err != nil {
		return err
	}
	if cm.ResourceVersion != "" && equalData(cm.Data, data) {
		return nil
	}
	cm = cm.DeepCopy()
	cm.Data = data
	if cm.ResourceVersion != "" {
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	}
	if _, err := client.CoreV1().Namespaces().Get(ctx, authenticationInfoNamespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: authenticationInfoNamespace}}
		if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
	return err
}

func equalData(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || v != w {
			return false
		}
	}
	return true
}

// merge is the ConfigMap's data: what is already there (the API servers of one cluster
// share the ConfigMap), with this server's CAs and values added, as kube-apiserver merges
// them. Bundles keep each certificate once and drop those expired; lists keep each value
// once, in order. The requestheader-* keys are there only when some server has a
// request-header CA. The lists are JSON arrays.
func (info authenticationInfo) merge(existing map[string]string, now time.Time) (map[string]string, error) {
	data := map[string]string{}
	clientCA, err := mergeBundles(now, []byte(existing["client-ca-file"]), info.clientCA.CurrentCABundleContent())
	if err != nil {
		return nil, fmt.Errorf("client-ca-file: %w", err)
	}
	if len(clientCA) > 0 {
		data["client-ca-file"] = string(clientCA)
	}
	var ours []byte
	if info.requestHeader != nil {
		ours = info.requestHeader.CAContentProvider.CurrentCABundleContent()
	}
	requestHeaderCA, err := mergeBundles(now, []byte(existing["requestheader-client-ca-file"]), ours)
	if err != nil {
		return nil, fmt.Errorf("requestheader-client-ca-file: %w", err)
	}
	if len(requestHeaderCA) == 0 {
		return data, nil
	}
	data["requestheader-client-ca-file"] = string(requestHeaderCA)
	lists := []struct {
		key  string
		ours headerrequest.StringSliceProvider
	}{
		{"requestheader-username-headers", nil},
		{"requestheader-group-headers", nil},
		{"requestheader-extra-headers-prefix", nil},
		{"requestheader-allowed-names", nil},
	}
	if rh := info.requestHeader; rh != nil {
		lists[0].ours, lists[1].ours, lists[2].ours, lists[3].ours = rh.UsernameHeaders, rh.GroupHeaders, rh.ExtraHeaderPrefixes, rh.AllowedClientNames
	}
	for _, l := range lists {
		merged := []string{}
		if s := existing[l.key]; s != "" {
			if err := json.Unmarshal([]byte(s), &merged); err != nil {
				return nil, fmt.Errorf("%s: %w", l.key, err)
			}
		}
		if l.ours != nil {
			merged = append(merged, l.ours.Value()...)
		}
		merged = uniqueInOrder(merged)
		b, err := json.Marshal(merged)
		if err != nil {
			return nil, err
		}
		data[l.key] = string(b)
	}
	return data, nil
}

func uniqueInOrder(s []string) []string {
	out := make([]string, 0, len(s))
	for _, v := range s {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// mergeBundles is the PEM bundle of the certificates of bundles, each once, without those
// that expired more than five minutes before now (kube-apiserver's margin).
func mergeBundles(now time.Time, bundles ...[]byte) ([]byte, error) {
	var certs []*x509.Certificate
	for _, b := range bundles {
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		parsed, err := cert.ParseCertsPEM(b)
		if err != nil {
			return nil, err
		}
		for _, c := range parsed {
			if c.NotAfter.Before(now.Add(-5*time.Minute)) || slices.ContainsFunc(certs, func(o *x509.Certificate) bool { return o.Equal(c) }) {
				continue
			}
			certs = append(certs, c)
		}
	}
	if len(certs) == 0 {
		return nil, nil
	}
	return cert.EncodeCertificates(certs...)
}
