// Package endpoints is the registry of core/v1 Endpoints: their defaults and validation,
// their strategy, table and storage.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the default
// and validate steps for /api/v1/namespaces/{ns}/endpoints. The endpoints controller
// (pkg/controllers/endpoints) writes those of Services with selectors, already repacked;
// users write the others, and the EndpointSlice mirroring controller copies them into
// EndpointSlices. The strategy changes nothing it stores, as upstream's.
//
// The warning every request for the resource gets ("v1 Endpoints is deprecated in v1.33+;
// use discovery.k8s.io/v1 EndpointSlice") is not made here: the generic API installer adds it
// to every route because the k8s.io/api type declares its deprecation (APILifecycleDeprecated
// and APILifecycleReplacement), as on upstream.
package endpoints
