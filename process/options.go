package process

import (
	"errors"
	"log/slog"
	"time"

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
	ready         func()
	hidden        bool
	concurrency   int
	shutdown      time.Duration
}

func defaultOptions() options {
	return options{
		log:           slog.Default(),
		ackWait:       bus.DefaultAckWait,
		maxDeliver:    bus.DefaultMaxDeliver,
		configTimeout: 5 * time.Second,
		heartbeat:     10 * time.Second,
		tick:          time.Second,
		concurrency:   DefaultConcurrency,
		shutdown:      10 * time.Second,
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

// WithMaxDeliver sets the runner consumer's MaxDeliver (default 5, as agent
// runners). The delivery that reaches it without being handled is
// dead-lettered.
func WithMaxDeliver(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return errors.New("process: WithMaxDeliver below 1")
		}
		o.maxDeliver = n
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

// WithReady calls f once the consumers run.
func WithReady(f func()) Option {
	return func(o *options) error { o.ready = f; return nil }
}

// Discoverable says whether the runner answers process discovery requests
// (default true) with Describe's answer.
func Discoverable(on bool) Option {
	return func(o *options) error { o.hidden = !on; return nil }
}

// DefaultConcurrency is how many work events a runner handles at once.
const DefaultConcurrency = 16

// WithConcurrency sets how many work events the runner handles at once
// (default DefaultConcurrency). With 1 they are handled one after the
// other, in the consumer's goroutine, as the test harness needs.
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
// events in hand (default 10 s); the rest are handed back.
func WithShutdownTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return errors.New("process: WithShutdownTimeout must be positive")
		}
		o.shutdown = d
		return nil
	}
}
