package flowcontrolbootstrap

import (
	"fmt"
	"slices"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/utils/ptr"
)

// installed is the default configuration as the producer leaves it: every object at
// generation 1 with the annotation saying "true".
func installed() Current {
	var c Current
	want := Default()
	for _, pl := range append(slices.Clone(want.SuggestedPriorityLevels), want.MandatoryPriorityLevels...) {
		pl = pl.DeepCopy()
		pl.Generation = 1
		pl.Annotations = map[string]string{flowcontrolv1.AutoUpdateAnnotationKey: "true"}
		c.PriorityLevels = append(c.PriorityLevels, pl)
	}
	for _, fs := range append(slices.Clone(want.SuggestedFlowSchemas), want.MandatoryFlowSchemas...) {
		fs = fs.DeepCopy()
		fs.Generation = 1
		fs.Annotations = map[string]string{flowcontrolv1.AutoUpdateAnnotationKey: "true"}
		c.FlowSchemas = append(c.FlowSchemas, fs)
	}
	return c
}

func (c Current) level(name string) *flowcontrolv1.PriorityLevelConfiguration {
	for _, pl := range c.PriorityLevels {
		if pl.Name == name {
			return pl
		}
	}
	panic(name)
}

func (c Current) schema(name string) *flowcontrolv1.FlowSchema {
	for _, fs := range c.FlowSchemas {
		if fs.Name == name {
			return fs
		}
	}
	panic(name)
}

// describe is an action as "Verb Kind/name annotation", with the annotation the written
// object carries.
func describe(a Action) string {
	var annotations map[string]string
	if a.PriorityLevel != nil {
		annotations = a.PriorityLevel.Annotations
	} else {
		annotations = a.FlowSchema.Annotations
	}
	return fmt.Sprintf("%s %s/%s %s", a.Verb, a.Kind(), a.Name(), annotations[flowcontrolv1.AutoUpdateAnnotationKey])
}

func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		name    string
		current func() Current
		want    []string
		check   func(t *testing.T, plan []Action)
	}{{
		name:    "up to date",
		current: installed,
	}, {
		name: "mandatory deleted",
		current: func() Current {
			c := installed()
			c.PriorityLevels = slices.DeleteFunc(c.PriorityLevels, func(pl *flowcontrolv1.PriorityLevelConfiguration) bool { return pl.Name == "catch-all" })
			c.FlowSchemas = slices.DeleteFunc(c.FlowSchemas, func(fs *flowcontrolv1.FlowSchema) bool { return fs.Name == "exempt" })
			return c
		},
		// Created as the library has them, annotation included.
		want: []string{"Create PriorityLevelConfiguration/catch-all true", "Create FlowSchema/exempt true"},
	}, {
		name: "mandatory taken over",
		current: func() Current {
			c := installed()
			c.schema("catch-all").Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = "false"
			c.level("catch-all").Spec.Limited.NominalConcurrencyShares = ptr.To(int32(1))
			return c
		},
		want: []string{"Update PriorityLevelConfiguration/catch-all true", "Update FlowSchema/catch-all true"},
		check: func(t *testing.T, plan []Action) {
			if got := *plan[0].PriorityLevel.Spec.Limited.NominalConcurrencyShares; got != 5 {
				t.Errorf("catch-all restored to %d shares, want 5", got)
			}
		},
	}, {
		name: "exempt's shares are the admin's",
		current: func() Current {
			c := installed()
			c.level("exempt").Spec.Exempt.NominalConcurrencyShares = ptr.To(int32(40))
			c.level("exempt").Generation = 2
			return c
		},
	}, {
		name: "suggested changed by an admin who kept auto-update",
		current: func() Current {
			c := installed()
			c.level("workload-low").Spec.Limited.NominalConcurrencyShares = ptr.To(int32(1))
			c.level("workload-low").Generation = 2
			return c
		},
		want: []string{"Update PriorityLevelConfiguration/workload-low true"},
		check: func(t *testing.T, plan []Action) {
			if got := *plan[0].PriorityLevel.Spec.Limited.NominalConcurrencyShares; got != 100 {
				t.Errorf("workload-low restored to %d shares, want 100", got)
			}
			if plan[0].PriorityLevel.Generation != 2 {
				t.Errorf("the revision lost the object's metadata")
			}
		},
	}, {
		name: "suggested taken over",
		current: func() Current {
			c := installed()
			c.level("workload-low").Spec.Limited.NominalConcurrencyShares = ptr.To(int32(1))
			c.level("workload-low").Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = "false"
			return c
		},
	}, {
		name: "suggested without annotation, unchanged since created",
		current: func() Current {
			c := installed()
			c.schema("probes").Annotations = nil
			c.schema("probes").Spec.MatchingPrecedence = 3
			return c
		},
		want: []string{"Update FlowSchema/probes true"},
		check: func(t *testing.T, plan []Action) {
			if got := plan[0].FlowSchema.Spec.MatchingPrecedence; got != 2 {
				t.Errorf("probes restored to precedence %d, want 2", got)
			}
		},
	}, {
		name: "suggested without annotation, changed since created",
		current: func() Current {
			c := installed()
			c.schema("probes").Annotations = map[string]string{"x": "y", flowcontrolv1.AutoUpdateAnnotationKey: "maybe"}
			c.schema("probes").Spec.MatchingPrecedence = 3
			c.schema("probes").Generation = 2
			return c
		},
		want: []string{"Update FlowSchema/probes false"},
		check: func(t *testing.T, plan []Action) {
			fs := plan[0].FlowSchema
			if fs.Spec.MatchingPrecedence != 3 || fs.Annotations["x"] != "y" {
				t.Errorf("the admin's spec or annotations were not kept: %v %v", fs.Spec.MatchingPrecedence, fs.Annotations)
			}
		},
	}, {
		name: "annotation in another spelling",
		current: func() Current {
			c := installed()
			c.schema("probes").Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = "True"
			return c
		},
	}, {
		name: "no longer suggested",
		current: func() Current {
			c := installed()
			for _, a := range []string{"true", "1", "false", "", "nonsense"} {
				name := "old-" + a
				meta := metav1.ObjectMeta{Name: name, Annotations: map[string]string{flowcontrolv1.AutoUpdateAnnotationKey: a}}
				c.FlowSchemas = append(c.FlowSchemas, &flowcontrolv1.FlowSchema{ObjectMeta: meta})
				c.PriorityLevels = append(c.PriorityLevels, &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: meta})
			}
			c.FlowSchemas = append(c.FlowSchemas, &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "admins"}})
			return c
		},
		want: []string{
			"Delete FlowSchema/old-true true", "Delete FlowSchema/old-1 1",
			"Delete PriorityLevelConfiguration/old-true true", "Delete PriorityLevelConfiguration/old-1 1",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			plan := Plan(tc.current(), Default())
			var got []string
			for _, a := range plan {
				got = append(got, describe(a))
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("plan\n%q\nwant\n%q", got, tc.want)
			}
			if tc.check != nil {
				tc.check(t, plan)
			}
		})
	}
}

// An empty server gets everything, in kube-apiserver's order, and the created objects are
// copies (the library's variables stay untouched).
func TestPlanFromNothing(t *testing.T) {
	plan := Plan(Current{}, Default())
	var got []string
	for _, a := range plan {
		if a.Verb != Create {
			t.Errorf("%s", describe(a))
		}
		got = append(got, a.Set+" "+a.Kind()+"/"+a.Name())
	}
	var want []string
	for _, pl := range bootstrap.SuggestedPriorityLevelConfigurations {
		want = append(want, "suggested PriorityLevelConfiguration/"+pl.Name)
	}
	for _, fs := range bootstrap.SuggestedFlowSchemas {
		want = append(want, "suggested FlowSchema/"+fs.Name)
	}
	want = append(want, "mandatory PriorityLevelConfiguration/catch-all", "mandatory PriorityLevelConfiguration/exempt",
		"mandatory FlowSchema/exempt", "mandatory FlowSchema/catch-all")
	if !slices.Equal(got, want) {
		t.Fatalf("plan\n%q\nwant\n%q", got, want)
	}
	if plan[0].PriorityLevel == bootstrap.SuggestedPriorityLevelConfigurations[0] {
		t.Error("the plan hands out the library's object")
	}
	// Then the next round has nothing to do.
	var c Current
	for _, a := range plan {
		if a.PriorityLevel != nil {
			a.PriorityLevel.Generation = 1
			c.PriorityLevels = append(c.PriorityLevels, a.PriorityLevel)
		} else {
			a.FlowSchema.Generation = 1
			c.FlowSchemas = append(c.FlowSchemas, a.FlowSchema)
		}
	}
	for _, a := range Plan(c, Default()) {
		t.Errorf("second round: %s", describe(a))
	}
}
