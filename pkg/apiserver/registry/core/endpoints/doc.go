// Package endpoints is the registry of core/v1 Endpoints: their defaults and validation,
// their strategy, table and storage.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the default
// and validate steps for /api/v1/namespaces/{ns}/endpoints. The endpoints controller
// (pkg/controllers/endpoints) writes those of Services with selectors; users write the others,
// and the EndpointSlice mirroring controller copies them into EndpointSlices.
package endpoints
