package service

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
)

// Fields are the fields a service can be selected by (`kubectl get svc
// --field-selector spec.type=NodePort`): metadata.name, metadata.namespace,
// spec.clusterIP and spec.type, the labels upstream's field-label conversion
// for Service accepts.
func Fields(obj runtime.Object) fields.Set {
	svc := obj.(*corev1.Service)
	return generic.MergeFieldsSets(generic.ObjectMetaFieldsSet(&svc.ObjectMeta, true), fields.Set{
		"spec.clusterIP": svc.Spec.ClusterIP,
		"spec.type":      string(svc.Spec.Type),
	})
}
