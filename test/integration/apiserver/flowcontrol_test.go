package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// The default configuration of a v1.37 kube-apiserver.
var (
	defaultPriorityLevels = []string{"exempt", "catch-all", "system", "node-high", "leader-election", "workload-high", "workload-low", "global-default"}
	defaultFlowSchemas    = []string{"exempt", "catch-all", "system-nodes", "system-node-high", "probes", "system-leader-election",
		"kube-controller-manager", "kube-scheduler", "kube-system-service-accounts", "service-accounts", "global-default"}
)

// TestFlowControlDefaults: the priority-and-fairness-config-producer hook has put the default
// configuration in place by the time the server is ready; a mandatory object is put back
// when deleted or taken over, and its spec cannot be changed; a suggested object an admin
// takes over keeps the admin's spec until handed back.
func TestFlowControlDefaults(t *testing.T) {
	ctx := testContext(t)
	c := sharedCluster(t)
	fc := c.Client.FlowcontrolV1()

	readyz, err := c.Client.CoreV1().RESTClient().Get().AbsPath("/readyz").Param("verbose", "true").DoRaw(ctx)
	if err != nil || !strings.Contains(string(readyz), "[+]poststarthook/priority-and-fairness-config-producer ok") {
		t.Errorf("/readyz?verbose = %s, %v; want the priority-and-fairness-config-producer hook done", readyz, err)
	}
	for _, name := range defaultPriorityLevels {
		pl, err := fc.PriorityLevelConfigurations().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("priority level %s: %v", name, err)
			continue
		}
		if pl.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "true" {
			t.Errorf("priority level %s annotations %v", name, pl.Annotations)
		}
	}
	for _, name := range defaultFlowSchemas {
		if _, err := fc.FlowSchemas().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("flow schema %s: %v", name, err)
		}
	}
	pl, err := fc.PriorityLevelConfigurations().Get(ctx, "workload-low", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l := pl.Spec.Limited; l == nil || *l.NominalConcurrencyShares != 100 || l.LimitResponse.Queuing.Queues != 128 {
		t.Errorf("workload-low spec %+v", pl.Spec)
	}

	// Deleted: back at once.
	old, err := fc.PriorityLevelConfigurations().Get(ctx, "catch-all", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := fc.PriorityLevelConfigurations().Delete(ctx, "catch-all", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "catch-all recreated", func() (bool, error) {
		pl, err := fc.PriorityLevelConfigurations().Get(ctx, "catch-all", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && pl.UID != old.UID, err
	})

	// Taken over: handed back.
	setAutoUpdate(t, ctx, c.Client, "catch-all", "false", nil)
	waitFor(t, ctx, "catch-all's annotation restored", func() (bool, error) {
		fs, err := fc.FlowSchemas().Get(ctx, "catch-all", metav1.GetOptions{})
		return err == nil && fs.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] == "true", err
	})

	// Its spec is fixed.
	fs, err := fc.FlowSchemas().Get(ctx, "catch-all", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fs.Spec.MatchingPrecedence = 5000
	_, err = fc.FlowSchemas().Update(ctx, fs, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !hasCause(err, "spec", "spec of 'catch-all' must equal the fixed value") {
		t.Errorf("changing catch-all's spec: %v, want 422 on spec", err)
	}

	// A suggested level taken over keeps the admin's spec...
	t.Cleanup(func() { setAutoUpdateLevel(t, context.Background(), c.Client, "workload-low", "true", nil) })
	setAutoUpdateLevel(t, ctx, c.Client, "workload-low", "false", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
		pl.Spec.Limited.NominalConcurrencyShares = ptr.To(int32(7))
	})
	time.Sleep(time.Second) // long enough for a change to trigger the producer
	pl, err = fc.PriorityLevelConfigurations().Get(ctx, "workload-low", metav1.GetOptions{})
	if err != nil || *pl.Spec.Limited.NominalConcurrencyShares != 7 || pl.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "false" {
		t.Errorf("workload-low taken over: %v, %v", pl, err)
	}
	// ...until handed back.
	setAutoUpdateLevel(t, ctx, c.Client, "workload-low", "true", nil)
	waitFor(t, ctx, "workload-low's spec restored", func() (bool, error) {
		pl, err := fc.PriorityLevelConfigurations().Get(ctx, "workload-low", metav1.GetOptions{})
		return err == nil && *pl.Spec.Limited.NominalConcurrencyShares == 100, err
	})
}

// TestFlowControlCRUD: defaults, generations, the status subresource, 422s naming the field,
// and kubectl's tables.
func TestFlowControlCRUD(t *testing.T) {
	ctx := testContext(t)
	c := sharedCluster(t)
	levels, schemas := c.Client.FlowcontrolV1().PriorityLevelConfigurations(), c.Client.FlowcontrolV1().FlowSchemas()

	pl, err := levels.Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "test-level"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{LimitResponse: flowcontrolv1.LimitResponse{
				Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = levels.Delete(context.Background(), "test-level", metav1.DeleteOptions{}) })
	l := pl.Spec.Limited
	if q := l.LimitResponse.Queuing; *l.NominalConcurrencyShares != 30 || *l.LendablePercent != 0 || q.Queues != 64 || q.HandSize != 8 || q.QueueLengthLimit != 50 || pl.Generation != 1 {
		t.Errorf("defaults: %+v %+v, generation %d", l, q, pl.Generation)
	}
	pl.Spec.Limited.NominalConcurrencyShares = ptr.To(int32(0)) // v1 keeps an explicit 0
	if pl, err = levels.Update(ctx, pl, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if *pl.Spec.Limited.NominalConcurrencyShares != 0 || pl.Generation != 2 {
		t.Errorf("after update: %d shares, generation %d; want 0 and 2", *pl.Spec.Limited.NominalConcurrencyShares, pl.Generation)
	}
	pl.Status.Conditions = []flowcontrolv1.PriorityLevelConfigurationCondition{{Type: "Test", Status: flowcontrolv1.ConditionTrue}}
	pl.Spec.Limited.NominalConcurrencyShares = ptr.To(int32(9)) // ignored by the status subresource
	if pl, err = levels.UpdateStatus(ctx, pl, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(pl.Status.Conditions) != 1 || *pl.Spec.Limited.NominalConcurrencyShares != 0 || pl.Generation != 2 {
		t.Errorf("after a status update: %+v, %d shares, generation %d", pl.Status, *pl.Spec.Limited.NominalConcurrencyShares, pl.Generation)
	}

	fs, err := schemas.Create(ctx, &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "test-schema"},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "test-level"},
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByNamespaceType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects:      []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "testers"}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"}}},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = schemas.Delete(context.Background(), "test-schema", metav1.DeleteOptions{}) })
	if fs.Spec.MatchingPrecedence != 1000 || fs.Generation != 1 {
		t.Errorf("matchingPrecedence %d, generation %d; want 1000 and 1", fs.Spec.MatchingPrecedence, fs.Generation)
	}

	for _, tc := range []struct {
		name        string
		create      func() error
		field, want string
	}{
		{"hand bigger than deck", func() error {
			bad := pl.DeepCopy()
			bad.ObjectMeta = metav1.ObjectMeta{Name: "bad-level"}
			bad.Spec.Limited.LimitResponse.Queuing.HandSize = 100
			_, err := levels.Create(ctx, bad, metav1.CreateOptions{})
			return err
		}, "spec.limited.limitResponse.queuing.handSize", "should not be greater than queues (64)"},
		{"queuing under reject", func() error {
			bad := pl.DeepCopy()
			bad.ObjectMeta = metav1.ObjectMeta{Name: "bad-level"}
			bad.Spec.Limited.LimitResponse.Type = flowcontrolv1.LimitResponseTypeReject
			_, err := levels.Create(ctx, bad, metav1.CreateOptions{})
			return err
		}, "spec.limited.limitResponse.queuing", ""},
		{"exempt type not named exempt", func() error {
			_, err := levels.Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "bad-level"},
				Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt}}, metav1.CreateOptions{})
			return err
		}, "spec.type", "must be 'Exempt' if and only if `name` is 'exempt'"},
		{"precedence 1", func() error {
			bad := fs.DeepCopy()
			bad.ObjectMeta = metav1.ObjectMeta{Name: "bad-schema"}
			bad.Spec.MatchingPrecedence = 1
			_, err := schemas.Create(ctx, bad, metav1.CreateOptions{})
			return err
		}, "spec.matchingPrecedence", "only the schema named 'exempt' may have matchingPrecedence 1"},
		{"subject without group", func() error {
			bad := fs.DeepCopy()
			bad.ObjectMeta = metav1.ObjectMeta{Name: "bad-schema"}
			bad.Spec.Rules[0].Subjects[0].Group = nil
			_, err := schemas.Create(ctx, bad, metav1.CreateOptions{})
			return err
		}, "spec.rules[0].subjects[0].group", "group is required when subject kind is 'Group'"},
	} {
		if err := tc.create(); !apierrors.IsInvalid(err) || !hasCause(err, tc.field, tc.want) {
			t.Errorf("%s: %v, want 422 on %s", tc.name, err, tc.field)
		}
	}

	// kubectl get: upstream's columns, schemas in matching order.
	for _, tc := range []struct {
		path     string
		columns  string
		firstRow string
	}{
		{"/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", "Name PriorityLevel MatchingPrecedence DistinguisherMethod Age MissingPL", "exempt exempt 1 <none>"},
		{"/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations/test-level", "Name Type NominalConcurrencyShares Queues HandSize QueueLengthLimit Age", "test-level Limited 0 64 8 50"},
	} {
		table := &metav1.Table{}
		err := c.Client.CoreV1().RESTClient().Get().AbsPath(tc.path).
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Into(table)
		if err != nil || len(table.Rows) == 0 {
			t.Errorf("%s as a table: %v", tc.path, err)
			continue
		}
		var cols []string
		for _, col := range table.ColumnDefinitions {
			cols = append(cols, col.Name)
		}
		if got := strings.Join(cols, " "); got != tc.columns {
			t.Errorf("%s columns %s, want %s", tc.path, got, tc.columns)
		}
		var cells []string
		for _, cell := range table.Rows[0].Cells[:len(strings.Fields(tc.firstRow))] {
			cells = append(cells, fmt.Sprint(cell))
		}
		if got := strings.Join(cells, " "); got != tc.firstRow {
			t.Errorf("%s first row %q, want %q", tc.path, got, tc.firstRow)
		}
	}

	if err := schemas.Delete(ctx, "test-schema", metav1.DeleteOptions{}); err != nil {
		t.Error(err)
	}
	if err := levels.Delete(ctx, "test-level", metav1.DeleteOptions{}); err != nil {
		t.Error(err)
	}
}

func waitFor(t *testing.T, ctx context.Context, what string, done func() (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		ok, _ := done()
		return ok, nil
	}); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// setAutoUpdate sets the annotation of a flow schema, and changes it with mutate.
func setAutoUpdate(t *testing.T, ctx context.Context, client kubernetes.Interface, name, value string, mutate func(*flowcontrolv1.FlowSchema)) {
	t.Helper()
	schemas := client.FlowcontrolV1().FlowSchemas()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fs, err := schemas.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		fs.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = value
		if mutate != nil {
			mutate(fs)
		}
		_, err = schemas.Update(ctx, fs, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatalf("setting %s's annotation: %v", name, err)
	}
}

// setAutoUpdateLevel is setAutoUpdate for a priority level.
func setAutoUpdateLevel(t *testing.T, ctx context.Context, client kubernetes.Interface, name, value string, mutate func(*flowcontrolv1.PriorityLevelConfiguration)) {
	t.Helper()
	levels := client.FlowcontrolV1().PriorityLevelConfigurations()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pl, err := levels.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pl.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = value
		if mutate != nil {
			mutate(pl)
		}
		_, err = levels.Update(ctx, pl, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatalf("setting %s's annotation: %v", name, err)
	}
}

// TestPriorityAndFairness: API Priority and Fairness classifies each request by the flow
// schemas, as kube-apiserver does: the response names the schema and the priority level
// that took it (the admin's requests are exempt); a schema added for a user takes that
// user's requests; and the configuration consumer marks a schema whose level does not exist
// as dangling.
func TestPriorityAndFairness(t *testing.T) {
	ctx := testContext(t)
	c := sharedCluster(t)
	fc := c.Client.FlowcontrolV1()

	classifiedAs := func(config *rest.Config) (schemaUID, levelUID string) {
		t.Helper()
		client, err := rest.HTTPClientFor(config)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Get(strings.TrimSuffix(config.Host, "/") + "/version")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /version as %q: %s", config.Impersonate.UserName, resp.Status)
		}
		return resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID), resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID)
	}

	exempt, err := fc.FlowSchemas().Get(ctx, flowcontrolv1.FlowSchemaNameExempt, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if schema, _ := classifiedAs(c.Config); schema != string(exempt.UID) {
		t.Errorf("the admin's request went to flow schema %q, want exempt's %q", schema, exempt.UID)
	}

	level, err := fc.PriorityLevelConfigurations().Get(ctx, "workload-low", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	schema, err := fc.FlowSchemas().Create(ctx, &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "apf-test-user"},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level.Name},
			MatchingPrecedence:         600,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects:         []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "apf-test-user"}}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"*"}}},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fc.FlowSchemas().Delete(context.Background(), schema.Name, metav1.DeleteOptions{}) })
	user := rest.CopyConfig(c.Config)
	user.Impersonate = rest.ImpersonationConfig{UserName: "apf-test-user", Groups: []string{"system:authenticated"}}
	// The filter sees the new schema once the configuration consumer has read it.
	waitFor(t, ctx, "the new flow schema to classify the user's requests", func() (bool, error) {
		s, l := classifiedAs(user)
		return s == string(schema.UID) && l == string(level.UID), nil
	})

	dangling, err := fc.FlowSchemas().Create(ctx, &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "apf-dangling"},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "no-such-level"},
			MatchingPrecedence:         700,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fc.FlowSchemas().Delete(context.Background(), dangling.Name, metav1.DeleteOptions{}) })
	waitFor(t, ctx, "the dangling flow schema's condition", func() (bool, error) {
		s, err := fc.FlowSchemas().Get(ctx, dangling.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range s.Status.Conditions {
			if cond.Type == flowcontrolv1.FlowSchemaConditionDangling {
				return cond.Status == flowcontrolv1.ConditionTrue && cond.Reason == "NotFound", nil
			}
		}
		return false, nil
	})
}
