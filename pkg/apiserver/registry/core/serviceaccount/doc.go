// Package serviceaccount is the registry of service accounts: their validation, their
// strategy and storage, and their token subresource.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the
// validate step for /api/v1/namespaces/{ns}/serviceaccounts. Service accounts have no
// defaults. serviceaccounts/token (TokenRequest) stores nothing: it checks the request
// against the account and the object the token is to be bound to, then has
// pkg/auth/serviceaccount sign a token for them.
package serviceaccount
