// Package namespace is the registry of namespaces: their defaults and validation, their
// strategy and storage.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the
// default and validate steps for /api/v1/namespaces and its status and finalize
// subresources. It also holds the core API's rule for finalizer names, which every core
// resource applies to metadata.finalizers.
package namespace
