package bench

import (
	"os"

	"k8s.io/apimachinery/pkg/api/resource"
)

func mustParse(s string) resource.Quantity { return resource.MustParse(s) }

func tempDir() (string, error) { return os.MkdirTemp("", "berth-bench-") }

func removeAll(dir string) { _ = os.RemoveAll(dir) }
