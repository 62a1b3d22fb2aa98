// Package ipaddress is the registry of IP addresses (networking.k8s.io/v1): their
// validation, their strategy, storage and table.
//
// An IPAddress records that one address of a service CIDR is taken. Its name is the
// address in canonical form, so two claims on one address are two creates of one name
// and only the first succeeds; its parentRef names the holder (a Service, for a
// ClusterIP). The ClusterIP allocator creates and deletes these objects in process
// through the store that NewREST returns.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the
// validate step for /apis/networking.k8s.io/v1/ipaddresses.
package ipaddress
