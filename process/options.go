package process

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/saap-go/agent/internal/runloop"
	"github.com/saap-go/agent/store"

	"github.com/saap-go/agent/bus"
)

// Option configures Run.
type Option func(*options) error

type options struct {
	bus           bus.Bus
	store         store.Store
	log           *slog.Logger
	ackWait       time.Duration
	maxDeliver    int
	configTimeout time.Duration
	heartbeat     time.Duration
	tick          time.Duration
	ready         func(Info)
	budget        time.Duration
	hidden        bool
	concurrency   int
	shutdown      time.Duration
}

func defaultOptions() options {
	return options{
		log:           slog.Default(),
		ackWait:       runloop.DefaultAckWait,
		maxDeliver:    runloop.DefaultMaxDeliver,
		budget:        runloop.DefaultOutageBudget,
		configTimeout: 5 * time.Second,
		heartbeat:     10 * time.Second,
		tick:          time.Second,
		concurrency:   DefaultConcurrency,
		shutdown:      DefaultShutdownTimeout,
	}
}

// WithBus sets the bus (required): a JetStream bus such as natsbus.
func WithBus(b bus.Bus) Option {
	return func(o *options) error {
		if b == nil {
			return errors.New("process: WithBus(nil)")
		}
		o.bus = b
		return nil
	}
}

// WithStore sets the state store of walkthroughs (required). Replicas of a
// class, and a runner that must survive a restart, share one (NATS KV or
// Redis, see dispatch/kvstore and dispatch/redisstore).
func WithStore(s store.Store) Option {
	return func(o *options) error {
		if s == nil {
			return errors.New("process: WithStore(nil)")
		}
		o.store = s
		return nil
	}
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("process: WithLogger(nil)")
		}
		o.log = l
		return nil
	}
}

// WithAckWait sets the runner consumer's AckWait (default 30 s, as agent
// runners); heartbeats go out at a third of it while a step runs.
func WithAckWait(d time.Duration) Option {
	return func(o *options) error {
		if d < time.Second {
			return errors.New("process: WithAckWait below one second")
		}
		o.ackWait = d
		o.heartbeat = d / 3
		return nil
	}
}

// WithMaxDeliver sets the runner consumer's MaxDeliver (default -1, no
// limit, as agent runners: the outage budget decides when a failing work
// event is given up). With a limit, the delivery before it is the last try:
// the work event is dead-lettered there rather than dropped by the server.
func WithMaxDeliver(n int) Option {
	return func(o *options) error {
		if n != -1 && n < 2 {
			return fmt.Errorf("process: WithMaxDeliver: %d must be at least 2 (one try and the delivery that gives up), or -1 for no limit", n)
		}
		o.maxDeliver = n
		return nil
	}
}

// OutageBudget sets how long the runner retries a work event whose
// handling fails for a transient reason, counted as the sum of the retry
// delays (default DefaultOutageBudget, 10 minutes, as agent runners). When
// it is spent the walkthrough ends with a ProcessExceptionEvent and the
// event is dead-lettered. 0 gives up at the first failure.
func OutageBudget(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("process: OutageBudget: %v is negative", d)
		}
		o.budget = d
		return nil
	}
}

// WithConfigTimeout bounds the configuration RPC at a walkthrough's start
// (default 5 s); without an answer the start event's process_config is used.
func WithConfigTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return errors.New("process: WithConfigTimeout must be positive")
		}
		o.configTimeout = d
		return nil
	}
}

// WithTimeoutTick sets how often the agent delegator looks for agent work
// past its route's Timeout (default 1 s).
func WithTimeoutTick(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return errors.New("process: WithTimeoutTick must be positive")
		}
		o.tick = d
		return nil
	}
}

// WithReady calls f with the runner's Info once the consumers run.
func WithReady(f func(Info)) Option {
	return func(o *options) error { o.ready = f; return nil }
}

// Discoverable says whether the runner answers process discovery requests
// (default true) with Describe's answer.
func Discoverable(on bool) Option {
	return func(o *options) error { o.hidden = !on; return nil }
}

// Defaults of the runner: those of agent runners.
const (
	// DefaultConcurrency is how many work events a runner handles at once.
	DefaultConcurrency = runloop.DefaultConcurrency
	// DefaultShutdownTimeout bounds how long a stopping runner waits for
	// the work events in hand.
	DefaultShutdownTimeout = runloop.DefaultShutdownTimeout
	// DefaultOutageBudget is how long a failing work event is retried.
	DefaultOutageBudget = runloop.DefaultOutageBudget
)

// WithConcurrency sets how many work events the runner handles at once
// (default DefaultConcurrency, as agent runners). With 1 they are handled
// one after the other, in the consumer's goroutine.
func WithConcurrency(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return errors.New("process: WithConcurrency below 1")
		}
		o.concurrency = n
		return nil
	}
}

// WithShutdownTimeout bounds how long a stopping runner waits for the work
// events in hand (default DefaultShutdownTimeout, 25 s, as agent runners);
// the rest are handed back.
func WithShutdownTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return errors.New("process: WithShutdownTimeout must be positive")
		}
		o.shutdown = d
		return nil
	}
}
