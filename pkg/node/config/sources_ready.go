package config

import (
	"sync"

	"k8s.io/apimachinery/pkg/util/sets"
)

// SourcesReady tells housekeeping whether every pod source has been heard from: until then
// the node agent does not know all the pods it should run, and must not clean up pods or
// their directories that a slow source has simply not reported yet.
type SourcesReady interface {
	// AddSource records that the syncLoop got an update from source.
	AddSource(source string)
	// AllReady reports whether every source has been seen.
	AllReady() bool
}

// NewSourcesReady returns a SourcesReady that asks sourcesSeen (PodConfig.SeenAllSources)
// whether the sources added so far are all of them.
func NewSourcesReady(sourcesSeen func(sets.Set[string]) bool) SourcesReady {
	return &sourcesReady{seen: sets.New[string](), allSeen: sourcesSeen}
}

type sourcesReady struct {
	mu      sync.Mutex
	seen    sets.Set[string]
	allSeen func(sets.Set[string]) bool
}

func (s *sourcesReady) AddSource(source string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen.Insert(source)
}

func (s *sourcesReady) AllReady() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.allSeen(s.seen)
}
