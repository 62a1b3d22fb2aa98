// Package flowcontrolbootstrap is the API server's "priority-and-fairness-config-producer"
// post-start hook, as kube-apiserver runs it: it keeps API Priority and Fairness' default
// configuration (k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap) in the
// flowcontrol.apiserver.k8s.io/v1 API.
//
// The configuration has two parts, and the annotation apf.kubernetes.io/autoupdate-spec
// says, on each object, whether the server owns its spec:
//
//   - Mandatory objects ("exempt" and "catch-all", a FlowSchema and a priority level each)
//     are created when missing, and their spec and annotation ("true") always restored.
//   - Suggested objects (system, node-high, leader-election, workload-high, workload-low,
//     global-default and their schemas) are created when missing; their spec is brought up to
//     date only while the annotation says "true" (or, with no annotation that parses, while
//     the object is at generation 1, that is unchanged since created), and the annotation is
//     set to say which.
//   - An object neither mandatory nor suggested whose annotation says "true" was once
//     suggested and is deleted; every other object is the admin's and left alone.
//
// Plan is that policy as a pure function of the objects the server has; Producer (driver.go)
// carries a plan out through the loopback client whenever the objects change, and every
// minute.
package flowcontrolbootstrap

import (
	"strconv"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/flowcontrol/flowschema"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/flowcontrol/prioritylevelconfiguration"
)

// Configuration is the set of objects to keep.
type Configuration struct {
	MandatoryPriorityLevels, SuggestedPriorityLevels []*flowcontrolv1.PriorityLevelConfiguration
	MandatoryFlowSchemas, SuggestedFlowSchemas       []*flowcontrolv1.FlowSchema
}

// Default is kube-apiserver's configuration.
func Default() Configuration {
	return Configuration{
		MandatoryPriorityLevels: bootstrap.MandatoryPriorityLevelConfigurations,
		SuggestedPriorityLevels: bootstrap.SuggestedPriorityLevelConfigurations,
		MandatoryFlowSchemas:    bootstrap.MandatoryFlowSchemas,
		SuggestedFlowSchemas:    bootstrap.SuggestedFlowSchemas,
	}
}

// Current is what the server has.
type Current struct {
	PriorityLevels []*flowcontrolv1.PriorityLevelConfiguration
	FlowSchemas    []*flowcontrolv1.FlowSchema
}

// Verb is what an action does.
type Verb string

const (
	Create Verb = "Create"
	Update Verb = "Update"
	Delete Verb = "Delete"
)

// Action is one write. Exactly one of PriorityLevel and FlowSchema is set: the object to
// create, the revised object to update (with the resourceVersion it was revised from), or
// the object to delete.
type Action struct {
	Verb Verb
	// Set is "mandatory", "suggested", or "unwanted" for a deletion, for the logs.
	Set           string
	PriorityLevel *flowcontrolv1.PriorityLevelConfiguration
	FlowSchema    *flowcontrolv1.FlowSchema
}

// Name is the name of the object the action writes.
func (a Action) Name() string {
	if a.PriorityLevel != nil {
		return a.PriorityLevel.Name
	}
	return a.FlowSchema.Name
}

// Kind is the kind of the object the action writes.
func (a Action) Kind() string {
	if a.PriorityLevel != nil {
		return "PriorityLevelConfiguration"
	}
	return "FlowSchema"
}

// Plan returns the writes that bring current to want, in kube-apiserver's order: suggested
// priority levels, then their schemas, the same for the mandatory objects (levels before the
// schemas that name them), then deletions of schemas before those of levels.
func Plan(current Current, want Configuration) []Action {
	var plan []Action
	pls := byName(current.PriorityLevels, (*flowcontrolv1.PriorityLevelConfiguration).GetName)
	fss := byName(current.FlowSchemas, (*flowcontrolv1.FlowSchema).GetName)
	ensurePL := func(set string, boot []*flowcontrolv1.PriorityLevelConfiguration) {
		for _, b := range boot {
			plan = append(plan, ensure(set, pls[b.Name], b, plOps, func(pl *flowcontrolv1.PriorityLevelConfiguration) Action {
				return Action{PriorityLevel: pl}
			})...)
		}
	}
	ensureFS := func(set string, boot []*flowcontrolv1.FlowSchema) {
		for _, b := range boot {
			plan = append(plan, ensure(set, fss[b.Name], b, fsOps, func(fs *flowcontrolv1.FlowSchema) Action {
				return Action{FlowSchema: fs}
			})...)
		}
	}
	ensurePL(suggested, want.SuggestedPriorityLevels)
	ensureFS(suggested, want.SuggestedFlowSchemas)
	ensurePL(mandatory, want.MandatoryPriorityLevels)
	ensureFS(mandatory, want.MandatoryFlowSchemas)

	wantedFS := byName(append(append([]*flowcontrolv1.FlowSchema(nil), want.MandatoryFlowSchemas...), want.SuggestedFlowSchemas...), (*flowcontrolv1.FlowSchema).GetName)
	for _, fs := range current.FlowSchemas {
		if _, ok := wantedFS[fs.Name]; !ok && autoUpdateAnnotation(fs.Annotations) == "true" {
			plan = append(plan, Action{Verb: Delete, Set: unwanted, FlowSchema: fs})
		}
	}
	wantedPL := byName(append(append([]*flowcontrolv1.PriorityLevelConfiguration(nil), want.MandatoryPriorityLevels...), want.SuggestedPriorityLevels...), (*flowcontrolv1.PriorityLevelConfiguration).GetName)
	for _, pl := range current.PriorityLevels {
		if _, ok := wantedPL[pl.Name]; !ok && autoUpdateAnnotation(pl.Annotations) == "true" {
			plan = append(plan, Action{Verb: Delete, Set: unwanted, PriorityLevel: pl})
		}
	}
	return plan
}

const (
	mandatory = "mandatory"
	suggested = "suggested"
	unwanted  = "unwanted"
)

// object is what the planner needs of both kinds.
type object interface {
	comparable
	GetName() string
	GetAnnotations() map[string]string
	SetAnnotations(map[string]string)
	GetGeneration() int64
}

// ops are the kind-specific parts of ensure.
type ops[T object] struct {
	deepCopy func(T) T
	// specEqualish says whether have's spec is want's, once defaulted.
	specEqualish func(want, have T) bool
	// withSpec returns a copy of into with from's spec.
	withSpec func(into, from T) T
}

var plOps = ops[*flowcontrolv1.PriorityLevelConfiguration]{
	deepCopy: (*flowcontrolv1.PriorityLevelConfiguration).DeepCopy,
	specEqualish: func(want, have *flowcontrolv1.PriorityLevelConfiguration) bool {
		w := want.DeepCopy()
		prioritylevelconfiguration.SetDefaults(w)
		// The exempt level's shares are the admin's to set (its validation allows it).
		if w.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt {
			if have.Spec.Exempt == nil {
				return false
			}
			w.Spec.Exempt.NominalConcurrencyShares = have.Spec.Exempt.NominalConcurrencyShares
			w.Spec.Exempt.LendablePercent = have.Spec.Exempt.LendablePercent
		}
		return apiequality.Semantic.DeepEqual(w.Spec, have.Spec)
	},
	withSpec: func(into, from *flowcontrolv1.PriorityLevelConfiguration) *flowcontrolv1.PriorityLevelConfiguration {
		c := into.DeepCopy()
		c.Spec = *from.Spec.DeepCopy()
		return c
	},
}

var fsOps = ops[*flowcontrolv1.FlowSchema]{
	deepCopy: (*flowcontrolv1.FlowSchema).DeepCopy,
	specEqualish: func(want, have *flowcontrolv1.FlowSchema) bool {
		w := want.DeepCopy()
		flowschema.SetDefaults(w)
		return apiequality.Semantic.DeepEqual(w.Spec, have.Spec)
	},
	withSpec: func(into, from *flowcontrolv1.FlowSchema) *flowcontrolv1.FlowSchema {
		c := into.DeepCopy()
		c.Spec = *from.Spec.DeepCopy()
		return c
	},
}

// ensure plans the write, if any, that makes have (the zero value when missing) what the
// bootstrap object boot of set asks for.
func ensure[T object](set string, have, boot T, o ops[T], action func(T) Action) []Action {
	var missing T
	if have == missing {
		a := action(o.deepCopy(boot))
		a.Verb, a.Set = Create, set
		return []Action{a}
	}
	autoUpdate := set == mandatory || wantsAutoUpdate(have)
	annotate := autoUpdateAnnotation(have.GetAnnotations()) != strconv.FormatBool(autoUpdate)
	respec := autoUpdate && !o.specEqualish(boot, have)
	if !annotate && !respec {
		return nil
	}
	revised := o.deepCopy(have)
	if respec {
		revised = o.withSpec(have, boot)
	}
	if annotate {
		annotations := map[string]string{}
		for k, v := range revised.GetAnnotations() {
			annotations[k] = v
		}
		annotations[flowcontrolv1.AutoUpdateAnnotationKey] = strconv.FormatBool(autoUpdate)
		revised.SetAnnotations(annotations)
	}
	a := action(revised)
	a.Verb, a.Set = Update, set
	return []Action{a}
}

// wantsAutoUpdate says whether a suggested object's spec is the server's: as its annotation
// says, or, without one that parses, while nobody has changed the spec since it was created.
func wantsAutoUpdate(obj interface {
	GetAnnotations() map[string]string
	GetGeneration() int64
}) bool {
	if v, err := strconv.ParseBool(obj.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]); err == nil {
		return v
	}
	return obj.GetGeneration() == 1
}

// autoUpdateAnnotation returns the annotation's value in canonical form ("true", "false"),
// or "" when it is missing or does not parse.
func autoUpdateAnnotation(annotations map[string]string) string {
	v, ok := annotations[flowcontrolv1.AutoUpdateAnnotationKey]
	if !ok {
		return ""
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return ""
	}
	return strconv.FormatBool(b)
}

func byName[T any](objs []T, name func(T) string) map[string]T {
	m := make(map[string]T, len(objs))
	for _, o := range objs {
		m[name(o)] = o
	}
	return m
}
