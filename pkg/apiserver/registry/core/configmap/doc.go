// Package configmap is the registry of config maps: their defaults and validation, their
// strategy and storage.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the
// default and validate steps for /api/v1/namespaces/{ns}/configmaps.
package configmap
