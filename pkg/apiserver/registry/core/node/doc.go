// Package node is the registry of nodes: their defaults and validation, their strategy
// and storage.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the
// default and validate steps for /api/v1/nodes and its status subresource.
package node
