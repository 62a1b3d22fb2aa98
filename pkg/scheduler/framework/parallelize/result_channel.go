package parallelize

import "context"

// ResultChannel keeps the first result that parallel workers send (typically the first
// error) and drops the others, so that no sender ever blocks.
type ResultChannel[T any] struct {
	ch chan T
}

// NewResultChannel returns an empty ResultChannel.
func NewResultChannel[T any]() *ResultChannel[T] {
	return &ResultChannel[T]{ch: make(chan T, 1)}
}

// Send keeps result if no result is kept yet.
func (r *ResultChannel[T]) Send(result T) {
	select {
	case r.ch <- result:
	default:
	}
}

// SendWithCancel sends result and calls cancel, to stop the remaining work.
func (r *ResultChannel[T]) SendWithCancel(result T, cancel context.CancelFunc) {
	r.Send(result)
	cancel()
}

// Receive returns the kept result, or the zero value when none was sent.
func (r *ResultChannel[T]) Receive() T {
	select {
	case v := <-r.ch:
		return v
	default:
		var zero T
		return zero
	}
}
