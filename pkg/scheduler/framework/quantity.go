package framework

import "k8s.io/apimachinery/pkg/api/resource"

func resourceQuantity(v int64, milli bool) *resource.Quantity {
	if milli {
		return resource.NewMilliQuantity(v, resource.DecimalSI)
	}
	return resource.NewQuantity(v, resource.BinarySI)
}
