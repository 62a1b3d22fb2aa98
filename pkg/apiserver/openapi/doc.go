// Package openapi holds the OpenAPI definitions of the API types berth serves, generated from
// k8s.io/api by hack/update-openapi.sh. The API server publishes them at /openapi/v2 and
// /openapi/v3 and builds its server-side-apply type converter from them.
package openapi

//go:generate ../../../hack/update-openapi.sh
