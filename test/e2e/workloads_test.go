package e2e

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// webDeployment is a Deployment of three netexec servers that rolls one pod at a time and
// never below three ready ones (maxUnavailable 0), ready on /healthz, and that leaves the
// Service's endpoints before it stops (a preStop pause, as applications behind a Service
// do): so that a client of the Service sees no failed request through a rollout.
func webDeployment(image string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  strategy:
    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 10
      containers:
      - name: server
        image: %s
        command: ["/netexec", "--http-port=8080"]
        ports: [{name: http, containerPort: 8080}]
        readinessProbe:
          httpGet: {path: /healthz, port: http}
          periodSeconds: 1
        lifecycle:
          preStop:
            exec: {command: ["sleep", "3"]}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
`, image)
}

// pollReport parses the client's /poll answer: "ok N failed M" and the last failures.
var pollReport = regexp.MustCompile(`^ok (\d+) failed (\d+)`)

// TestDeploymentRollout: a 3-replica Deployment behind a Service is rolled to a new image
// while a client in the cluster asks the Service ten times a second: no request fails,
// kubectl rollout status returns, the history has two revisions, rollout undo goes back to
// the first image; then a foreground deletion removes the ReplicaSets and pods before the
// Deployment.
func TestDeploymentRollout(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	v1, v2 := netexecImage(t), goProgramImageTag(t, "netexec", "e2e-v2")
	c.mustIn(t, webDeployment(v1)+fmt.Sprintf(`---
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: client
    image: %s
    command: ["/netexec", "--http-port=8081", "--poll=http://web/hostname", "--timeout=2s"]
`, v1), "apply", "-n", ns, "-f", "-")
	c.must(t, "rollout", "status", "-n", ns, "deployment/web", "--timeout=180s")
	wantContains(t, c.must(t, "get", "-n", ns, "deployment/web"), "3/3")
	c.waitFor(t, ns, "pod/client", `{.status.conditions[?(@.type=="Ready")].status}`, "to be Ready", func(v string) bool { return v == "True" })

	// poll reads the client's counts.
	poll := func() (ok, failed int, report string) {
		out := c.must(t, "exec", "-n", ns, "client", "--", "/netexec", "--get", "http://127.0.0.1:8081/poll")
		m := pollReport.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("the client's report: %q", out)
		}
		ok, _ = strconv.Atoi(m[1])
		failed, _ = strconv.Atoi(m[2])
		return ok, failed, out
	}
	eventually(t, 30*time.Second, "the client to be answered through the Service", func() bool {
		ok, _, _ := poll()
		return ok >= 20
	})
	// Failures before the Service first answered (DNS and the proxy catching up with a new
	// Service) are not the rollout's.
	okBefore, failedBefore, _ := poll()

	c.must(t, "set", "image", "-n", ns, "deployment/web", "server="+v2)
	c.must(t, "rollout", "status", "-n", ns, "deployment/web", "--timeout=180s")
	ok, failed, report := poll()
	if failed != failedBefore {
		t.Errorf("%d of %d requests through the Service failed during the rollout:\n%s", failed-failedBefore, ok-okBefore+failed-failedBefore, report)
	}
	if ok-okBefore < 20 {
		t.Errorf("only %d requests answered during the rollout", ok-okBefore)
	}
	// The old pods finish their preStop pause after the rollout is complete.
	var images string
	eventually(t, 60*time.Second, "only the new image's three pods to be left", func() bool {
		images = c.jsonpath(t, ns, "pods", `{range .items[?(@.metadata.labels.app=="web")]}{.spec.containers[0].image}{"\n"}{end}`)
		return strings.Count(images, v2) == 3 && !strings.Contains(images, v1+"\n")
	})
	history := c.must(t, "rollout", "history", "-n", ns, "deployment/web")
	wantMatch(t, history, `(?m)^1\s`, `(?m)^2\s`)

	c.must(t, "rollout", "undo", "-n", ns, "deployment/web")
	c.must(t, "rollout", "status", "-n", ns, "deployment/web", "--timeout=180s")
	if got := c.jsonpath(t, ns, "deployment/web", "{.spec.template.spec.containers[0].image}"); got != v1 {
		t.Errorf("after rollout undo the template's image is %q, want %q", got, v1)
	}
	wantMatch(t, c.must(t, "rollout", "history", "-n", ns, "deployment/web"), `(?m)^3\s`)
	if _, failed, report := poll(); failed != failedBefore {
		t.Errorf("requests failed during the undo:\n%s", report)
	}

	// Foreground: the Deployment waits, with its finalizer, until its ReplicaSets and their
	// pods are gone.
	c.must(t, "delete", "-n", ns, "deployment/web", "--cascade=foreground", "--wait=false")
	c.must(t, "wait", "-n", ns, "deployment/web", "--for=delete", "--timeout=120s")
	if out := c.must(t, "get", "-n", ns, "rs,pods", "-l", "app=web", "-o", "name"); out != "" {
		t.Errorf("left after the Deployment's foreground deletion:\n%s", out)
	}
}

// TestStatefulSetOrdered: a StatefulSet's pods come up one at a time, each after the one
// before it is ready, with stable names that the cluster DNS resolves through the headless
// Service.
func TestStatefulSetOrdered(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	image := netexecImage(t)
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{name: http, port: 8080}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 3
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: server
        image: %s
        command: ["/netexec", "--http-port=8080"]
        readinessProbe:
          httpGet: {path: /healthz, port: 8080}
          periodSeconds: 1
`, image), "apply", "-n", ns, "-f", "-")
	c.must(t, "rollout", "status", "-n", ns, "statefulset/db", "--timeout=180s")
	// Each pod was created after the one before it became ready.
	for i := 1; i < 3; i++ {
		created := c.jsonpath(t, ns, fmt.Sprintf("pod/db-%d", i), "{.metadata.creationTimestamp}")
		readyBefore := c.jsonpath(t, ns, fmt.Sprintf("pod/db-%d", i-1), `{.status.conditions[?(@.type=="Ready")].lastTransitionTime}`)
		if created < readyBefore {
			t.Errorf("db-%d was created at %s, before db-%d was ready at %s", i, created, i-1, readyBefore)
		}
	}
	for i := range 3 {
		name := fmt.Sprintf("db-%d", i)
		ip := c.jsonpath(t, ns, "pod/"+name, "{.status.podIP}")
		if got := c.jsonpath(t, ns, "pod/"+name, "{.spec.hostname}.{.spec.subdomain}"); got != name+".db" {
			t.Errorf("pod %s: hostname.subdomain %q", name, got)
		}
		fqdn := fmt.Sprintf("%s.db.%s.svc.cluster.local", name, ns)
		eventually(t, 30*time.Second, fqdn+" to resolve to "+ip, func() bool {
			r := c.kubectl(t, "exec", "-n", ns, "db-0", "--", "/netexec", "--lookup", fqdn)
			return r.code == 0 && strings.TrimSpace(r.stdout) == ip
		})
	}
	wantMatch(t, c.must(t, "get", "-n", ns, "statefulset/db"), `(?m)^db\s+3/3\s`)
}

// TestDaemonSetOnNode: a DaemonSet runs one pod on the node, placed by the scheduler through
// node affinity.
func TestDaemonSetOnNode(t *testing.T) {
	t.Parallel()
	c, n := nodeCluster(t)
	ns := c.newNamespace(t)
	c.mustIn(t, fmt.Sprintf(`apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - {name: agent, image: %s, command: ["sleep", "3600"]}
`, busyboxImage(t)), "apply", "-n", ns, "-f", "-")
	c.must(t, "rollout", "status", "-n", ns, "daemonset/agent", "--timeout=120s")
	pods := c.jsonpath(t, ns, "pods", `{range .items[*]}{.spec.nodeName}{" "}{.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].values[0]}{"\n"}{end}`)
	if want := n.name + " " + n.name + "\n"; pods != want {
		t.Errorf("the DaemonSet's pods (node, affinity): %q, want %q", pods, want)
	}
	wantMatch(t, c.must(t, "get", "-n", ns, "daemonset/agent"), `(?m)^agent\s+1\s+1\s+1\s+1\s+1\s`)
}

// TestJobs: a Job with completions 5 and parallelism 2 completes with never more than two
// pods at once; an Indexed Job's pods get their indexes; a failing Job stops at its
// backoffLimit with BackoffLimitExceeded.
func TestJobs(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	image := busyboxImage(t)
	c.mustIn(t, fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: five}
spec:
  completions: 5
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - {name: work, image: %[1]s, command: ["sh", "-c", "sleep 1"]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: indexed}
spec:
  completions: 3
  parallelism: 3
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - {name: work, image: %[1]s, command: ["sh", "-c", "echo index=$JOB_COMPLETION_INDEX"]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: failing}
spec:
  backoffLimit: 1
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - {name: work, image: %[1]s, command: ["sh", "-c", "exit 3"]}
`, image), "apply", "-n", ns, "-f", "-")
	c.must(t, "wait", "-n", ns, "job/five", "job/indexed", "--for=condition=Complete", "--timeout=180s")
	wantMatch(t, c.must(t, "get", "-n", ns, "job/five"), `(?m)^five\s+Complete\s+5/5\s`)
	if got := c.jsonpath(t, ns, "job/indexed", "{.status.completedIndexes}"); got != "0-2" {
		t.Errorf("the Indexed Job's completedIndexes: %q, want 0-2", got)
	}
	for i := range 3 {
		pod := c.must(t, "get", "-n", ns, "pods", "-l", "batch.kubernetes.io/job-name=indexed,batch.kubernetes.io/job-completion-index="+strconv.Itoa(i), "-o", "name")
		if logs := c.must(t, "logs", "-n", ns, strings.TrimSpace(pod)); strings.TrimSpace(logs) != fmt.Sprintf("index=%d", i) {
			t.Errorf("the pod of index %d printed %q", i, logs)
		}
	}
	c.must(t, "wait", "-n", ns, "job/failing", "--for=condition=Failed", "--timeout=180s")
	if got := c.jsonpath(t, ns, "job/failing", `{.status.conditions[?(@.type=="Failed")].reason} {.status.failed}`); got != "BackoffLimitExceeded 2" {
		t.Errorf("the failing Job's reason and failures: %q, want BackoffLimitExceeded 2", got)
	}
}

// TestCronJobRuns: a CronJob that runs every minute creates a Job that completes, and shows
// its last schedule.
func TestCronJobRuns(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	c.must(t, "create", "cronjob", "tick", "-n", ns, "--image="+busyboxImage(t), "--schedule=* * * * *", "--", "true")
	c.waitFor(t, ns, "cronjob/tick", "{.status.lastSuccessfulTime}", "to have run a Job to completion", func(v string) bool { return v != "" })
	jobs := c.must(t, "get", "-n", ns, "jobs", "-o", "name")
	wantMatch(t, jobs, `^job\.batch/tick-[0-9]+\n?`)
}

// budgetedApp is a Deployment "app" of two sleeping pods under a PodDisruptionBudget of
// minAvailable.
func budgetedApp(image string, minAvailable int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: app}
spec:
  replicas: 2
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - {name: app, image: %s, command: ["sleep", "3600"]}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: app}
spec:
  minAvailable: %d
  selector: {matchLabels: {app: app}}
`, image, minAvailable)
}

// TestEvictionHonoursBudget: a PodDisruptionBudget that allows no disruption makes an
// eviction fail with 429 and Kubernetes' message; once it allows one, the eviction deletes
// the pod.
func TestEvictionHonoursBudget(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	c.mustIn(t, budgetedApp(busyboxImage(t), 2), "apply", "-n", ns, "-f", "-")
	c.must(t, "rollout", "status", "-n", ns, "deployment/app", "--timeout=120s")
	c.waitFor(t, ns, "pdb/app", "{.status.currentHealthy}/{.status.disruptionsAllowed}", "to count two healthy pods", func(v string) bool { return v == "2/0" })
	pod := strings.TrimPrefix(strings.Fields(c.must(t, "get", "-n", ns, "pods", "-l", "app=app", "-o", "name"))[0], "pod/")
	eviction := fmt.Sprintf(`{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": %q, "namespace": %q}}`, pod, ns)
	path := fmt.Sprintf("/api/v1/namespaces/%s/pods/%s/eviction", ns, pod)
	r := c.kubectlIn(t, eviction, "create", "--raw", path, "-f", "-")
	if r.code == 0 || !strings.Contains(r.stderr, "Cannot evict pod as it would violate the pod's disruption budget.") || !strings.Contains(r.stderr, "(TooManyRequests)") {
		t.Errorf("an eviction the budget forbids: code %d, %s%s", r.code, r.stdout, r.stderr)
	}
	c.must(t, "patch", "-n", ns, "pdb/app", "--type=merge", "-p", `{"spec":{"minAvailable":1}}`)
	c.waitFor(t, ns, "pdb/app", "{.status.disruptionsAllowed}", "to allow one disruption", func(v string) bool { return v == "1" })
	c.mustIn(t, eviction, "create", "--raw", path, "-f", "-")
	c.must(t, "wait", "-n", ns, "pod/"+pod, "--for=delete", "--timeout=60s")
}

// TestKubectlWorkloadVerbs: kubectl's imperative workload commands do on berth what they do on
// a real cluster: create deployment, scale (through the scale subresource), rollout
// pause/resume/restart, create job (also --from a CronJob) and delete --cascade=orphan.
func TestKubectlWorkloadVerbs(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	image := busyboxImage(t)
	c.must(t, "create", "deployment", "verbs", "-n", ns, "--image="+image, "--replicas=1", "--", "sleep", "3600")
	c.must(t, "rollout", "status", "-n", ns, "deployment/verbs", "--timeout=120s")
	wantMatch(t, c.must(t, "get", "-n", ns, "deployment/verbs"), `(?m)^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE$`, `(?m)^verbs\s+1/1\s+1\s+1\s`)

	c.must(t, "scale", "-n", ns, "deployment/verbs", "--replicas=3")
	c.must(t, "rollout", "status", "-n", ns, "deployment/verbs", "--timeout=120s")
	if got := c.jsonpath(t, ns, "deployment/verbs", "{.status.availableReplicas}"); got != "3" {
		t.Errorf("after kubectl scale --replicas=3: %s available", got)
	}

	// Paused, a template change makes no new ReplicaSet; resumed, it rolls out.
	c.must(t, "rollout", "pause", "-n", ns, "deployment/verbs")
	c.must(t, "set", "env", "-n", ns, "deployment/verbs", "PAUSED=yes")
	c.waitFor(t, ns, "deployment/verbs", `{.status.conditions[?(@.type=="Progressing")].reason}`, "to say it is paused", func(v string) bool { return v == "DeploymentPaused" })
	if rs := c.must(t, "get", "-n", ns, "rs", "-o", "name"); strings.Count(rs, "\n") != 1 {
		t.Errorf("a paused Deployment made a ReplicaSet:\n%s", rs)
	}
	c.must(t, "rollout", "resume", "-n", ns, "deployment/verbs")
	c.must(t, "rollout", "status", "-n", ns, "deployment/verbs", "--timeout=120s")
	c.must(t, "rollout", "restart", "-n", ns, "deployment/verbs")
	c.must(t, "rollout", "status", "-n", ns, "deployment/verbs", "--timeout=120s")
	wantMatch(t, c.must(t, "rollout", "history", "-n", ns, "deployment/verbs"), `(?m)^3\s`)

	// Orphaned, the ReplicaSets stay (without their owner reference) and their pods run on.
	c.must(t, "delete", "-n", ns, "deployment/verbs", "--cascade=orphan")
	eventually(t, 30*time.Second, "the ReplicaSets to be released", func() bool {
		owners := c.jsonpath(t, ns, "rs", "{range .items[*]}{.metadata.name}={.metadata.ownerReferences[*].name};{end}")
		return owners != "" && !strings.Contains(owners, "=verbs")
	})

	c.must(t, "create", "job", "once", "-n", ns, "--image="+image, "--", "true")
	c.must(t, "wait", "-n", ns, "job/once", "--for=condition=Complete", "--timeout=120s")
	wantMatch(t, c.must(t, "get", "-n", ns, "job/once"), `(?m)^NAME\s+STATUS\s+COMPLETIONS\s+DURATION\s+AGE$`, `(?m)^once\s+Complete\s+1/1\s`)
	c.must(t, "create", "cronjob", "nightly", "-n", ns, "--image="+image, "--schedule=0 3 * * *", "--", "true")
	c.must(t, "create", "job", "manual", "-n", ns, "--from=cronjob/nightly")
	c.must(t, "wait", "-n", ns, "job/manual", "--for=condition=Complete", "--timeout=120s")
}

// TestDrainHonoursBudget: kubectl drain evicts a node's pods through the eviction subresource
// and so stops where a PodDisruptionBudget forbids: of a Deployment's two pods under
// minAvailable 1, one is evicted, and the other is refused while its replacement cannot be
// scheduled on the cordoned node; after uncordon, both run again.
func TestDrainHonoursBudget(t *testing.T) {
	t.Parallel()
	c, a := ownNode(t, "drain", "")
	ns := c.newNamespace(t)
	c.mustIn(t, budgetedApp(busyboxImage(t), 1), "apply", "-n", ns, "-f", "-")
	c.must(t, "rollout", "status", "-n", ns, "deployment/app", "--timeout=120s")
	c.waitFor(t, ns, "pdb/app", "{.status.disruptionsAllowed}", "to allow one disruption", func(v string) bool { return v == "1" })

	r := c.kubectl(t, "drain", a.node.name, "--ignore-daemonsets", "--pod-selector=app=app", "--timeout=25s")
	if r.code == 0 {
		t.Fatalf("drain succeeded although the budget forbids the second eviction:\n%s%s", r.stdout, r.stderr)
	}
	wantContains(t, r.stdout+r.stderr, "Cannot evict pod as it would violate the pod's disruption budget.")
	wantContains(t, c.must(t, "get", "node", a.node.name), "SchedulingDisabled")
	if got := c.jsonpath(t, ns, "pods", `{range .items[?(@.status.phase=="Running")]}{.metadata.name}{"\n"}{end}`); strings.Count(got, "\n") != 1 {
		t.Errorf("running pods after the drain stopped at the budget:\n%s", got)
	}

	c.must(t, "uncordon", a.node.name)
	c.must(t, "rollout", "status", "-n", ns, "deployment/app", "--timeout=120s")
}
