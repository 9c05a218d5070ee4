package workers_test

import (
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/saap-go/agent/internal/workers"
)

// A burst wider than the bound leaves maxIdle workers waiting, they run
// what comes next, and Close ends them.
func TestPoolKeepsBoundedWorkers(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const maxIdle, burst = 4, 32
	p := workers.New(maxIdle)
	release := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	ran := 0
	for range burst {
		wg.Add(1)
		p.Go(func() {
			defer wg.Done()
			<-release
			mu.Lock()
			ran++
			mu.Unlock()
		})
	}
	close(release)
	wg.Wait()
	// A worker counts itself waiting before it waits; the ones over the
	// bound return instead.
	for deadline := time.Now().Add(10 * time.Second); p.Waiting() != maxIdle; {
		if time.Now().After(deadline) {
			t.Fatalf("%d workers waiting after the burst, want %d", p.Waiting(), maxIdle)
		}
		time.Sleep(time.Millisecond)
	}
	for range 100 {
		wg.Add(1)
		p.Go(func() {
			defer wg.Done()
			mu.Lock()
			ran++
			mu.Unlock()
		})
	}
	wg.Wait()
	if n := p.Waiting(); n > maxIdle {
		t.Fatalf("%d workers waiting, over the bound of %d", n, maxIdle)
	}
	if ran != burst+100 {
		t.Fatalf("ran %d functions, want %d", ran, burst+100)
	}
	p.Close()
	wg.Add(1)
	p.Go(wg.Done) // after Close: still runs
	wg.Wait()
}
