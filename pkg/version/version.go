// Package version says which Kubernetes version berth speaks and which build it is. The API
// server's /version and the node agent's kubeletVersion report it.
package version

import (
	"fmt"
	"runtime"

	apimachineryversion "k8s.io/apimachinery/pkg/version"
)

// Kubernetes is the Kubernetes release whose API berth serves (the k8s.io/api it is built on).
const Kubernetes = "v1.37.2"

// These are set at build time with -ldflags -X when a build script knows them.
var (
	// Berth is the suffix that marks berth's build, as k3s marks its own ("+k3s1").
	Berth     = "berth"
	GitCommit = ""
	BuildDate = "1970-01-01T00:00:00Z"
)

// GitVersion is the version string clients see: "v1.37.2+berth".
func GitVersion() string { return Kubernetes + "+" + Berth }

// Info is /version's answer.
func Info() *apimachineryversion.Info {
	return &apimachineryversion.Info{
		Major:        "1",
		Minor:        "37",
		GitVersion:   GitVersion(),
		GitCommit:    GitCommit,
		GitTreeState: "clean",
		BuildDate:    BuildDate,
		GoVersion:    runtime.Version(),
		Compiler:     runtime.Compiler,
		Platform:     fmt.Sprintf("%s/%s", runtime.GOOS, runtime.GOARCH),
	}
}
