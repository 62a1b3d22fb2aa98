// Package serviceaccount issues and authenticates bound service-account tokens: the JWTs that
// TokenRequest (serviceaccounts/token) returns and that pods present to the API server.
//
// In the API server's flow it is both ends of a token's life. Issuing ("TokenRequest ─►
// Claims ─► Issuer.Issue, signed RS256 with the key pkg/cluster keeps in pki/sa.key") happens
// in the serviceaccounts/token registry; authenticating ("Authorization: Bearer ─►
// Authenticator: signature, issuer, audiences, expiry ─► the service account and the bound
// object still exist with the same UID ─► user system:serviceaccount:NS:NAME") happens in the
// request's authentication filter and in TokenReview. OpenIDMetadata serves the public keys
// as kube-apiserver does, so that others can verify the tokens without the API server.
package serviceaccount
