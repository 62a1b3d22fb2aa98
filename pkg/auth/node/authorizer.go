// Package node is the node authorizer: it answers "may this node agent do this?" for a user
// system:node:<name> in group system:nodes, as kube-apiserver's --authorization-mode=Node does.
// A node reaches the secrets, configmaps, service-account tokens, claims and volumes only of
// the pods bound to it (the graph, kept from the API server's informers), its own Node and
// Lease, pods through a spec.nodeName=<own> field selector; everything else it may do is the
// fixed node rules (system:node's, from the bootstrap policy). NodeRestriction admission
// checks the objects of the writes this lets through.
package node

import (
	"context"
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/auth/rbac"
)

// NodeLeaseNamespace holds the nodes' heartbeat Leases.
const NodeLeaseNamespace = "kube-node-lease"

const nodeUserPrefix = "system:node:"

// NodeIdentity returns the node a user is: one named system:node:<name> in group system:nodes.
// isNode is false for everyone else; name may be empty for a node user without a name.
func NodeIdentity(u user.Info) (name string, isNode bool) {
	if u == nil || !strings.HasPrefix(u.GetName(), nodeUserPrefix) {
		return "", false
	}
	for _, g := range u.GetGroups() {
		if g == user.NodesGroup {
			return strings.TrimPrefix(u.GetName(), nodeUserPrefix), true
		}
	}
	return "", false
}

// Authorizer is the node authorizer.
type Authorizer struct {
	graph *Graph
	rules []rbacv1.PolicyRule
}

var (
	_ authorizer.Authorizer   = &Authorizer{}
	_ authorizer.RuleResolver = &Authorizer{}
)

// NewAuthorizer returns a node authorizer over graph that allows nodes, beyond what the graph
// relates to them, what rules allow (bootstrappolicy.NodeRules()).
func NewAuthorizer(graph *Graph, rules []rbacv1.PolicyRule) *Authorizer {
	return &Authorizer{graph: graph, rules: rules}
}

var (
	secrets                = schema.GroupResource{Resource: "secrets"}
	configMaps             = schema.GroupResource{Resource: "configmaps"}
	pods                   = schema.GroupResource{Resource: "pods"}
	nodes                  = schema.GroupResource{Resource: "nodes"}
	pvcs                   = schema.GroupResource{Resource: "persistentvolumeclaims"}
	pvs                    = schema.GroupResource{Resource: "persistentvolumes"}
	serviceAccounts        = schema.GroupResource{Resource: "serviceaccounts"}
	resourceClaims         = schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceclaims"}
	resourceSlices         = schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceslices"}
	volumeAttachments      = schema.GroupResource{Group: "storage.k8s.io", Resource: "volumeattachments"}
	csiNodes               = schema.GroupResource{Group: "storage.k8s.io", Resource: "csinodes"}
	leases                 = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	podCertificateRequests = schema.GroupResource{Group: "certificates.k8s.io", Resource: "podcertificaterequests"}
)

func allow() (authorizer.Decision, string, error) { return authorizer.DecisionAllow, "", nil }

// noOpinion is how the node authorizer refuses: it never denies outright, so that a later
// authorizer (RBAC) may still allow what a node's own relations do not; the reason reaches
// the 403's message.
func noOpinion(node string, a authorizer.Attributes, reason string) (authorizer.Decision, string, error) {
	klog.V(2).InfoS("NODE DENY", "node", node, "verb", a.GetVerb(), "resource", a.GetResource(),
		"subresource", a.GetSubresource(), "namespace", a.GetNamespace(), "name", a.GetName(), "reason", reason)
	return authorizer.DecisionNoOpinion, reason, nil
}

// ConditionsAwareAuthorize is Authorize: the node authorizer's answers have no conditions.
func (r *Authorizer) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(r.Authorize(ctx, a))
}

// EvaluateConditions is never called: Authorize returns no conditions.
func (*Authorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// Authorize answers for node users and has no opinion on anyone else.
func (r *Authorizer) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	node, isNode := NodeIdentity(a.GetUser())
	if !isNode {
		return authorizer.DecisionNoOpinion, "", nil
	}
	if node == "" {
		return noOpinion(node, a, fmt.Sprintf("unknown node for user %q", a.GetUser().GetName()))
	}
	if a.IsResourceRequest() {
		switch (schema.GroupResource{Group: a.GetAPIGroup(), Resource: a.GetResource()}) {
		case secrets:
			return r.readNamespaced(node, secretKind, a)
		case configMaps:
			return r.readNamespaced(node, configMapKind, a)
		case pvcs:
			if a.GetSubresource() == "status" {
				return r.statusUpdate(node, pvcKind, a)
			}
			return r.get(node, pvcKind, a)
		case pvs:
			return r.get(node, pvKind, a)
		case resourceClaims:
			return r.get(node, resourceClaimKind, a)
		case volumeAttachments:
			return r.get(node, volumeAttachmentKind, a)
		case serviceAccounts:
			return r.serviceAccount(node, a)
		case leases:
			return r.lease(node, a)
		case csiNodes:
			return r.csiNode(node, a)
		case resourceSlices:
			return r.resourceSlice(node, a)
		case nodes:
			return r.node(node, a)
		case pods:
			return r.pod(node, a)
		case podCertificateRequests:
			return r.podCertificateRequest(node, a)
		}
	}
	if rbac.RulesAllow(a, r.rules...) {
		return allow()
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// RulesFor says that a node's permissions cannot be listed (they depend on its pods), as
// upstream's does; for anyone else it has no rules.
func (r *Authorizer) RulesFor(_ context.Context, u user.Info, _ string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	if _, isNode := NodeIdentity(u); isNode {
		return nil, nil, true, fmt.Errorf("node authorizer does not support user rule resolution")
	}
	return nil, nil, false, nil
}

// related allows a named object the graph leads from to node.
func (r *Authorizer) related(node string, kind objectKind, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetName() == "" {
		return noOpinion(node, a, "No Object name found")
	}
	if !r.graph.hasPathFrom(node, objectKey{kind: kind, namespace: a.GetNamespace(), name: a.GetName()}) {
		return noOpinion(node, a, fmt.Sprintf("no relationship found between node '%s' and this object", node))
	}
	return allow()
}

func (r *Authorizer) statusUpdate(node string, kind objectKind, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if v := a.GetVerb(); v != "update" && v != "patch" {
		return noOpinion(node, a, "can only get/update/patch this type")
	}
	return r.related(node, kind, a)
}

func (r *Authorizer) get(node string, kind objectKind, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetVerb() != "get" {
		return noOpinion(node, a, "can only get individual resources of this type")
	}
	if a.GetSubresource() != "" {
		return noOpinion(node, a, "cannot get subresource")
	}
	return r.related(node, kind, a)
}

// readNamespaced allows get, list and watch of single related objects (a list or watch with
// metadata.name=<name>, which is how the node agent watches one secret).
func (r *Authorizer) readNamespaced(node string, kind objectKind, a authorizer.Attributes) (authorizer.Decision, string, error) {
	switch a.GetVerb() {
	case "get", "list", "watch":
	default:
		return noOpinion(node, a, "can only read resources of this type")
	}
	if a.GetSubresource() != "" {
		return noOpinion(node, a, "cannot read subresource")
	}
	if a.GetNamespace() == "" {
		return noOpinion(node, a, "can only read namespaced object of this type")
	}
	return r.related(node, kind, a)
}

// serviceAccount allows reading the service accounts of the node's pods, and creating tokens
// for them (NodeRestriction then checks each token is bound to a pod on the node).
func (r *Authorizer) serviceAccount(node string, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetVerb() == "get" && a.GetSubresource() == "" {
		return r.readNamespaced(node, serviceAccountKind, a)
	}
	if a.GetVerb() != "create" || a.GetName() == "" {
		return noOpinion(node, a, "can only create tokens for individual service accounts")
	}
	if a.GetSubresource() != "token" {
		return noOpinion(node, a, "can only create token subresource of serviceaccount")
	}
	return r.related(node, serviceAccountKind, a)
}

// lease allows the node its own heartbeat Lease (on create the name is not known yet:
// NodeRestriction checks it).
func (r *Authorizer) lease(node string, a authorizer.Attributes) (authorizer.Decision, string, error) {
	switch a.GetVerb() {
	case "get", "create", "update", "patch", "delete":
	default:
		return noOpinion(node, a, "can only get, create, update, patch, or delete a node lease")
	}
	if a.GetNamespace() != NodeLeaseNamespace {
		return noOpinion(node, a, fmt.Sprintf("can only access leases in the %q system namespace", NodeLeaseNamespace))
	}
	if a.GetVerb() != "create" && a.GetName() != node {
		return noOpinion(node, a, "can only access node lease with the same name as the requesting node")
	}
	return allow()
}

func (r *Authorizer) csiNode(node string, a authorizer.Attributes) (authorizer.Decision, string, error) {
	switch a.GetSubresource() {
	case "":
		switch a.GetVerb() {
		case "get", "create", "update", "patch", "delete":
		default:
			return noOpinion(node, a, "can only get, create, update, patch, or delete a CSINode")
		}
	case "status":
		// Only with the CSIVolumeHealth feature, off by default.
		return noOpinion(node, a, "CSINode status access requires CSIVolumeHealth feature")
	default:
		return noOpinion(node, a, "cannot authorize CSINode subresources")
	}
	if a.GetVerb() != "create" && a.GetName() != node {
		return noOpinion(node, a, "can only access CSINode with the same name as the requesting node")
	}
	return allow()
}

// hasFieldSelector reports whether a list or watch is scoped to field=value.
func hasFieldSelector(a authorizer.Attributes, field, value string) bool {
	reqs, _ := a.GetFieldSelector()
	for _, req := range reqs {
		if req.Field == field && req.Operator == selection.Equals && req.Value == value {
			return true
		}
	}
	return false
}

func (r *Authorizer) resourceSlice(node string, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetSubresource() != "" {
		return noOpinion(node, a, "cannot authorize ResourceSlice subresources")
	}
	switch a.GetVerb() {
	case "create":
		return allow() // NodeRestriction checks spec.nodeName.
	case "get", "update", "patch", "delete":
		return r.related(node, resourceSliceKind, a)
	case "watch", "list", "deletecollection":
		if hasFieldSelector(a, "spec.nodeName", node) {
			return allow()
		}
		return noOpinion(node, a, "can only list/watch/deletecollection resourceslices with nodeName field selector")
	}
	return noOpinion(node, a, "only the following verbs are allowed for a ResourceSlice: get, watch, list, create, update, patch, delete, deletecollection")
}

func (r *Authorizer) podCertificateRequest(node string, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetSubresource() != "" {
		return authorizer.DecisionNoOpinion, "nodes may not access the status subresource of PodCertificateRequests", nil
	}
	switch a.GetVerb() {
	case "create":
		return allow() // NodeRestriction checks the request.
	case "get":
		return r.related(node, podCertificateRequestKind, a)
	case "list", "watch":
		if hasFieldSelector(a, "spec.nodeName", node) {
			return allow()
		}
		return noOpinion(node, a, "can only list/watch podcertificaterequests with nodeName field selector")
	}
	return noOpinion(node, a, fmt.Sprintf("nodes may not %s podcertificaterequests", a.GetVerb()))
}

// node allows a node to read its own Node by name (before it exists, too) and to write Nodes,
// which NodeRestriction limits to its own.
func (r *Authorizer) node(node string, a authorizer.Attributes) (authorizer.Decision, string, error) {
	switch a.GetSubresource() {
	case "":
		switch a.GetVerb() {
		case "create", "update", "patch":
			return allow()
		case "get", "list", "watch":
			switch a.GetName() {
			case node:
				return allow()
			case "":
				return noOpinion(node, a, fmt.Sprintf("node '%s' cannot read all nodes, only its own Node object", node))
			default:
				return noOpinion(node, a, fmt.Sprintf("node '%s' cannot read '%s', only its own Node object", node, a.GetName()))
			}
		}
	case "status":
		switch a.GetVerb() {
		case "update", "patch":
			return allow()
		}
	}
	return noOpinion(node, a, "")
}

// pod allows reading the node's pods (a list or watch only with spec.nodeName=<own>), writing
// their status, evicting them and creating and deleting mirror pods; NodeRestriction checks
// that the pods written are the node's.
func (r *Authorizer) pod(node string, a authorizer.Attributes) (authorizer.Decision, string, error) {
	switch a.GetSubresource() {
	case "":
		switch a.GetVerb() {
		case "get":
			return r.get(node, podKind, a)
		case "list", "watch":
			if hasFieldSelector(a, "spec.nodeName", node) {
				return allow()
			}
			if a.GetName() != "" {
				return r.related(node, podKind, a)
			}
			return noOpinion(node, a, "can only list/watch pods with spec.nodeName field selector")
		case "create", "delete":
			return allow()
		}
	case "status":
		switch a.GetVerb() {
		case "update", "patch":
			return allow()
		}
	case "eviction":
		if a.GetVerb() == "create" {
			return allow()
		}
	}
	return noOpinion(node, a, "")
}
