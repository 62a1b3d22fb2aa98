package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
)

// CRDOptions configure the crds scenario.
type CRDOptions struct {
	// CRDs is how many CustomResourceDefinitions are installed.
	CRDs int
	// IdleWait is how long the cluster idles before each memory reading.
	IdleWait time.Duration
}

// RunCRDs measures what installed CustomResourceDefinitions cost a berth up it starts: its
// memory idle before, with CRDs installed and one custom resource of each written (which
// builds each CRD's storage and handlers), and after a restart with them; how long the CRDs
// take to be Established; the first write of each kind; and how long a restart takes until
// /readyz says yes and until every kind is served.
func RunCRDs(ctx context.Context, out io.Writer, o CRDOptions) error {
	t, err := startCluster(ctx, clusterOptions{})
	if err != nil {
		return err
	}
	defer func() { t.stop() }()
	idle := func() error {
		select {
		case <-time.After(o.IdleWait):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := idle(); err != nil {
		return err
	}
	rssBefore := t.rssBytes()

	crds, err := apiextensionsclient.NewForConfig(t.config)
	if err != nil {
		return err
	}
	start := time.Now()
	for i := range o.CRDs {
		if _, err := crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, benchCRD(i), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating CRD %d: %w", i, err)
		}
	}
	if err := waitEstablished(ctx, crds, o.CRDs); err != nil {
		return err
	}
	established := time.Since(start)

	dyn, err := dynamic.NewForConfig(t.config)
	if err != nil {
		return err
	}
	first := &latencies{name: "first custom resource of a kind"}
	for i := range o.CRDs {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "bench.berth.dev/v1", "kind": fmt.Sprintf("Widget%d", i),
			"metadata": map[string]any{"name": "w"},
			"spec":     map[string]any{"size": int64(3), "color": "blue"},
		}}
		began := time.Now()
		// Right after Established the kind may still be missing from the handler's cache
		// for a moment, as upstream's: retry until it is served.
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := dyn.Resource(benchGVR(i)).Namespace("default").Create(ctx, obj, metav1.CreateOptions{})
			return err == nil, nil
		})
		if err != nil {
			return fmt.Errorf("creating a Widget%d: %w", i, err)
		}
		first.add(time.Since(began))
	}
	if err := idle(); err != nil {
		return err
	}
	rssWith := t.rssBytes()

	// A restart with the CRDs stored.
	t.child.stop(30 * time.Second)
	restartBegan := time.Now()
	next, err := startClusterIn(ctx, clusterOptions{}, t.dir)
	if err != nil {
		return fmt.Errorf("restarting: %w", err)
	}
	t = next
	ready := time.Since(restartBegan)
	if dyn, err = dynamic.NewForConfig(t.config); err != nil {
		return err
	}
	for i := range o.CRDs {
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := dyn.Resource(benchGVR(i)).Namespace("default").Get(ctx, "w", metav1.GetOptions{})
			return err == nil, nil
		})
		if err != nil {
			return fmt.Errorf("Widget%d after the restart: %w", i, err)
		}
	}
	served := time.Since(restartBegan)
	if err := idle(); err != nil {
		return err
	}
	rssRestarted := t.rssBytes()

	mb := func(b int64) float64 { return float64(b) / (1 << 20) }
	fmt.Fprintf(out, "CRDs installed:                        %d\n", o.CRDs)
	fmt.Fprintf(out, "all Established after:                 %v\n", established.Round(time.Millisecond))
	printTable(out, []*latencies{first})
	fmt.Fprintf(out, "idle RSS, no CRD:                      %.1f MiB\n", mb(rssBefore))
	fmt.Fprintf(out, "idle RSS, CRDs and one object each:    %.1f MiB (%.2f MiB a CRD)\n", mb(rssWith), (mb(rssWith)-mb(rssBefore))/float64(max(o.CRDs, 1)))
	fmt.Fprintf(out, "restart: /readyz after %v, every kind served after %v\n", ready.Round(time.Millisecond), served.Round(time.Millisecond))
	fmt.Fprintf(out, "idle RSS after the restart:            %.1f MiB\n", mb(rssRestarted))
	return printJSON(out, map[string]interface{}{
		"scenario": "crds", "crds": o.CRDs,
		"established_s":             established.Seconds(),
		"first_cr_p50_ms":           ms(first.quantile(0.5)),
		"first_cr_p99_ms":           ms(first.quantile(0.99)),
		"idle_rss_mb":               mb(rssBefore),
		"idle_rss_with_crds_mb":     mb(rssWith),
		"restart_ready_s":           ready.Seconds(),
		"restart_all_served_s":      served.Seconds(),
		"idle_rss_after_restart_mb": mb(rssRestarted),
	})
}

func benchGVR(i int) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "bench.berth.dev", Version: "v1", Resource: fmt.Sprintf("widget%ds", i)}
}

// benchCRD is a CRD of the size operators ship: a structural schema of a dozen fields with
// defaults, an enum, a CEL rule, the status subresource and printer columns.
func benchCRD(i int) *apiextensionsv1.CustomResourceDefinition {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("widget%ds.bench.berth.dev", i)},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "bench.berth.dev",
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: fmt.Sprintf("widget%ds", i), Singular: fmt.Sprintf("widget%d", i),
				Kind: fmt.Sprintf("Widget%d", i), ListKind: fmt.Sprintf("Widget%dList", i),
			},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{
					{Name: "Size", Type: "integer", JSONPath: ".spec.size"},
					{Name: "Ready", Type: "string", JSONPath: ".status.conditions[?(@.type=='Ready')].status"},
				},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {
							Type:         "object",
							XValidations: apiextensionsv1.ValidationRules{{Rule: "self.size <= 100", Message: "size must be at most 100"}},
							Properties: map[string]apiextensionsv1.JSONSchemaProps{
								"size":     {Type: "integer", Minimum: ptr.To(1.0), Default: &apiextensionsv1.JSON{Raw: []byte("1")}},
								"color":    {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"red"`)}, {Raw: []byte(`"blue"`)}}},
								"image":    str,
								"replicas": {Type: "integer", Format: "int32"},
								"paused":   {Type: "boolean"},
								"labels":   {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &str}},
								"ports": {Type: "array", MaxItems: ptr.To[int64](16), Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
									Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"name": str, "port": {Type: "integer"}},
								}}},
							},
						},
						"status": {
							Type: "object",
							Properties: map[string]apiextensionsv1.JSONSchemaProps{
								"observedGeneration": {Type: "integer", Format: "int64"},
								"conditions": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
									Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
										"type": str, "status": str, "reason": str, "message": str, "lastTransitionTime": {Type: "string", Format: "date-time"},
									},
								}}},
							},
						},
					},
				}},
			}},
		},
	}
}

// waitEstablished waits until n CRDs of the scenario are Established.
func waitEstablished(ctx context.Context, crds apiextensionsclient.Interface, n int) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := crds.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		established := 0
		for _, crd := range list.Items {
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					established++
				}
			}
		}
		return established >= n, nil
	})
}
