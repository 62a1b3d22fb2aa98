package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The CustomResourceDefinitions of two widely used projects, exactly as their Go modules ship
// them, fetched at run time through the go command and the module proxy (the module cache is
// read-only; berth's go.mod does not name them):
//
//   - cert-manager's deploy/crds/*.yaml: controller-gen's plain YAML. The Helm chart's
//     templates/crd-*.yaml are the same CRDs with {{ }} lines around the metadata (a label
//     include, a helm.sh/resource-policy annotation); their specs are identical, so the
//     test uses the plain copy and strips nothing.
//   - prometheus-operator's example/prometheus-operator-crd/*.yaml, the CRDs of its
//     bundle.yaml (the -full directory adds a v1beta1 of AlertmanagerConfig that needs the
//     operator's conversion webhook).
const (
	certManagerModule   = "github.com/cert-manager/cert-manager"
	certManagerVersion  = "v1.21.2"
	promOperatorModule  = "github.com/prometheus-operator/prometheus-operator"
	promOperatorVersion = "v0.85.0"

	// crdTimeout bounds one kubectl command over a directory of large CRDs (applying
	// prometheus-operator's ten, 5 MB of schemas, or deleting them).
	crdTimeout = 3 * time.Minute
	// crdGroup is the group of the test's own CRD.
	crdGroup = "e2e.berth.dev"
)

// TestCRDCertManager: cert-manager's six CRDs apply client-side and then server-side, become
// Established and discoverable (short names, the cert-manager category); an Issuer and a
// Certificate are accepted and shown with the CRD's printer columns; the schema (enum,
// required), a CEL rule of cert-manager's and strict field validation refuse bad ones with
// their messages; kubectl explain reads the schema's descriptions; deleting the CRDs deletes
// the custom resources from etcd.
func TestCRDCertManager(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	dir := filepath.Join(moduleDir(t, certManagerModule, certManagerVersion), "deploy", "crds")
	names := crdNames(t, dir)
	t.Cleanup(func() { deleteCRDs(t, c, dir) })

	// The largest (issuers, clusterissuers: 325 KiB of YAML) still fit the 256 KiB
	// last-applied-configuration annotation of a client-side apply once kubectl compacts them
	// to JSON; a server-side apply over it then takes the fields over without conflicts.
	out := c.mustLong(t, "apply", "-f", dir)
	for _, n := range names {
		wantMatch(t, out, `^customresourcedefinition\.apiextensions\.k8s\.io/`+regexp.QuoteMeta(n)+` created$`)
	}
	out = c.mustLong(t, "apply", "--server-side", "-f", dir)
	for _, n := range names {
		wantMatch(t, out, `^customresourcedefinition\.apiextensions\.k8s\.io/`+regexp.QuoteMeta(n)+` serverside-applied$`)
	}
	waitEstablished(t, c, dir, names)

	out = c.must(t, "get", "crd")
	wantHeader(t, out, "NAME", "SCOPE", "VERSIONS", "CREATED", "AT")
	for _, n := range names {
		scope := "Namespaced"
		if n == "clusterissuers.cert-manager.io" {
			scope = "Cluster"
		}
		wantPrefix(t, row(t, out, n), n, scope, "v1(storage)")
	}
	wantAPIResources(t, c, "cert-manager.io",
		"certificaterequests cr,crs cert-manager.io/v1 true CertificateRequest",
		"certificates cert,certs cert-manager.io/v1 true Certificate",
		"clusterissuers ciss cert-manager.io/v1 false ClusterIssuer",
		"issuers iss cert-manager.io/v1 true Issuer")
	wantAPIResources(t, c, "acme.cert-manager.io",
		"challenges acme.cert-manager.io/v1 true Challenge",
		"orders acme.cert-manager.io/v1 true Order")

	ns := c.newNamespace(t)
	valid := fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: Issuer
metadata:
  name: selfsigned
  namespace: %[1]s
spec:
  selfSigned: {}
---
apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata:
  name: %[1]s
spec:
  selfSigned: {}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  name: web
  namespace: %[1]s
spec:
  secretName: web-tls
  dnsNames: [web.example.com]
  issuerRef:
    name: selfsigned
  privateKey:
    algorithm: ECDSA
`, ns)
	if out := c.mustIn(t, valid, "apply", "-f", "-"); out != "issuer.cert-manager.io/selfsigned created\nclusterissuer.cert-manager.io/"+ns+" created\ncertificate.cert-manager.io/web created\n" {
		t.Errorf("apply of an Issuer, a ClusterIssuer and a Certificate said %q", out)
	}

	// The printer columns: Ready (a JSONPath filter over the conditions, empty until the
	// status says), Secret and Age; -o wide adds the priority-1 Issuer and Status.
	out = c.must(t, "get", "cert", "-n", ns)
	wantHeader(t, out, "NAME", "READY", "SECRET", "AGE")
	wantPrefix(t, row(t, out, "web"), "web", "web-tls")
	if out := c.must(t, "patch", "certificate", "web", "-n", ns, "--subresource", "status", "--type", "merge",
		"-p", `{"status":{"conditions":[{"type":"Ready","status":"True","reason":"Issued","message":"Certificate is up to date"}]}}`); out != "certificate.cert-manager.io/web patched\n" {
		t.Errorf("patch --subresource status said %q", out)
	}
	out = c.must(t, "get", "certs", "web", "-n", ns, "-o", "wide")
	wantHeader(t, out, "NAME", "READY", "SECRET", "ISSUER", "STATUS", "AGE")
	wantPrefix(t, row(t, out, "web"), "web", "True", "web-tls", "selfsigned", "Certificate", "is", "up", "to", "date")
	out = c.must(t, "get", "iss", "-n", ns)
	wantHeader(t, out, "NAME", "READY", "AGE")
	row(t, out, "selfsigned")
	row(t, c.must(t, "get", "ciss"), ns)

	// The category names every kind of the group at once.
	out = c.must(t, "get", "cert-manager", "-n", ns, "-o", "name")
	wantMatch(t, out, `^certificate\.cert-manager\.io/web$`, `^issuer\.cert-manager\.io/selfsigned$`)

	// The schema: an enum and a required field; then cert-manager's CEL rule on
	// spec.venafi ("exactly one of tpp, cloud, or ngts").
	r := c.kubectlIn(t, fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  name: bad
  namespace: %s
spec:
  dnsNames: [bad.example.com]
  issuerRef:
    name: selfsigned
  privateKey:
    algorithm: DSA
`, ns), "apply", "-f", "-")
	if r.code == 0 {
		t.Errorf("a Certificate with a bad algorithm and no secretName was accepted:\n%s", r)
	}
	wantContains(t, r.stderr, `The Certificate "bad" is invalid:`,
		`spec.privateKey.algorithm: Unsupported value: "DSA": supported values: "RSA", "ECDSA", "Ed25519"`,
		`spec.secretName: Required value`)
	r = c.kubectlIn(t, fmt.Sprintf("apiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata:\n  name: venafi\n  namespace: %s\nspec:\n  venafi:\n    zone: z\n", ns), "apply", "-f", "-")
	if r.code == 0 {
		t.Errorf("a venafi Issuer with neither tpp, cloud nor ngts was accepted:\n%s", r)
	}
	wantContains(t, r.stderr, `The Issuer "venafi" is invalid: spec.venafi: Invalid value: exactly one of tpp, cloud, or ngts must be configured`)

	// --validate=strict asks the server to refuse unknown fields instead of dropping them.
	unknown := fmt.Sprintf("apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata:\n  name: strict\n  namespace: %s\nspec:\n  secretName: strict-tls\n  bogus: 1\n  issuerRef:\n    name: selfsigned\n", ns)
	r = c.kubectlIn(t, unknown, "apply", "--validate=strict", "-f", "-")
	if r.code == 0 {
		t.Errorf("apply --validate=strict accepted an unknown field:\n%s", r)
	}
	wantContains(t, r.stderr, `strict decoding error: unknown field "spec.bogus"`)
	if r := c.kubectl(t, "get", "certificate", "strict", "-n", ns); r.code == 0 {
		t.Errorf("the refused Certificate exists:\n%s", r)
	}

	// kubectl explain reads the CRD's schema from /openapi/v3, which the OpenAPI controller
	// publishes a moment after the CRD is Established.
	eventually(t, time.Minute, "kubectl explain certificate.spec", func() bool {
		return c.kubectl(t, "explain", "certificate.spec").code == 0
	})
	out = c.must(t, "explain", "certificate.spec")
	wantMatch(t, out,
		`^GROUP:\s+cert-manager\.io$`,
		`^KIND:\s+Certificate$`,
		`^VERSION:\s+v1$`,
		`^FIELD:\s+spec <Object>$`,
		`Specification of the desired state of the Certificate resource\.`,
		`^  dnsNames\s+<\[\]string>$`,
		`Requested DNS subject alternative names\.`,
		`^  issuerRef\s+<Object> -required-$`,
		`^  secretName\s+<string> -required-$`,
	)

	// Deleting the CRDs deletes their custom resources, in etcd too.
	wantEtcdKeys(t, c, "/registry/cert-manager.io/",
		"/registry/cert-manager.io/certificates/"+ns+"/web",
		"/registry/cert-manager.io/clusterissuers/"+ns,
		"/registry/cert-manager.io/issuers/"+ns+"/selfsigned")
	out = c.mustLong(t, "delete", "-f", dir)
	for _, n := range names {
		wantContains(t, out, `customresourcedefinition.apiextensions.k8s.io "`+n+`" deleted`)
	}
	wantGone(t, c, "certificates", ns)
	wantEtcdKeys(t, c, "/registry/cert-manager.io/")
}

// TestCRDPrometheusOperator: prometheus-operator's ten CRDs are too large for a client-side
// apply (its documentation says to apply them server-side) and apply server-side; a
// ServiceMonitor and a PrometheusRule are accepted with the schema's defaults; an enum, a
// pattern and a required field refuse bad ones; the category lists them; deleting the CRDs
// deletes them.
func TestCRDPrometheusOperator(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	dir := filepath.Join(moduleDir(t, promOperatorModule, promOperatorVersion), "example", "prometheus-operator-crd")
	names := crdNames(t, dir)
	t.Cleanup(func() { deleteCRDs(t, c, dir) })

	// A client-side apply keeps the whole object in an annotation, and annotations are
	// limited to 256 KiB in all: Prometheus' CRD (770 KiB) does not fit.
	r := c.kubectl(t, "apply", "-f", filepath.Join(dir, "monitoring.coreos.com_prometheuses.yaml"))
	if r.code == 0 {
		t.Errorf("a client-side apply of the Prometheus CRD was accepted:\n%s", r)
	}
	wantContains(t, r.stderr, `The CustomResourceDefinition "prometheuses.monitoring.coreos.com" is invalid: metadata.annotations: Too long: may not be more than 262144 bytes`)

	out := c.mustLong(t, "apply", "--server-side", "-f", dir)
	for _, n := range names {
		wantMatch(t, out, `^customresourcedefinition\.apiextensions\.k8s\.io/`+regexp.QuoteMeta(n)+` serverside-applied$`)
	}
	waitEstablished(t, c, dir, names)

	out = c.must(t, "get", "crd")
	for _, n := range names {
		version := "v1(storage)"
		switch n {
		case "alertmanagerconfigs.monitoring.coreos.com", "prometheusagents.monitoring.coreos.com", "scrapeconfigs.monitoring.coreos.com":
			version = "v1alpha1(storage)"
		}
		wantPrefix(t, row(t, out, n), n, "Namespaced", version)
	}
	wantAPIResources(t, c, "monitoring.coreos.com",
		"alertmanagerconfigs amcfg monitoring.coreos.com/v1alpha1 true AlertmanagerConfig",
		"alertmanagers am monitoring.coreos.com/v1 true Alertmanager",
		"podmonitors pmon monitoring.coreos.com/v1 true PodMonitor",
		"probes prb monitoring.coreos.com/v1 true Probe",
		"prometheusagents promagent monitoring.coreos.com/v1alpha1 true PrometheusAgent",
		"prometheuses prom monitoring.coreos.com/v1 true Prometheus",
		"prometheusrules promrule monitoring.coreos.com/v1 true PrometheusRule",
		"scrapeconfigs scfg monitoring.coreos.com/v1alpha1 true ScrapeConfig",
		"servicemonitors smon monitoring.coreos.com/v1 true ServiceMonitor",
		"thanosrulers ruler monitoring.coreos.com/v1 true ThanosRuler")

	ns := c.newNamespace(t)
	valid := fmt.Sprintf(`apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: web
  namespace: %[1]s
spec:
  selector:
    matchLabels:
      app: web
  endpoints:
  - port: http
    interval: 30s
    metricRelabelings:
    - sourceLabels: [__name__]
      regex: go_.*
---
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: web
  namespace: %[1]s
spec:
  groups:
  - name: web
    rules:
    - alert: WebDown
      expr: up{job="web"} == 0
      for: 5m
`, ns)
	if out := c.mustIn(t, valid, "apply", "--server-side", "-f", "-"); out != "servicemonitor.monitoring.coreos.com/web serverside-applied\nprometheusrule.monitoring.coreos.com/web serverside-applied\n" {
		t.Errorf("apply of a ServiceMonitor and a PrometheusRule said %q", out)
	}
	// The relabeling's action defaults to replace.
	if out := c.must(t, "get", "smon", "web", "-n", ns, "-o", "jsonpath={.spec.endpoints[0].metricRelabelings[0].action}"); out != "replace" {
		t.Errorf("the relabeling's action %q, want the schema's default replace", out)
	}
	out = c.must(t, "get", "promrule", "-n", ns)
	wantHeader(t, out, "NAME", "AGE")
	row(t, out, "web")
	out = c.must(t, "get", "prometheus-operator", "-n", ns, "-o", "name")
	wantMatch(t, out, `^servicemonitor\.monitoring\.coreos\.com/web$`, `^prometheusrule\.monitoring\.coreos\.com/web$`)

	r = c.kubectlIn(t, fmt.Sprintf(`apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: bad
  namespace: %s
spec:
  selector: {}
  endpoints:
  - port: http
    interval: 5 minutes
    scheme: gopher
`, ns), "apply", "-f", "-")
	if r.code == 0 {
		t.Errorf("a ServiceMonitor with a bad scheme and interval was accepted:\n%s", r)
	}
	wantContains(t, r.stderr, `The ServiceMonitor "bad" is invalid:`,
		`spec.endpoints[0].scheme: Unsupported value: "gopher": supported values: "http", "https"`,
		`spec.endpoints[0].interval: Invalid value: "5 minutes": spec.endpoints[0].interval in body should match '^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$'`)
	r = c.kubectlIn(t, fmt.Sprintf("apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata:\n  name: bad\n  namespace: %s\nspec:\n  groups:\n  - name: web\n    rules:\n    - alert: NoExpr\n", ns), "apply", "-f", "-")
	if r.code == 0 {
		t.Errorf("a PrometheusRule without expr was accepted:\n%s", r)
	}
	wantContains(t, r.stderr, `The PrometheusRule "bad" is invalid: spec.groups[0].rules[0].expr: Required value`)

	wantEtcdKeys(t, c, "/registry/monitoring.coreos.com/",
		"/registry/monitoring.coreos.com/prometheusrules/"+ns+"/web",
		"/registry/monitoring.coreos.com/servicemonitors/"+ns+"/web")
	out = c.mustLong(t, "delete", "-f", dir)
	for _, n := range names {
		wantContains(t, out, `customresourcedefinition.apiextensions.k8s.io "`+n+`" deleted`)
	}
	wantGone(t, c, "servicemonitors", ns)
	wantEtcdKeys(t, c, "/registry/monitoring.coreos.com/")
}

// widgetCRD is the test's own CRD: two versions with the None conversion strategy (the
// same schema, apiVersion rewritten), the status and scale subresources, printer columns, a
// short name and a category, and a CEL rule over a list whose cost is bounded by maxItems
// and maxLength. limits=false leaves those two out.
func widgetCRD(plural, kind, shortName string, limits bool) string {
	bounds := ""
	if limits {
		bounds = "\n    maxItems: 16\n    items:\n      type: string\n      maxLength: 63"
	} else {
		bounds = "\n    items:\n      type: string"
	}
	version := func(name string, storage bool) string {
		return fmt.Sprintf(`  - name: %s
    served: true
    storage: %t
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size:
                type: string
                enum: [small, large]
              replicas:
                type: integer
                minimum: 0
                default: 1
              tags:
                type: array%s
                x-kubernetes-validations:
                - rule: "self.all(t, t.matches('^team-[a-z0-9-]+$'))"
                  message: every tag must be team- and a name
          status:
            type: object
            properties:
              replicas:
                type: integer
              selector:
                type: string
              phase:
                type: string
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
        labelSelectorPath: .status.selector
    additionalPrinterColumns:
    - name: Size
      type: string
      jsonPath: .spec.size
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    - name: Phase
      type: string
      jsonPath: .status.phase
`, name, storage, strings.ReplaceAll(bounds, "\n", "\n            "))
	}
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[1]s.%[3]s
spec:
  group: %[3]s
  scope: Namespaced
  names:
    plural: %[1]s
    singular: %[4]s
    kind: %[2]s
    shortNames: [%[5]s]
    categories: [berth-e2e]
  conversion:
    strategy: None
  versions:
`, plural, kind, crdGroup, strings.ToLower(kind), shortName) + version("v1", true) + version("v1beta1", false)
}

// TestCRDVersionsAndSubresources: a CRD of the test's own, served at two versions with the
// None conversion strategy, with the status and scale subresources, printer columns, a
// short name, a category and a cost-bounded CEL rule (refused without its bounds); deleting
// it deletes its objects, and a CRD of the same name created again starts empty.
func TestCRDVersionsAndSubresources(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	const name = "widgets." + crdGroup
	crd := widgetCRD("widgets", "Widget", "wdg", true)
	t.Cleanup(func() { c.kubectl(t, "delete", "crd", name, "--ignore-not-found", "--wait=false") })

	if out := c.mustIn(t, crd, "apply", "-f", "-"); out != "customresourcedefinition.apiextensions.k8s.io/"+name+" created\n" {
		t.Errorf("apply of the CRD said %q", out)
	}
	c.must(t, "wait", "--for=condition=Established", "crd/"+name, "--timeout=50s")
	wantPrefix(t, row(t, c.must(t, "get", "crd", name), name), name, "Namespaced", "v1(storage),v1beta1")
	wantAPIResources(t, c, crdGroup, "widgets wdg "+crdGroup+"/v1 true Widget")

	// Without maxItems and maxLength the rule's estimated cost is unbounded.
	r := c.kubectlIn(t, widgetCRD("gadgets", "Gadget", "gdg", false), "apply", "-f", "-")
	if r.code == 0 {
		c.kubectl(t, "delete", "crd", "gadgets."+crdGroup)
		t.Errorf("a CRD with a CEL rule of unbounded cost was accepted:\n%s", r)
	}
	wantContains(t, r.stderr, `The CustomResourceDefinition "gadgets.`+crdGroup+`" is invalid:`,
		`spec.validation.openAPIV3Schema.properties[spec].properties[tags].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)`)

	// Created at v1beta1, defaulted, stored at v1, served at both.
	ns := c.newNamespace(t)
	widget := func(version, name, spec string) string {
		return fmt.Sprintf("apiVersion: %s/%s\nkind: Widget\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n%s", crdGroup, version, name, ns, spec)
	}
	if out := c.mustIn(t, widget("v1beta1", "w", "  size: small\n  tags: [team-a]\n"), "apply", "-f", "-"); out != "widget."+crdGroup+"/w created\n" {
		t.Errorf("apply of a v1beta1 Widget said %q", out)
	}
	if out := c.must(t, "get", "widget", "w", "-n", ns, "-o", "jsonpath={.apiVersion} {.spec.replicas}"); out != crdGroup+"/v1 1" {
		t.Errorf("the Widget read at the preferred version: apiVersion and replicas %q, want v1 and the default 1", out)
	}
	if out := c.must(t, "get", "widgets.v1beta1."+crdGroup, "w", "-n", ns, "-o", "jsonpath={.apiVersion}"); out != crdGroup+"/v1beta1" {
		t.Errorf("the Widget read at v1beta1: apiVersion %q", out)
	}
	if v := etcdValue(t, c, "/registry/"+crdGroup+"/widgets/"+ns+"/w"); !strings.Contains(v, `"apiVersion":"`+crdGroup+`/v1"`) {
		t.Errorf("the Widget is not stored at the storage version v1: %s", v)
	}

	// The schema and the CEL rule refuse bad ones.
	for _, bad := range []struct{ spec, want string }{
		{"  size: medium\n", `spec.size: Unsupported value: "medium": supported values: "small", "large"`},
		{"  replicas: 2\n", `spec.size: Required value`},
		{"  size: large\n  replicas: -1\n", `spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0`},
		{"  size: large\n  tags: [team-a, ops]\n", `spec.tags: Invalid value: every tag must be team- and a name`},
	} {
		r := c.kubectlIn(t, widget("v1", "bad", bad.spec), "apply", "-f", "-")
		if r.code == 0 {
			t.Errorf("a Widget with spec\n%swas accepted", bad.spec)
		}
		wantContains(t, r.stderr, `The Widget "bad" is invalid: `, bad.want)
	}

	// The status subresource: the main resource ignores status, /status sets it (and
	// leaves the generation alone).
	if out := c.must(t, "patch", "widget", "w", "-n", ns, "--type", "merge", "-p", `{"status":{"phase":"Ignored"}}`); out != "widget."+crdGroup+"/w patched (no change)\n" {
		t.Errorf("a patch of status through the main resource said %q", out)
	}
	if out := c.must(t, "patch", "widget", "w", "-n", ns, "--subresource", "status", "--type", "merge",
		"-p", `{"status":{"phase":"Running","replicas":1,"selector":"app=w"}}`); out != "widget."+crdGroup+"/w patched\n" {
		t.Errorf("patch --subresource status said %q", out)
	}
	if out := c.must(t, "get", "widget", "w", "-n", ns, "-o", "jsonpath={.status.phase} {.metadata.generation}"); out != "Running 1" {
		t.Errorf("after the status patch: phase and generation %q", out)
	}
	// Printer columns of its own replace Age.
	out := c.must(t, "get", "wdg", "-n", ns)
	wantHeader(t, out, "NAME", "SIZE", "REPLICAS", "PHASE")
	wantPrefix(t, row(t, out, "w"), "w", "small", "1", "Running")

	// The scale subresource, through kubectl scale.
	if out := c.must(t, "scale", "widget", "w", "-n", ns, "--replicas", "3"); out != "widget."+crdGroup+"/w scaled\n" {
		t.Errorf("kubectl scale said %q", out)
	}
	if out := c.must(t, "get", "widget", "w", "-n", ns, "--subresource", "scale", "-o", "jsonpath={.kind} {.spec.replicas} {.status.replicas} {.status.selector}"); out != "Scale 3 1 app=w" {
		t.Errorf("the scale subresource: %q, want Scale 3 1 app=w", out)
	}
	if out := c.must(t, "get", "widget", "w", "-n", ns, "-o", "jsonpath={.spec.replicas} {.metadata.generation}"); out != "3 2" {
		t.Errorf("after kubectl scale: replicas and generation %q, want 3 2", out)
	}
	out = c.must(t, "get", "berth-e2e", "-n", ns, "-o", "name")
	wantMatch(t, out, `^widget\.e2e\.berth\.dev/w$`)

	eventually(t, time.Minute, "kubectl explain widget.spec at v1beta1", func() bool {
		return c.kubectl(t, "explain", "widget.spec", "--api-version", crdGroup+"/v1beta1").code == 0
	})
	out = c.must(t, "explain", "widget.spec", "--api-version", crdGroup+"/v1beta1")
	wantMatch(t, out, `^GROUP:\s+e2e\.berth\.dev$`, `^KIND:\s+Widget$`, `^VERSION:\s+v1beta1$`,
		`^  replicas\s+<integer>$`, `^  size\s+<string> -required-$`, `^  enum: small, large$`, `^  tags\s+<\[\]string>$`)

	// Deleting the CRD deletes the Widget; the same CRD created again has none.
	if out := c.must(t, "delete", "crd", name); !strings.HasPrefix(out, `customresourcedefinition.apiextensions.k8s.io "`+name+`" deleted`) {
		t.Errorf("delete crd said %q", out)
	}
	wantGone(t, c, "widgets", ns)
	wantEtcdKeys(t, c, "/registry/"+crdGroup+"/widgets/")
	c.mustIn(t, crd, "apply", "-f", "-")
	c.must(t, "wait", "--for=condition=Established", "crd/"+name, "--timeout=50s")
	eventually(t, time.Minute, "widgets served again", func() bool {
		return c.kubectl(t, "get", "widgets", "-n", ns).code == 0
	})
	r = c.kubectl(t, "get", "widgets", "-n", ns)
	if r.stdout != "" || strings.TrimSpace(r.stderr) != "No resources found in "+ns+" namespace." {
		t.Errorf("widgets after the CRD was deleted and created again:\n%s", r)
	}
	c.must(t, "delete", "crd", name)
}

// moduleDir downloads module@version with `go mod download` (through GOPROXY, into the
// module cache, which go leaves read-only) and returns the directory it was extracted to. It
// runs in a directory of its own, outside berth's module, whose go.mod it must not touch.
func moduleDir(t *testing.T, module, version string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("downloading %s needs the go command: %v", module, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "mod", "download", "-json", module+"@"+version)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); jerr != nil || err != nil || info.Error != "" || info.Dir == "" {
		t.Fatalf("go mod download -json %s@%s: %v %s\n%s%s", module, version, err, info.Error, out, stderr.String())
	}
	t.Logf("%s@%s is in %s", module, version, info.Dir)
	return info.Dir
}

// crdNames are the names of the CRDs in dir, from controller-gen's file names
// (GROUP_PLURAL.yaml holds PLURAL.GROUP); kubectl's output checks them against the contents.
func crdNames(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in %s: %v", dir, err)
	}
	var names []string
	for _, f := range files {
		group, plural, ok := strings.Cut(strings.TrimSuffix(filepath.Base(f), ".yaml"), "_")
		if !ok {
			t.Fatalf("%s is not named GROUP_PLURAL.yaml", f)
		}
		names = append(names, plural+"."+group)
	}
	sort.Strings(names)
	return names
}

// mustLong is must with a longer timeout, for commands over many large CRDs.
func (c *cluster) mustLong(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), crdTimeout)
	defer cancel()
	start := time.Now()
	r, err := execKubectl(ctx, kubectlBin, c.kubeconfig(), nil, "", args...)
	if err != nil {
		t.Fatalf("%s: %v\n%s", r.cmd, err, r)
	}
	t.Logf("$ %s → %d in %s\n%s", r.cmd, r.code, time.Since(start).Round(time.Millisecond), tail(r.stdout+r.stderr, 15))
	return mustSucceed(t, r)
}

// waitEstablished waits for the CRDs of dir to be Established.
func waitEstablished(t *testing.T, c *cluster, dir string, names []string) {
	t.Helper()
	out := c.mustLong(t, "wait", "--for=condition=Established", "-f", dir, "--timeout="+strconv.Itoa(int(crdTimeout/time.Second)-10)+"s")
	for _, n := range names {
		wantContains(t, out, "customresourcedefinition.apiextensions.k8s.io/"+n+" condition met")
	}
}

// wantAPIResources waits until discovery serves the group (the discovery document follows
// the CRDs a moment after they are Established), then checks kubectl api-resources' rows:
// NAME SHORTNAMES APIVERSION NAMESPACED KIND.
func wantAPIResources(t *testing.T, c *cluster, group string, rows ...string) {
	t.Helper()
	var out string
	eventually(t, time.Minute, "the resources of "+group+" in discovery", func() bool {
		out = c.must(t, "api-resources", "--api-group", group)
		return len(dataRows(out)) >= len(rows)
	})
	wantHeader(t, out, "NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND")
	for _, want := range rows {
		wantMatch(t, out, `^`+strings.Join(strings.Fields(regexp.QuoteMeta(want)), `\s+`)+`$`)
	}
}

// wantGone checks that kubectl can no longer list a resource whose CRD was deleted.
func wantGone(t *testing.T, c *cluster, resource, ns string) {
	t.Helper()
	r := c.kubectl(t, "get", resource, "-n", ns)
	if r.code == 0 {
		t.Errorf("kubectl get %s after its CRD was deleted:\n%s", resource, r)
	}
	// kubectl says the first when its discovery cache is fresh, the second when its cache
	// still has the resource and the server answers 404.
	if !strings.Contains(r.stderr, `the server doesn't have a resource type "`+resource+`"`) &&
		!strings.Contains(r.stderr, `the server could not find the requested resource`) {
		t.Errorf("kubectl get %s after its CRD was deleted:\n%s", resource, r)
	}
}

// etcdClient connects to the cluster's embedded etcd.
func etcdClient(t *testing.T, c *cluster) *clientv3.Client {
	t.Helper()
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://127.0.0.1:" + strconv.Itoa(c.etcdPort)}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("connecting to etcd: %v", err)
	}
	t.Cleanup(func() { client.Close() })
	return client
}

// wantEtcdKeys checks the keys etcd holds under prefix.
func wantEtcdKeys(t *testing.T, c *cluster, prefix string, want ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := etcdClient(t, c).Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatalf("reading %s from etcd: %v", prefix, err)
	}
	var got []string
	for _, kv := range resp.Kvs {
		got = append(got, string(kv.Key))
	}
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("etcd keys under %s:\n%s\nwant:\n%s", prefix, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// etcdValue is the value etcd holds at key.
func etcdValue(t *testing.T, c *cluster, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := etcdClient(t, c).Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("reading %s from etcd: %v %v", key, resp, err)
	}
	return string(resp.Kvs[0].Value)
}

// deleteCRDs deletes the CRDs of dir without waiting, if a test left them.
func deleteCRDs(t *testing.T, c *cluster, dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), crdTimeout)
	defer cancel()
	if r, err := execKubectl(ctx, kubectlBin, c.kubeconfig(), nil, "", "delete", "-f", dir, "--ignore-not-found", "--wait=false"); err != nil || r.code != 0 {
		t.Logf("deleting the CRDs of %s: %v\n%s", dir, err, r)
	}
}
