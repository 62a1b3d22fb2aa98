package apiserver

import (
	"k8s.io/apiserver/pkg/storage/storagebackend"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/componentstatus"
)

// newComponentStatuses returns the componentstatuses endpoint: the scheduler, the controller
// manager and etcd-0, which it reaches as the storage does (applyStorage's client settings).
func newComponentStatuses(c Config) *componentstatus.REST {
	prefix := c.EtcdPrefix
	if prefix == "" {
		prefix = "/registry"
	}
	etcd := storagebackend.NewDefaultConfig(prefix, nil)
	etcd.Transport.ServerList = c.EtcdServers
	etcd.Transport.TrustedCAFile = c.EtcdCAFile
	etcd.Transport.CertFile = c.EtcdCertFile
	etcd.Transport.KeyFile = c.EtcdKeyFile
	return componentstatus.NewREST(componentstatus.DefaultComponents(*etcd))
}
