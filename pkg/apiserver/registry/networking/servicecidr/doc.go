// Package servicecidr is the registry of service CIDRs (networking.k8s.io/v1): their
// validation, their strategy, storage and table, and the status subresource.
//
// A ServiceCIDR is a range the ClusterIP allocator may take addresses from: one or two
// prefixes, at most one per IP family. The API server's own range is the one named
// DefaultName; the servicecidrs controller holds each range with ProtectionFinalizer
// while addresses in it are taken, and reports readiness in status.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the
// validate step for /apis/networking.k8s.io/v1/servicecidrs and servicecidrs/status.
package servicecidr
