package framework

import "sync/atomic"

var generation atomic.Int64

// nextGeneration returns a number larger than any returned before, so that a NodeInfo's
// generation tells the snapshot whether it changed.
func nextGeneration() int64 { return generation.Add(1) }
