package allocation

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
)

// The files the node agent keeps its records in, in its data dir, under the kubelet's names.
const (
	AllocatedStateFile = "allocated_pods_state"
	ActuatedStateFile  = "actuated_pods_state"
)

// ContainerResources are the resources of a pod's containers, by container name.
type ContainerResources map[string]v1.ResourceRequirements

// Store is a record of container resources by pod, kept in a file so that a node agent
// restart finds it again: the allocation manager's allocated resources, and the runtime
// manager's actuated ones (what the runtime was last told to apply). Every change rewrites
// the file whole, through a rename, so that a crash leaves the old record or the new.
type Store struct {
	path string // "" keeps the record in memory only

	mu   sync.RWMutex
	pods map[types.UID]ContainerResources
}

// storeFile is the file's content.
type storeFile struct {
	Pods map[types.UID]ContainerResources `json:"pods"`
}

// NewStore returns the record kept at path ("" for memory only), reading what an earlier run
// left there. A file that cannot be read is an error, and the store then starts empty.
func NewStore(path string) (*Store, error) {
	s := &Store{path: path, pods: map[types.UID]ContainerResources{}}
	if path == "" {
		return s, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("reading %s: %w", path, err)
	}
	var f storeFile
	if err := json.Unmarshal(data, &f); err != nil {
		return s, fmt.Errorf("%s is corrupt: %w", path, err)
	}
	for uid, cs := range f.Pods {
		if cs != nil {
			s.pods[uid] = cs
		}
	}
	return s, nil
}

// Container returns the resources recorded for a container of a pod.
func (s *Store) Container(uid types.UID, name string) (v1.ResourceRequirements, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.pods[uid][name]
	if !ok {
		return v1.ResourceRequirements{}, false
	}
	return *r.DeepCopy(), true
}

// Pod returns the resources recorded for a pod's containers.
func (s *Store) Pod(uid types.UID) (ContainerResources, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	cs, ok := s.pods[uid]
	if !ok {
		return nil, false
	}
	out := make(ContainerResources, len(cs))
	for name, r := range cs {
		out[name] = *r.DeepCopy()
	}
	return out, true
}

// SetPod replaces the record of a pod.
func (s *Store) SetPod(uid types.UID, resources ContainerResources) error {
	s.mu.RLock()
	old, ok := s.pods[uid]
	same := ok && equality.Semantic.DeepEqual(old, resources)
	s.mu.RUnlock()
	if same {
		// Every write rewrites the whole file: a record that does not change is not written.
		return nil
	}
	cp := make(ContainerResources, len(resources))
	for name, r := range resources {
		cp[name] = *r.DeepCopy()
	}
	return s.update(func(pods map[types.UID]ContainerResources) { pods[uid] = cp })
}

// SetContainer records the resources of one container of a pod.
func (s *Store) SetContainer(uid types.UID, name string, r v1.ResourceRequirements) error {
	s.mu.RLock()
	old, ok := s.pods[uid][name]
	s.mu.RUnlock()
	if ok && equality.Semantic.DeepEqual(old, r) {
		// A container started again (a restart, a crash loop) with the same resources.
		return nil
	}
	r = *r.DeepCopy()
	return s.update(func(pods map[types.UID]ContainerResources) {
		if pods[uid] == nil {
			pods[uid] = ContainerResources{}
		}
		pods[uid][name] = r
	})
}

// RemovePod forgets a pod.
func (s *Store) RemovePod(uid types.UID) error {
	s.mu.RLock()
	_, ok := s.pods[uid]
	s.mu.RUnlock()
	if !ok {
		return nil
	}
	return s.update(func(pods map[types.UID]ContainerResources) { delete(pods, uid) })
}

// RemoveOrphans forgets the pods keep does not want.
func (s *Store) RemoveOrphans(keep func(types.UID) bool) error {
	s.mu.RLock()
	var gone []types.UID
	for uid := range s.pods {
		if !keep(uid) {
			gone = append(gone, uid)
		}
	}
	s.mu.RUnlock()
	if len(gone) == 0 {
		return nil
	}
	return s.update(func(pods map[types.UID]ContainerResources) {
		for _, uid := range gone {
			delete(pods, uid)
		}
	})
}

// update changes the record and writes it; the change stands in memory even when the write
// fails (the next change writes it again).
func (s *Store) update(change func(map[types.UID]ContainerResources)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	change(s.pods)
	if s.path == "" {
		return nil
	}
	data, err := json.Marshal(storeFile{Pods: s.pods})
	if err != nil {
		return fmt.Errorf("encoding %s: %w", s.path, err)
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o750); err != nil {
		return fmt.Errorf("writing %s: %w", s.path, err)
	}
	tmp := s.path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", s.path, err)
	}
	if err := os.Rename(tmp, s.path); err != nil {
		return fmt.Errorf("writing %s: %w", s.path, err)
	}
	return nil
}
