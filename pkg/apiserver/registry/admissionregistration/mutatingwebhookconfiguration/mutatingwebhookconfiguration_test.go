package mutatingwebhookconfiguration

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func newConfig(mutate ...func(*admissionregistrationv1.MutatingWebhookConfiguration)) *admissionregistrationv1.MutatingWebhookConfiguration {
	c := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "config"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "webhook.k8s.io",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "svc"}},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	for _, m := range mutate {
		m(c)
	}
	SetDefaults(c)
	return c
}

func TestValidate(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		mutate func(*admissionregistrationv1.MutatingWebhookConfiguration)
		want   string
	}{
		{"valid", func(*admissionregistrationv1.MutatingWebhookConfiguration) {}, ""},
		{"bad name", func(c *admissionregistrationv1.MutatingWebhookConfiguration) { c.Name = "!!!!" }, `metadata.name: Invalid value: "!!!!":`},
		{"reserved name", func(c *admissionregistrationv1.MutatingWebhookConfiguration) { c.Name = "x.static.k8s.io" }, "are reserved for static manifest-based configurations"},
		{"no side effects", func(c *admissionregistrationv1.MutatingWebhookConfiguration) { c.Webhooks[0].SideEffects = nil },
			"webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun"},
		{"duplicate", func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks = append(c.Webhooks, c.Webhooks[0])
		},
			`webhooks[1].name: Duplicate value: "webhook.k8s.io"`},
		{"reinvocation policy", func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].ReinvocationPolicy = ptr.To[admissionregistrationv1.ReinvocationPolicyType]("Always")
		}, `webhooks[0].reinvocationPolicy: Unsupported value: "Always": supported values: "IfNeeded", "Never"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := Strategy.Validate(ctx, newConfig(tc.mutate))
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("want valid, got %v", errs)
			case tc.want != "" && (len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.want)):
				t.Errorf("got %v, want %q", errs, tc.want)
			}
		})
	}
}

func TestDefaultsAndStrategy(t *testing.T) {
	ctx := context.Background()
	c := newConfig()
	h := c.Webhooks[0]
	if *h.FailurePolicy != admissionregistrationv1.Fail || *h.TimeoutSeconds != 10 || *h.ClientConfig.Service.Port != 443 ||
		*h.ReinvocationPolicy != admissionregistrationv1.NeverReinvocationPolicy {
		t.Errorf("defaults not applied: %+v", h)
	}
	Strategy.PrepareForCreate(ctx, c)
	if c.Generation != 1 {
		t.Errorf("generation %d on create", c.Generation)
	}
	same := c.DeepCopy()
	Strategy.PrepareForUpdate(ctx, same, c)
	changed := c.DeepCopy()
	changed.Webhooks[0].TimeoutSeconds = ptr.To[int32](5)
	Strategy.PrepareForUpdate(ctx, changed, c)
	if same.Generation != 1 || changed.Generation != 2 {
		t.Errorf("generations %d (unchanged) and %d (changed), want 1 and 2", same.Generation, changed.Generation)
	}
	if Strategy.AllowUnconditionalUpdate(ctx) {
		t.Error("updates must name a resourceVersion, as upstream")
	}
	// A stored configuration with side effects may still be updated.
	old := newConfig(func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
		c.Webhooks[0].SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome)
	})
	update := old.DeepCopy()
	update.Labels = map[string]string{"a": "b"}
	if errs := Strategy.ValidateUpdate(ctx, update, old); len(errs) > 0 {
		t.Errorf("update of a stored configuration: %v", errs)
	}
}

func TestTable(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	c := newConfig()
	c.CreationTimestamp = metav1.NewTime(now.Add(-2 * time.Hour))
	tbl, err := newTableConvertor(clocktesting.NewFakePassiveClock(now)).ConvertToTable(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, col := range tbl.ColumnDefinitions {
		names = append(names, col.Name)
	}
	if want := []string{"Name", "Webhooks", "Age"}; !reflect.DeepEqual(names, want) {
		t.Errorf("columns %v", names)
	}
	if want := []any{"config", int64(1), "120m"}; !reflect.DeepEqual(tbl.Rows[0].Cells, want) {
		t.Errorf("row %v, want %v", tbl.Rows[0].Cells, want)
	}
}
