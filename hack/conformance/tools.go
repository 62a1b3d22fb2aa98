//go:build tools

// Package conformance builds the upstream test tools hack/conformance.sh runs
// berth against: e2e.test, ginkgo, kube-apiserver, etcd and agnhost, all at
// the Kubernetes release berth's APIs come from, and the aggregator conformance
// test's sample-apiserver (k8s.io/sample-apiserver, that release's staging module).
// It is its own module so that nothing of k8s.io/kubernetes is ever linked into
// berth.
package conformance

import (
	_ "github.com/onsi/ginkgo/v2/ginkgo"
	_ "go.etcd.io/etcd/server/v3/etcdmain"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/test/e2e"
	_ "k8s.io/kubernetes/test/images/agnhost"
	_ "k8s.io/sample-apiserver"
)
