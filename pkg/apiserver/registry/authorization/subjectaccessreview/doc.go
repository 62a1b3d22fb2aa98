// Package subjectaccessreview is the registry of subject access reviews
// (authorization.k8s.io/v1): "may this user do this?", asked by a component that serves requests
// of its own. The node agent's API asks it for every request it has not cached an answer to, as
// the kubelet does, before it serves logs, exec, port-forward or stats.
//
// In the API server's flow (decode → default → validate → admit → store) a review is decoded,
// validated and admitted like any object, but it is never stored: the API server answers it
// with its own authorizer and returns it with the status filled in.
package subjectaccessreview
