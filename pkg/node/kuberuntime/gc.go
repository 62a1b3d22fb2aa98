package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// The container garbage collector (the kubelet's containerGC): dead containers beyond the
// policy's limits, sandboxes that no longer hold anything, and the log directories of pods
// that are gone. It reads the runtime directly, not the PLEG's cache, so it also finds what
// belongs to pods the node agent never knew.

// createdGrace is how long a created container counts as starting rather than dead.
const createdGrace = time.Minute

// gcUnit is one container of one pod: its dead instances, newest first.
type gcUnit struct {
	podUID types.UID
	name   string
}

type deadContainer struct {
	id        string
	createdAt time.Time
}

// GarbageCollect removes dead containers and sandboxes, then pod log directories.
func (m *Manager) GarbageCollect(ctx context.Context, policy container.GCPolicy, pods container.PodStateProvider, allSourcesReady bool) error {
	var errs []error
	if err := m.evictContainers(ctx, policy, pods, allSourcesReady); err != nil {
		errs = append(errs, err)
	}
	if err := m.evictSandboxes(ctx, pods); err != nil {
		errs = append(errs, err)
	}
	if allSourcesReady {
		if err := m.evictPodLogsDirectories(ctx, pods); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// evictContainers removes every dead container of a pod whose content can go (once all
// sources are ready), then the oldest dead containers beyond MaxPerPodContainer per container
// and beyond MaxContainers in all.
func (m *Manager) evictContainers(ctx context.Context, policy container.GCPolicy, pods container.PodStateProvider, allSourcesReady bool) error {
	units, err := m.deadContainers(ctx, policy.MinAge)
	if err != nil {
		return err
	}
	var errs []error
	remove := func(c deadContainer) {
		if err := m.removeContainer(ctx, c.id); err != nil {
			errs = append(errs, err)
		}
	}
	if allSourcesReady {
		for unit, dead := range units {
			if pods.ShouldPodContentBeRemoved(unit.podUID) {
				for _, c := range dead {
					remove(c)
				}
				delete(units, unit)
			}
		}
	}
	if policy.MaxPerPodContainer >= 0 {
		for unit, dead := range units {
			if len(dead) > policy.MaxPerPodContainer {
				for _, c := range dead[policy.MaxPerPodContainer:] {
					remove(c)
				}
				units[unit] = dead[:policy.MaxPerPodContainer]
			}
		}
	}
	if policy.MaxContainers >= 0 {
		var all []deadContainer
		for _, dead := range units {
			all = append(all, dead...)
		}
		if len(all) > policy.MaxContainers {
			sort.Slice(all, func(i, j int) bool { return all[i].createdAt.After(all[j].createdAt) })
			for _, c := range all[policy.MaxContainers:] {
				remove(c)
			}
		}
	}
	return errors.Join(errs...)
}

// deadContainers lists the containers that are not running and were created at least minAge
// ago, by pod and name, newest first.
func (m *Manager) deadContainers(ctx context.Context, minAge time.Duration) (map[gcUnit][]deadContainer, error) {
	list, err := m.runtime.ListContainers(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	newest := time.Now().Add(-minAge)
	units := map[gcUnit][]deadContainer{}
	for _, c := range list {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		created := time.Unix(0, c.CreatedAt)
		if created.After(newest) {
			continue
		}
		// A container created a moment ago is about to start, not dead: counting it would
		// make it the newest "dead" instance and cost the one before it (--previous).
		if c.State == runtimeapi.ContainerState_CONTAINER_CREATED && time.Since(created) < createdGrace {
			continue
		}
		info := containerInfoFromLabels(c.Labels)
		unit := gcUnit{podUID: info.PodUID, name: info.ContainerName}
		units[unit] = append(units[unit], deadContainer{id: c.Id, createdAt: created})
	}
	for _, dead := range units {
		sort.Slice(dead, func(i, j int) bool { return dead[i].createdAt.After(dead[j].createdAt) })
	}
	return units, nil
}

// evictSandboxes removes the sandboxes that are not ready and hold no container: all of them
// for a pod whose runtime can go, all but the newest for any other pod.
func (m *Manager) evictSandboxes(ctx context.Context, pods container.PodStateProvider) error {
	containers, err := m.runtime.ListContainers(ctx, nil)
	if err != nil {
		return fmt.Errorf("listing containers: %w", err)
	}
	inUse := map[string]bool{}
	for _, c := range containers {
		inUse[c.PodSandboxId] = true
	}
	sandboxes, err := m.runtime.ListPodSandbox(ctx, nil)
	if err != nil {
		return fmt.Errorf("listing sandboxes: %w", err)
	}
	byPod := map[types.UID][]*runtimeapi.PodSandbox{}
	for _, s := range sandboxes {
		uid := types.UID(s.GetMetadata().GetUid())
		byPod[uid] = append(byPod[uid], s)
	}
	var errs []error
	for uid, list := range byPod {
		sort.Slice(list, func(i, j int) bool { return list[i].CreatedAt > list[j].CreatedAt })
		keep := 1
		if pods.ShouldPodRuntimeBeRemoved(uid) {
			keep = 0
		}
		for i, s := range list {
			if i < keep || s.State == runtimeapi.PodSandboxState_SANDBOX_READY || inUse[s.Id] {
				continue
			}
			klog.FromContext(ctx).V(4).Info("Removing sandbox", "podSandboxID", s.Id, "podUID", uid)
			if err := m.runtime.RemovePodSandbox(ctx, s.Id); err != nil {
				errs = append(errs, fmt.Errorf("removing sandbox %s: %w", s.Id, err))
			}
		}
	}
	return errors.Join(errs...)
}

// evictPodLogsDirectories removes the log directories (namespace_name_uid) of pods whose
// content can go.
func (m *Manager) evictPodLogsDirectories(ctx context.Context, pods container.PodStateProvider) error {
	entries, err := os.ReadDir(m.cfg.PodLogsDir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	var errs []error
	for _, e := range entries {
		i := strings.LastIndexByte(e.Name(), '_')
		if !e.IsDir() || i < 0 {
			continue
		}
		uid := types.UID(e.Name()[i+1:])
		if !pods.ShouldPodContentBeRemoved(uid) {
			continue
		}
		klog.FromContext(ctx).V(4).Info("Removing pod logs", "podUID", uid)
		if err := os.RemoveAll(filepath.Join(m.cfg.PodLogsDir, e.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
