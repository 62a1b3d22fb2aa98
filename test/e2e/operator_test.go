package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// greetingCRD is the CustomResourceDefinition of test/e2e/operator's Greeting in group, as
// controller-gen writes one: a structural schema, the status subresource and printer
// columns (Age among them, as kubebuilder adds it: a CRD's own columns replace the default
// AGE). spec.name is not required by the schema: the validating webhook requires it.
func greetingCRD(group string) string {
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: greetings.%[1]s
spec:
  group: %[1]s
  names: {kind: Greeting, listKind: GreetingList, plural: greetings, singular: greeting}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Greeting, type: string, jsonPath: .spec.greeting}
    - {name: Message, type: string, jsonPath: .status.message}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              name: {type: string}
              greeting: {type: string, maxLength: 32}
          status:
            type: object
            properties:
              message: {type: string}
              configMap: {type: string}
              observedGeneration: {type: integer, format: int64}
`, group)
}

// operatorManifests is what a kubebuilder project's config/default renders to, for one
// namespace: the operator's ServiceAccount, its manager ClusterRole (the Greetings, their
// status and finalizers, ConfigMaps) and leader-election Role (Leases, Events) with their
// bindings, the webhook Service and the Deployment, which mounts the serving certificate's
// Secret webhook-cert and is ready once the webhook server serves.
func operatorManifests(ns, image, group string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ServiceAccount
metadata: {name: greeting-operator, namespace: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: greeting-operator-manager-%[1]s}
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [create, delete, get, list, patch, update, watch]
- apiGroups: [%[3]s]
  resources: [greetings]
  verbs: [get, list, watch, update, patch]
- apiGroups: [%[3]s]
  resources: [greetings/status]
  verbs: [get, update, patch]
- apiGroups: [%[3]s]
  resources: [greetings/finalizers]
  verbs: [update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: greeting-operator-manager-%[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: greeting-operator-manager-%[1]s}
subjects:
- {kind: ServiceAccount, name: greeting-operator, namespace: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: greeting-operator-leader-election, namespace: %[1]s}
rules:
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: greeting-operator-leader-election, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: greeting-operator-leader-election}
subjects:
- {kind: ServiceAccount, name: greeting-operator, namespace: %[1]s}
---
apiVersion: v1
kind: Service
metadata: {name: greeting-webhook, namespace: %[1]s}
spec:
  selector: {app: greeting-operator}
  ports: [{name: webhook, port: 443, targetPort: webhook-server}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: greeting-operator, namespace: %[1]s}
spec:
  replicas: 1
  selector: {matchLabels: {app: greeting-operator}}
  template:
    metadata: {labels: {app: greeting-operator}}
    spec:
      serviceAccountName: greeting-operator
      terminationGracePeriodSeconds: 5
      containers:
      - name: manager
        image: %[2]s
        imagePullPolicy: IfNotPresent
        command: ["/operator", "--group=%[3]s", "--leader-elect", "--default-greeting=Ahoy", "--cert-dir=/certs"]
        ports:
        - {name: webhook-server, containerPort: 9443}
        - {name: health, containerPort: 8081}
        readinessProbe:
          httpGet: {path: /readyz, port: health}
          periodSeconds: 1
        livenessProbe:
          httpGet: {path: /healthz, port: health}
        volumeMounts:
        - {name: cert, mountPath: /certs, readOnly: true}
      volumes:
      - name: cert
        secret: {secretName: webhook-cert}
`, ns, image, group)
}

// webhookConfigurations are the operator's mutating and validating webhook configurations
// (cluster-scoped, named after ns), for Greetings of namespace ns only, calling the Service
// greeting-webhook at controller-runtime's paths with the failure policy and trusting
// caBundle (PEM).
func webhookConfigurations(ns, group, failurePolicy, caBundle string) string {
	path := strings.ReplaceAll(group, ".", "-") + "-v1-greeting"
	hook := func(kind, prefix string) string {
		return fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: %[1]sWebhookConfiguration
metadata: {name: greeting-operator-%[3]s}
webhooks:
- name: %[2]sgreeting.%[4]s
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: %[5]s
  timeoutSeconds: 10
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: %[3]s}}
  clientConfig:
    caBundle: %[6]s
    service: {name: greeting-webhook, namespace: %[3]s, port: 443, path: /%[7]s-%[8]s}
  rules:
  - {apiGroups: [%[4]s], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [greetings]}
`, kind, prefix[:1], ns, group, failurePolicy, base64.StdEncoding.EncodeToString([]byte(caBundle)), prefix, path)
	}
	return hook("Mutating", "mutate") + "---\n" + hook("Validating", "validate")
}

// greeting is a Greeting manifest; an empty field is left out.
func greeting(group, name, whom, how string) string {
	spec := "{}"
	switch {
	case whom != "" && how != "":
		spec = fmt.Sprintf("{name: %s, greeting: %s}", whom, how)
	case whom != "":
		spec = fmt.Sprintf("{name: %s}", whom)
	case how != "":
		spec = fmt.Sprintf("{greeting: %s}", how)
	}
	return fmt.Sprintf("apiVersion: %s/v1\nkind: Greeting\nmetadata: {name: %s}\nspec: %s\n", group, name, spec)
}

// TestOperator: an operator written with controller-runtime (test/e2e/operator), deployed as
// a kubebuilder project ships it (its own ServiceAccount, ClusterRole and Role with their
// bindings), reconciles a custom resource: it creates a ConfigMap controlled by the Greeting
// and writes the Greeting's status through the status subresource, follows a change of the
// spec, and deleting the Greeting garbage-collects the ConfigMap. Its webhooks, served with a
// certificate the cluster signed for a CertificateSigningRequest, default a Greeting
// (mutating) and refuse invalid ones with their message (validating). With the operator
// scaled to 0, failurePolicy Fail refuses a Greeting ("failed calling webhook") and Ignore
// lets it through undefaulted and unvalidated; scaled back, the operator reconciles it.
func TestOperator(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	image := goProgramImage(t, "operator")
	group := crdGroup
	// The resource, qualified: TestHelm's chart has Greetings too, in another group.
	gr := "greeting." + group
	t.Cleanup(func() {
		// The cluster-scoped objects outlive the namespace.
		c.kubectl(t, "delete", "--ignore-not-found", "--wait=false",
			"mutatingwebhookconfiguration/greeting-operator-"+ns, "validatingwebhookconfiguration/greeting-operator-"+ns,
			"clusterrolebinding/greeting-operator-manager-"+ns, "clusterrole/greeting-operator-manager-"+ns,
			"crd/greetings."+group)
	})

	c.mustIn(t, greetingCRD(group), "apply", "-f", "-")
	c.must(t, "wait", "--for=condition=Established", "crd/greetings."+group, "--timeout=60s")

	cert := webhookServingCert(t, c, ns, "greeting-webhook")
	c.must(t, "create", "secret", "tls", "webhook-cert", "-n", ns, "--cert="+cert.certFile, "--key="+cert.keyFile)
	c.mustIn(t, operatorManifests(ns, image, group), "apply", "-f", "-")
	c.mustIn(t, webhookConfigurations(ns, group, "Fail", cert.caBundle), "apply", "-f", "-")
	c.must(t, "rollout", "status", "-n", ns, "deployment/greeting-operator", "--timeout=180s")

	// The mutating webhook defaults spec.greeting; the reconciler makes the ConfigMap and the
	// status. The webhook's Service may take a moment to list the ready pod.
	eventually(t, 60*time.Second, "the webhooks to admit a Greeting", func() bool {
		return c.kubectlIn(t, greeting(group, "ada", "Ada", ""), "create", "-n", ns, "-f", "-").code == 0
	})
	if got := c.jsonpath(t, ns, gr+"/ada", "{.spec.greeting}"); got != "Ahoy" {
		t.Errorf("the mutating webhook did not default spec.greeting: %q, want Ahoy", got)
	}
	c.waitFor(t, ns, gr+"/ada", "{.status.message}/{.status.configMap}/{.status.observedGeneration}", "to have its status",
		func(v string) bool { return v == "Ahoy, Ada!/ada-greeting/1" })
	if got := c.jsonpath(t, ns, "configmap/ada-greeting", "{.data.message}"); got != "Ahoy, Ada!" {
		t.Errorf("the ConfigMap's message: %q", got)
	}
	uid := c.jsonpath(t, ns, gr+"/ada", "{.metadata.uid}")
	owner := c.jsonpath(t, ns, "configmap/ada-greeting", "{range .metadata.ownerReferences[*]}{.apiVersion} {.kind} {.name} {.uid} {.controller} {.blockOwnerDeletion}{end}")
	if want := fmt.Sprintf("%s/v1 Greeting ada %s true true", group, uid); owner != want {
		t.Errorf("the ConfigMap's owner reference: %q, want %q", owner, want)
	}
	wantMatch(t, c.must(t, "get", gr, "-n", ns), `^NAME\s+GREETING\s+MESSAGE\s+AGE$`, `^ada\s+Ahoy\s+Ahoy, Ada!\s`)

	// A change of the spec reaches the ConfigMap and the status.
	c.must(t, "patch", "-n", ns, gr+"/ada", "--type=merge", "-p", `{"spec":{"greeting":"Hi"}}`)
	c.waitFor(t, ns, gr+"/ada", "{.status.message}/{.status.observedGeneration}", "to follow its spec",
		func(v string) bool { return v == "Hi, Ada!/2" })
	if got := c.jsonpath(t, ns, "configmap/ada-greeting", "{.data.message}"); got != "Hi, Ada!" {
		t.Errorf("the ConfigMap's message after the change: %q", got)
	}

	// The validating webhook refuses, in its words, through kubectl.
	r := c.kubectlIn(t, greeting(group, "nobody", "", "Hi"), "create", "-n", ns, "-f", "-")
	if r.code == 0 {
		t.Errorf("a Greeting without spec.name was created:\n%s", r)
	}
	wantContains(t, r.stderr, `admission webhook "vgreeting.`+group+`" denied the request: spec.name: Required value: a Greeting must name whom it greets`)
	r = c.kubectl(t, "patch", "-n", ns, gr+"/ada", "--type=merge", "-p", `{"spec":{"name":"Bob"}}`)
	if r.code == 0 {
		t.Errorf("spec.name was changed:\n%s", r)
	}
	wantContains(t, r.stderr, `admission webhook "vgreeting.`+group+`" denied the request: spec.name: Invalid value: "Bob": field is immutable`)

	// Deleting the Greeting garbage-collects its ConfigMap.
	c.must(t, "delete", "-n", ns, gr+"/ada")
	eventually(t, 60*time.Second, "the garbage collector to delete the ConfigMap", func() bool {
		return c.must(t, "get", "configmap", "-n", ns, "-l", "app.kubernetes.io/managed-by=greeting-operator", "-o", "name") == ""
	})

	// No operator: failurePolicy Fail refuses, Ignore lets anything through.
	c.must(t, "scale", "-n", ns, "deployment/greeting-operator", "--replicas=0")
	c.must(t, "wait", "-n", ns, "pod", "-l", "app=greeting-operator", "--for=delete", "--timeout=60s")
	r = c.kubectlIn(t, greeting(group, "refused", "Cy", ""), "create", "-n", ns, "-f", "-")
	if r.code == 0 {
		t.Fatalf("a Greeting was created with its webhook down and failurePolicy Fail:\n%s", r)
	}
	wantContains(t, r.stderr, `failed calling webhook "mgreeting.`+group+`"`)

	c.mustIn(t, webhookConfigurations(ns, group, "Ignore", cert.caBundle), "apply", "-f", "-")
	eventually(t, 30*time.Second, "the API server to ignore the webhooks", func() bool {
		return c.kubectlIn(t, greeting(group, "cy", "Cy", ""), "create", "-n", ns, "-f", "-").code == 0
	})
	c.mustIn(t, greeting(group, "anonymous", "", "Hi"), "create", "-n", ns, "-f", "-")
	if got := c.jsonpath(t, ns, gr+"/cy", "{.spec.greeting}"); got != "" {
		t.Errorf("a Greeting created with its webhook ignored was defaulted: %q", got)
	}

	// Back, the operator (a new leader) reconciles what was created while it was away.
	c.must(t, "scale", "-n", ns, "deployment/greeting-operator", "--replicas=1")
	c.waitFor(t, ns, gr+"/cy", "{.status.message}", "to be reconciled", func(v string) bool { return v == "Hello, Cy!" })
	if got := c.jsonpath(t, ns, "configmap/cy-greeting", "{.data.message}"); got != "Hello, Cy!" {
		t.Errorf("the ConfigMap of a Greeting created while the operator was away: %q", got)
	}
	if got := c.jsonpath(t, ns, "lease/greeting-operator."+group, "{.spec.holderIdentity}"); !strings.HasPrefix(got, "greeting-operator-") {
		t.Errorf("the leader-election Lease is held by %q, want an operator pod", got)
	}
}

// servingCert is a webhook's serving certificate signed by the cluster: the files of its
// certificate and key, and the CA bundle (PEM) that verifies it.
type servingCert struct {
	certFile, keyFile, caBundle string
}

// webhookServingCert gets a serving certificate for Service svc of ns as an administrator
// does without cert-manager: a CertificateSigningRequest for the Service's DNS names to a
// signer the cluster signs with its CA. Of Kubernetes' signers only kubelet-serving issues
// server certificates, and only to a subject in system:nodes named system:node:<name> with
// the usages digital signature (and key encipherment for RSA keys) and server auth; so the
// request is shaped as one. The administrator approves it (kubectl certificate approve) and
// the cluster's signer issues it; the bundle is the cluster CA every namespace gets in
// ConfigMap kube-root-ca.crt, and it must verify the certificate for svc.ns.svc.
func webhookServingCert(t *testing.T, c *cluster, ns, svc string) servingCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	dnsNames := []string{svc, svc + "." + ns, svc + "." + ns + ".svc", svc + "." + ns + ".svc.cluster.local"}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:  pkix.Name{CommonName: "system:node:" + svc + "." + ns, Organization: []string{"system:nodes"}},
		DNSNames: dnsNames,
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	request := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	name := ns + "-" + svc
	t.Cleanup(func() { c.kubectl(t, "delete", "csr", name, "--ignore-not-found") })
	c.mustIn(t, fmt.Sprintf(`apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: %s}
spec:
  signerName: kubernetes.io/kubelet-serving
  usages: [digital signature, server auth]
  expirationSeconds: 86400
  request: %s
`, name, base64.StdEncoding.EncodeToString(request)), "create", "-f", "-")
	// NAME AGE SIGNERNAME REQUESTOR REQUESTEDDURATION CONDITION
	wantMatch(t, c.must(t, "get", "csr", name), `^`+name+`\s+\S+\s+kubernetes.io/kubelet-serving\s+\S+\s+24h\s+Pending$`)
	if out := c.must(t, "certificate", "approve", name); out != "certificatesigningrequest.certificates.k8s.io/"+name+" approved\n" {
		t.Errorf("kubectl certificate approve said %q", out)
	}
	var issued string
	eventually(t, 60*time.Second, "the CSR to be issued", func() bool {
		issued = c.must(t, "get", "csr", name, "-o", "jsonpath={.status.certificate}")
		return issued != ""
	})
	wantMatch(t, c.must(t, "get", "csr", name), `\sApproved,Issued$`)
	certPEM, err := base64.StdEncoding.DecodeString(issued)
	if err != nil {
		t.Fatalf("status.certificate: %v", err)
	}
	caBundle := c.must(t, "get", "configmap", "kube-root-ca.crt", "-n", ns, "-o", `jsonpath={.data.ca\.crt}`)

	// The bundle verifies the certificate for the name the API server dials.
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatalf("status.certificate holds no PEM: %q", certPEM)
	}
	issuedCert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(caBundle)) {
		t.Fatalf("kube-root-ca.crt holds no certificate: %q", caBundle)
	}
	if _, err := issuedCert.Verify(x509.VerifyOptions{DNSName: svc + "." + ns + ".svc", Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Fatalf("the issued certificate does not verify against kube-root-ca.crt: %v", err)
	}

	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sc := servingCert{certFile: filepath.Join(dir, "tls.crt"), keyFile: filepath.Join(dir, "tls.key"), caBundle: caBundle}
	if err := os.WriteFile(sc.certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sc.keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return sc
}
