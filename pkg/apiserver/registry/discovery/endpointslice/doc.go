// Package endpointslice is the registry of discovery.k8s.io/v1 EndpointSlices: their
// defaults and validation, their strategy, table and storage.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the default
// and validate steps for /apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices, and the
// normalization before them: a slice's generation counts changes of anything but its
// metadata (labels aside), and deprecatedTopology, which v1 ignores on write, is dropped.
// The EndpointSlice controllers write most slices; the service proxy and the cluster DNS
// read them.
package endpointslice
