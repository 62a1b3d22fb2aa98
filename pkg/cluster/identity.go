package cluster

import (
	"fmt"
	"strings"

	"k8s.io/client-go/rest"

	"github.com/berth-cluster/berth/pkg/cluster/pki"
)

// Identity is who a component is to the API server: the user and groups of the client
// certificate it presents (common name and organizations).
type Identity struct {
	User   string
	Groups []string
}

// The identities of berth's own parts, as kube-apiserver's bootstrap policy knows them: its
// roles and bindings name these users and groups.
var (
	// AdminIdentity is the cluster admin of the admin kubeconfig.
	AdminIdentity = Identity{User: "admin", Groups: []string{"system:masters"}}
	// SchedulerIdentity is the scheduler's (system:kube-scheduler's bindings).
	SchedulerIdentity = Identity{User: "system:kube-scheduler"}
	// ControllerManagerIdentity is the controllers' (system:kube-controller-manager's).
	ControllerManagerIdentity = Identity{User: "system:kube-controller-manager"}
	// ServiceProxyIdentity is the service proxy's: kubeadm's kube-proxy user, which the
	// bootstrap policy binds to system:node-proxier (list and watch Services, EndpointSlices
	// and Nodes; write Events), and nothing more.
	ServiceProxyIdentity = Identity{User: "system:kube-proxy"}
)

// ServiceProxyTable is the nftables table of the service proxy of the node whose pod bridge
// is bridge: two berth ups on one machine (two bridges) keep their rules apart, and
// `berth down --cleanup` finds the table from the bridge it removes.
func ServiceProxyTable(bridge string) string {
	if bridge == "" || bridge == "berth0" {
		return "berth-proxy"
	}
	return "berth-proxy-" + bridge
}

// NodeIdentity is a node agent's: user system:node:<name> in group system:nodes, which the
// node authorizer and NodeRestriction admission limit to that node's own objects.
func NodeIdentity(nodeName string) Identity {
	return Identity{User: "system:node:" + nodeName, Groups: []string{"system:nodes"}}
}

// certName is the name of the identity's certificate files in the PKI dir: "client-" and the
// user, with every character a file name should not hold made a '-' (system:node:a →
// client-system-node-a).
func (id Identity) certName() string {
	return "client-" + strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '-'
	}, id.User)
}

// identityConfig returns admin with the client certificate of id instead of the admin's,
// issuing the certificate from ca into pkiDir (once: one that still fits is reused).
func identityConfig(admin *rest.Config, pkiDir string, ca *pki.CA, id Identity) (*rest.Config, error) {
	if id.User == "" {
		return nil, fmt.Errorf("an identity without a user")
	}
	certFile, keyFile, err := pki.EnsureClient(pkiDir, id.certName(), ca, id.User, id.Groups)
	if err != nil {
		return nil, fmt.Errorf("client certificate of %s: %w", id.User, err)
	}
	config := rest.CopyConfig(admin)
	config.CertData, config.KeyData = nil, nil
	config.CertFile, config.KeyFile = certFile, keyFile
	return config, nil
}
