package bench

import "k8s.io/apimachinery/pkg/api/resource"

func mustParse(s string) resource.Quantity { return resource.MustParse(s) }
