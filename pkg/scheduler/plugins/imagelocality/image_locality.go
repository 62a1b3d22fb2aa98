// Package imagelocality is the ImageLocality plugin, part of prioritizeNodes: it prefers
// nodes that already have the pod's images, so that the pod starts without a long pull, but
// discounts images found on few nodes so that pods do not pile onto them.
package imagelocality

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

// Name is the plugin's name in the registry and in configurations.
const Name = "ImageLocality"

// The bounds of the summed image size that scores map onto, per image: most images in
// registries are between 23 MB and 1000 MB compressed, as kube-scheduler reasons.
const (
	mb                    int64 = 1024 * 1024
	minThreshold          int64 = 23 * mb
	maxContainerThreshold int64 = 1000 * mb
)

const preScoreStateKey framework.StateKey = "PreScore" + Name

// ImageLocality scores nodes by the pod's images they hold.
type ImageLocality struct {
	handle framework.Handle
}

var (
	_ framework.PreScorePlugin = &ImageLocality{}
	_ framework.ScorePlugin    = &ImageLocality{}
)

// New returns the plugin; it takes no arguments. It needs the handle's snapshot to count the
// nodes.
func New(_ context.Context, _ runtime.Object, h framework.Handle) (framework.Plugin, error) {
	return &ImageLocality{handle: h}, nil
}

// Name returns Name.
func (pl *ImageLocality) Name() string { return Name }

// preScoreState is what Score needs, computed once per pod rather than once per node.
type preScoreState struct {
	// images are the normalized names of the images of the pod's init containers,
	// containers and image volumes, with repeats.
	images []string
	// totalNodes is the number of nodes in the snapshot, feasible or not.
	totalNodes int
}

// Clone shares the state: it does not depend on other pods.
func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore normalizes the pod's image names and counts the cluster's nodes.
func (pl *ImageLocality) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	s, err := pl.newPreScoreState(pod)
	if err != nil {
		return framework.AsStatus(err)
	}
	state.Write(preScoreStateKey, s)
	return nil
}

func (pl *ImageLocality) newPreScoreState(pod *v1.Pod) (*preScoreState, error) {
	nodes, err := pl.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return nil, err
	}
	return &preScoreState{images: podImages(pod), totalNodes: len(nodes)}, nil
}

// podImages lists the images a pod needs on its node, normalized.
func podImages(pod *v1.Pod) []string {
	images := make([]string, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for i := range pod.Spec.InitContainers {
		images = append(images, normalizedImageName(pod.Spec.InitContainers[i].Image))
	}
	for i := range pod.Spec.Containers {
		images = append(images, normalizedImageName(pod.Spec.Containers[i].Image))
	}
	for i := range pod.Spec.Volumes {
		if img := pod.Spec.Volumes[i].Image; img != nil {
			images = append(images, normalizedImageName(img.Reference))
		}
	}
	return images
}

// Score sums the sizes of the pod's images present on the node, each scaled by the share of
// nodes that have it, and maps the sum onto 0..100 (already normalized: no NormalizeScore).
func (pl *ImageLocality) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	s, err := getPreScoreState(state)
	if err != nil {
		// PreScore did not run (e.g. it is disabled): compute the same here.
		if s, err = pl.newPreScoreState(pod); err != nil {
			return 0, framework.AsStatus(err)
		}
	}
	var sum int64
	for _, name := range s.images {
		if is, ok := nodeInfo.ImageStates[name]; ok {
			sum += scaledImageScore(is, s.totalNodes)
		}
	}
	return calculatePriority(sum, len(s.images)), nil
}

// ScoreExtensions returns nil: scores are already 0..100.
func (pl *ImageLocality) ScoreExtensions() framework.ScoreExtensions { return nil }

func getPreScoreState(state *framework.CycleState) (*preScoreState, error) {
	data, err := state.Read(preScoreStateKey)
	if err != nil {
		return nil, err
	}
	s, ok := data.(*preScoreState)
	if !ok {
		return nil, fmt.Errorf("invalid PreScore state, got type %T", data)
	}
	return s, nil
}

// scaledImageScore is the image's size scaled by its spread, the share of nodes that have it:
// an image on one node of a hundred counts for 1%, which avoids heating up the few nodes that
// happen to have it.
func scaledImageScore(is *framework.ImageStateSummary, totalNodes int) int64 {
	if totalNodes == 0 {
		return 0
	}
	spread := float64(is.NumNodes) / float64(totalNodes)
	return int64(float64(is.Size) * spread)
}

// calculatePriority clamps sum to [minThreshold, maxContainerThreshold*imageCount] and maps
// that range linearly onto 0..100.
func calculatePriority(sum int64, imageCount int) int64 {
	maxThreshold := maxContainerThreshold * int64(imageCount)
	if sum < minThreshold {
		sum = minThreshold
	} else if sum > maxThreshold {
		sum = maxThreshold
	}
	return framework.MaxNodeScore * (sum - minThreshold) / (maxThreshold - minThreshold)
}

// normalizedImageName adds the ":latest" a runtime reports for an image named without a tag,
// so that "nginx" matches the node's "nginx:latest". A ':' before the last '/' is a
// registry's port, not a tag.
func normalizedImageName(name string) string {
	if strings.LastIndex(name, ":") <= strings.LastIndex(name, "/") {
		return name + ":latest"
	}
	return name
}
