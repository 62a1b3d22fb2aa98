#!/usr/bin/env bash
# Regenerates pkg/apiserver/openapi/zz_generated.openapi.go: the OpenAPI definitions of the
# k8s.io/api types berth serves, and of the CustomResourceDefinitions and APIServices its
# apiextensions and aggregator servers serve. kubectl explain, apply validation and server-side apply read them.
set -euo pipefail
cd "$(dirname "$0")/.."
report=$(mktemp)
# The generator's own dependencies (k8s.io/gengo/v2) are not berth's: fetch them for this run and
# leave go.mod and go.sum as they were.
cp go.mod "$report.mod"; cp go.sum "$report.sum"
trap 'mv "$report.mod" go.mod; mv "$report.sum" go.sum; rm -f "$report"' EXIT
GOFLAGS=-mod=mod go get k8s.io/kube-openapi/pkg/generators@"$(go list -m -f '{{.Version}}' k8s.io/kube-openapi)"
GOFLAGS=-mod=mod go run k8s.io/kube-openapi/cmd/openapi-gen \
  --output-dir pkg/apiserver/openapi \
  --output-pkg github.com/berth-cluster/berth/pkg/apiserver/openapi \
  --output-file zz_generated.openapi.go \
  --go-header-file hack/boilerplate.go.txt \
  --report-filename "$report" \
  k8s.io/api/core/v1 \
  k8s.io/api/apps/v1 \
  k8s.io/api/batch/v1 \
  k8s.io/api/autoscaling/v1 \
  k8s.io/api/autoscaling/v2 \
  k8s.io/api/coordination/v1 \
  k8s.io/api/events/v1 \
  k8s.io/api/scheduling/v1 \
  k8s.io/api/scheduling/v1alpha3 \
  k8s.io/api/policy/v1 \
  k8s.io/api/authentication/v1 \
  k8s.io/api/authorization/v1 \
  k8s.io/api/rbac/v1 \
  k8s.io/api/discovery/v1 \
  k8s.io/api/networking/v1 \
  k8s.io/api/node/v1 \
  k8s.io/api/admissionregistration/v1 \
  k8s.io/api/certificates/v1 \
  k8s.io/api/flowcontrol/v1 \
  k8s.io/api/storage/v1 \
  k8s.io/api/resource/v1 \
  k8s.io/api/storagemigration/v1 \
  k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1 \
  k8s.io/kube-aggregator/pkg/apis/apiregistration/v1 \
  k8s.io/apimachinery/pkg/apis/meta/v1 \
  k8s.io/apimachinery/pkg/runtime \
  k8s.io/apimachinery/pkg/version \
  k8s.io/apimachinery/pkg/api/resource \
  k8s.io/apimachinery/pkg/util/intstr
