package framework

import (
	"errors"
	"sync"

	"k8s.io/apimachinery/pkg/util/sets"
)

// StateKey names a piece of state a plugin keeps in the CycleState.
type StateKey string

// StateData is a piece of state; Clone lets preemption try "what if" on a copy.
type StateData interface {
	Clone() StateData
}

// ErrNotFound is returned by Read for a key nobody wrote.
var ErrNotFound = errors.New("not found")

// CycleState is the scratch space of one scheduling cycle: PreFilter computes something once
// and Filter reads it for every node. Plugins read it concurrently (Filter runs in parallel
// over nodes) and almost never write after PreFilter: a sync.Map serves that without the
// shared reader counter an RWMutex would make every Filter call contend on.
type CycleState struct {
	storage sync.Map // StateKey → StateData
	// SkipFilterPlugins and SkipScorePlugins name plugins whose PreFilter/PreScore said Skip.
	SkipFilterPlugins sets.Set[string]
	SkipScorePlugins  sets.Set[string]
}

// NewCycleState returns an empty state.
func NewCycleState() *CycleState {
	return &CycleState{}
}

// Read returns the data under key.
func (c *CycleState) Read(key StateKey) (StateData, error) {
	if v, ok := c.storage.Load(key); ok {
		return v.(StateData), nil
	}
	return nil, ErrNotFound
}

// Write stores data under key.
func (c *CycleState) Write(key StateKey, data StateData) {
	c.storage.Store(key, data)
}

// Delete removes key.
func (c *CycleState) Delete(key StateKey) {
	c.storage.Delete(key)
}

// Clone copies the state, each piece by its own Clone.
func (c *CycleState) Clone() *CycleState {
	if c == nil {
		return nil
	}
	out := NewCycleState()
	c.storage.Range(func(k, v any) bool {
		out.storage.Store(k, v.(StateData).Clone())
		return true
	})
	out.SkipFilterPlugins = c.SkipFilterPlugins.Clone()
	out.SkipScorePlugins = c.SkipScorePlugins.Clone()
	return out
}
