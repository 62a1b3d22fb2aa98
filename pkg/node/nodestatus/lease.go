package nodestatus

import (
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/apimachinery/lease"
)

// newLeaseController returns the node's heartbeat (seed 000's nodeLeaseController): the Lease
// named after the node in kube-node-lease, held by the node, created when missing and renewed
// every LeaseRenewInterval with retries. The node lifecycle controller reads its renewTime.
func (c *Controller) newLeaseController() lease.Controller {
	return lease.NewController(c.clock, c.client, c.cfg.NodeName, int32(c.cfg.LeaseDuration.Seconds()),
		nil, c.cfg.LeaseRenewInterval, c.cfg.NodeName, v1.NamespaceNodeLease, c.setLeaseOwner)
}

// setLeaseOwner makes the Node own its Lease, so that deleting the Node deletes the Lease. Until
// the Node is known the Lease is not written.
func (c *Controller) setLeaseOwner(l *coordinationv1.Lease) error {
	if len(l.OwnerReferences) > 0 {
		return nil
	}
	node, err := c.GetNode()
	if err != nil {
		return fmt.Errorf("setting the owner of the node lease: %w", err)
	}
	l.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: v1.SchemeGroupVersion.Version,
		Kind:       "Node",
		Name:       node.Name,
		UID:        node.UID,
	}}
	return nil
}
