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
// and Filter reads it for every node. Plugins write and read it concurrently (Filter runs in
// parallel over nodes), so it is locked.
type CycleState struct {
	mu      sync.RWMutex
	storage map[StateKey]StateData
	// SkipFilterPlugins and SkipScorePlugins name plugins whose PreFilter/PreScore said Skip.
	SkipFilterPlugins sets.Set[string]
	SkipScorePlugins  sets.Set[string]
}

// NewCycleState returns an empty state.
func NewCycleState() *CycleState {
	return &CycleState{storage: map[StateKey]StateData{}}
}

// Read returns the data under key.
func (c *CycleState) Read(key StateKey) (StateData, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if v, ok := c.storage[key]; ok {
		return v, nil
	}
	return nil, ErrNotFound
}

// Write stores data under key.
func (c *CycleState) Write(key StateKey, data StateData) {
	c.mu.Lock()
	c.storage[key] = data
	c.mu.Unlock()
}

// Delete removes key.
func (c *CycleState) Delete(key StateKey) {
	c.mu.Lock()
	delete(c.storage, key)
	c.mu.Unlock()
}

// Clone copies the state, each piece by its own Clone.
func (c *CycleState) Clone() *CycleState {
	if c == nil {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := NewCycleState()
	for k, v := range c.storage {
		out.storage[k] = v.Clone()
	}
	out.SkipFilterPlugins = c.SkipFilterPlugins.Clone()
	out.SkipScorePlugins = c.SkipScorePlugins.Clone()
	return out
}
