// Package serviceaccount is the registry of service accounts: their validation, their
// strategy and storage.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the
// validate step for /api/v1/namespaces/{ns}/serviceaccounts. Service accounts have no
// defaults.
package serviceaccount
