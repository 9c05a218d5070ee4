// Package workers runs short functions on kept goroutines. A goroutine
// started per function grows its stack to the caller's depth each time
// (the NATS client and the engine call deep); a kept one has grown it
// already.
package workers

import "sync/atomic"

// Pool runs functions on workers it keeps, up to maxIdle of them waiting.
// The zero Pool is not usable; see New.
type Pool struct {
	idle    chan func()
	waiting atomic.Int32
	maxIdle int32
	done    chan struct{}
	closed  atomic.Bool
}

// New returns a pool that keeps up to maxIdle workers waiting.
func New(maxIdle int) *Pool {
	return &Pool{idle: make(chan func()), maxIdle: int32(maxIdle), done: make(chan struct{})}
}

// Go runs f on a waiting worker, or on a new one if none waits. It does
// not wait for f.
func (p *Pool) Go(f func()) {
	select {
	case p.idle <- f:
	default:
		go p.work(f)
	}
}

func (p *Pool) work(f func()) {
	for {
		f()
		if p.waiting.Add(1) > p.maxIdle {
			p.waiting.Add(-1)
			return
		}
		select {
		case f = <-p.idle:
			p.waiting.Add(-1)
		case <-p.done:
			p.waiting.Add(-1)
			return
		}
	}
}

// Waiting returns how many workers wait for a function.
func (p *Pool) Waiting() int { return int(p.waiting.Load()) }

// Close ends the waiting workers; busy ones end after their function. Go
// still works after Close, on a goroutine that ends with its function.
func (p *Pool) Close() {
	if p.closed.CompareAndSwap(false, true) {
		close(p.done)
	}
}
