package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAPIResourcesMatchUpstream: `kubectl api-resources -o wide` on berth up lists what it
// lists on a kube-apiserver v1.37.2 with its default flags, resource for resource: names,
// short names, versions, scope, kinds, verbs and categories; and discovery lists the same
// subresources with the same kinds and verbs. The upstream list is
// testdata/api-resources-v1.37.2.txt, written by hack/update-api-resources.sh from a real
// kube-apiserver. Groups that custom resources or aggregated APIs of other tests add to the
// shared cluster are left out of the comparison; nothing else may differ.
func TestAPIResourcesMatchUpstream(t *testing.T) {
	c := sharedCluster(t)
	want, err := os.ReadFile(filepath.Join("testdata", "api-resources-v1.37.2.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// A cache of its own: another test's kubectl may have cached discovery from before a
	// CRD came or went.
	out := c.must(t, "api-resources", "-o", "wide", "--cache-dir", t.TempDir())

	extensions := map[string]bool{}
	for _, g := range strings.Fields(c.must(t, "get", "crd", "-o", "jsonpath={.items[*].spec.group}")) {
		extensions[g] = true
	}
	for _, g := range strings.Fields(c.must(t, "get", "apiservices", "-o", `jsonpath={range .items[?(@.spec.service)]}{.spec.group}{" "}{end}`)) {
		extensions[g] = true
	}
	got := apiResourceLines(out, extensions)
	upstream := apiResourceLines(string(want), nil)
	for _, l := range upstream {
		if !slices.Contains(got, l) {
			t.Errorf("upstream lists, berth does not: %s", l)
		}
	}
	for _, l := range got {
		if !slices.Contains(upstream, l) {
			t.Errorf("berth lists, upstream does not: %s", l)
		}
	}
	if t.Failed() {
		t.Logf("berth's kubectl api-resources -o wide:\n%s", out)
	}

	// The subresources too, which api-resources does not show: their kinds and verbs are
	// what webhooks match and RBAC names (testdata/discovery-v1.37.2.txt).
	want, err = os.ReadFile(filepath.Join("testdata", "discovery-v1.37.2.txt"))
	if err != nil {
		t.Fatal(err)
	}
	got = discoveryLines(t, c, extensions)
	upstream = strings.Split(strings.TrimSpace(string(want)), "\n")
	for _, l := range upstream {
		if !slices.Contains(got, l) {
			t.Errorf("upstream's discovery has, berth's has not: %s", l)
		}
	}
	for _, l := range got {
		if !slices.Contains(upstream, l) {
			t.Errorf("berth's discovery has, upstream's has not: %s", l)
		}
	}
}

// discoveryLines are the resources and subresources of every group version c serves but
// those of the groups in skip, a line each: "GROUPVERSION NAME KIND NAMESPACED VERBS".
func discoveryLines(t *testing.T, c *cluster, skip map[string]bool) []string {
	t.Helper()
	paths := []string{"/api/v1"}
	var groups metav1.APIGroupList
	if err := json.Unmarshal([]byte(c.must(t, "get", "--raw", "/apis")), &groups); err != nil {
		t.Fatal(err)
	}
	for _, g := range groups.Groups {
		if skip[g.Name] {
			continue
		}
		for _, v := range g.Versions {
			paths = append(paths, "/apis/"+v.GroupVersion)
		}
	}
	var lines []string
	for _, p := range paths {
		var list metav1.APIResourceList
		if err := json.Unmarshal([]byte(c.must(t, "get", "--raw", p)), &list); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, r := range list.APIResources {
			verbs := slices.Clone([]string(r.Verbs))
			slices.Sort(verbs)
			lines = append(lines, fmt.Sprintf("%s %s %s %t %s", list.GroupVersion, r.Name, r.Kind, r.Namespaced, strings.Join(verbs, ",")))
		}
	}
	slices.Sort(lines)
	return lines
}

// apiResourceLines are the rows of `kubectl api-resources -o wide`, each with its columns
// joined by one space, leaving out the groups in skip.
func apiResourceLines(out string, skip map[string]bool) []string {
	var lines []string
	for i, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if i == 0 {
			continue // the header
		}
		fields := strings.Fields(l)
		group := ""
		for _, f := range fields {
			if strings.Contains(f, "/") || f == "v1" {
				group, _, _ = strings.Cut(f, "/")
				if f == "v1" {
					group = ""
				}
				break
			}
		}
		if skip[group] {
			continue
		}
		lines = append(lines, strings.Join(fields, " "))
	}
	slices.Sort(lines)
	return lines
}
