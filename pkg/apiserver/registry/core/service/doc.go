// Package service is the API server's registry for core/v1 Services and their
// status subresource. In a write's flow (decode → default → validate → admit →
// store) it owns the default and validate steps, with allocation in between:
//
//   - SetDefaults fills in what Kubernetes' v1 defaulter fills in as a Service
//     is decoded (session affinity, type, port protocol and targetPort,
//     traffic policies, allocateLoadBalancerNodePorts, ingress ipMode). It is
//     also run on objects read back from storage, so it is idempotent.
//   - Before validation the registry allocates: it syncs clusterIP with
//     clusterIPs, defaults ipFamilyPolicy and ipFamilies, and assigns cluster
//     IPs, node ports and the health-check node port from the service ranges
//     (storage.go and the alloc files; ipallocator and portallocator below).
//     ValidateServiceClusterIPsRelatedFields is shared with that code.
//   - ValidateService, ValidateServiceUpdate and ValidateServiceStatusUpdate
//     reproduce Kubernetes v1.37's pkg/apis/core/validation rules for
//     Services, with the same field paths, error types and wording, for the
//     feature gates on by default in v1.37. Warnings and StatusWarnings are the
//     warnings such writes return.
//
// For reads, NewTableConvertor gives the `kubectl get services` columns and
// Fields the fields a list can be selected by. The strategy (strategy.go)
// ties these together.
package service
