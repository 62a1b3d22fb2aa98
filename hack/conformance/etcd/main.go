// Command etcd is upstream etcd, at the version k8s.io/kubernetes v1.37.2 is tested with,
// for hack/conformance.sh's upstream control plane.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
