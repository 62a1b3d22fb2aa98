package nodetest

import (
	"testing"

	"github.com/berth-cluster/berth/test/integration/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }
