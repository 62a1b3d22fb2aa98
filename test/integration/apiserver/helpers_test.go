package apiserver

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
