#!/usr/bin/env bash
# Regenerates pkg/apiserver/openapi/zz_generated.openapi.go: the OpenAPI definitions of the
# k8s.io/api types berth serves. kubectl explain, apply validation and server-side apply read them.
set -euo pipefail
cd "$(dirname "$0")/.."
report=$(mktemp)
trap 'rm -f "$report"' EXIT
go run k8s.io/kube-openapi/cmd/openapi-gen \
  --output-dir pkg/apiserver/openapi \
  --output-pkg github.com/berth-cluster/berth/pkg/apiserver/openapi \
  --output-file zz_generated.openapi.go \
  --go-header-file hack/boilerplate.go.txt \
  --report-filename "$report" \
  k8s.io/api/core/v1 \
  k8s.io/api/coordination/v1 \
  k8s.io/api/events/v1 \
  k8s.io/api/scheduling/v1 \
  k8s.io/api/policy/v1 \
  k8s.io/api/authentication/v1 \
  k8s.io/api/authorization/v1 \
  k8s.io/api/rbac/v1 \
  k8s.io/apimachinery/pkg/apis/meta/v1 \
  k8s.io/apimachinery/pkg/runtime \
  k8s.io/apimachinery/pkg/version \
  k8s.io/apimachinery/pkg/api/resource \
  k8s.io/apimachinery/pkg/util/intstr
