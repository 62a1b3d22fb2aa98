// Package pod is the API server's registry for core/v1 Pods and their
// subresources (pods/status, pods/binding). It covers the default and validate
// steps of a write (decode → default → validate → admit → store):
//
//   - SetDefaults fills in what Kubernetes' defaulters fill in for a Pod as it
//     is decoded (and again as it is read back from storage, so it is
//     idempotent). DefaultPodLevelResources is the part of defaulting that
//     Kubernetes v1.37 runs later, in the strategy's PrepareForCreate.
//   - ValidatePod, ValidatePodUpdate, ValidatePodStatusUpdate and
//     ValidateBinding reproduce Kubernetes' pkg/apis/core/validation rules for
//     Pods with the same field paths, error types and wording, for the feature
//     gates that are on by default in v1.37.
//   - Warnings and TemplateWarnings are what a write of a valid Pod or pod template is
//     answered with besides (Warning headers: deprecated labels, annotations and volume
//     types, fractional byte values, clashing ports, ...), upstream's pkg/api/pod rules.
//
// The strategy and storage that call these live beside them in this package.
package pod
