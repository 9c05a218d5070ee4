package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/saap-go/agent/interceptor"
	"github.com/saap-go/agent/internal/engine"
	"github.com/saap-go/agent/internal/runloop"
	"github.com/saap-go/agent/store"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
)

// Defaults of the runner, shared with process runners. The consumer
// settings are the reference's; the rest are this SDK's.
const (
	DefaultShutdownTimeout = runloop.DefaultShutdownTimeout
	DefaultConcurrency     = runloop.DefaultConcurrency // the reference's process-wide semaphore
	DefaultAckWait         = runloop.DefaultAckWait
	// DefaultMaxDeliver is the runner consumer's MaxDeliver: -1, no limit.
	// Unlike the reference (5), the server never drops an event in
	// silence; the runner gives up on a failing event itself, after the
	// outage budget, with an ExceptionEvent and a dead letter.
	DefaultMaxDeliver = runloop.DefaultMaxDeliver
	// DefaultOutageBudget is how long a runner retries an event that fails
	// for a transient reason (the store or the bus unavailable).
	DefaultOutageBudget = runloop.DefaultOutageBudget
	// DefaultCrashLoopLimit is how many handlings of a redelivered control
	// event may die with the process before the event is given up: 3.
	DefaultCrashLoopLimit = engine.DefaultCrashLoopLimit
	// DefaultCacheSize bounds the runs whose history a runner keeps in
	// memory. Paused runs age out of it, so ten thousand of them cost the
	// process next to nothing; an active run's next event reloads its
	// history from the stream if it was evicted.
	DefaultCacheSize = engine.DefaultCacheSize
)

// An Option configures Run and New.
type Option func(*options) error

type options struct {
	natsURL         string
	natsSet         bool
	bus             bus.Bus
	dataDir         string
	store           store.Store
	redisURL        string
	redisSet        bool
	standalone      bool
	discoverable    bool
	logger          *slog.Logger
	tracerProvider  trace.TracerProvider
	meterProvider   metric.MeterProvider
	langfuse        bool
	interceptors    []interceptor.Interceptor
	shutdownTimeout time.Duration
	concurrency     int
	ackWait         time.Duration
	maxDeliver      int
	outageBudget    time.Duration
	crashLoopLimit  int
	ready           func(Info)
	cacheSize       int
	replicas        int
	templates       []Template
}

func defaultOptions() options {
	return options{
		discoverable:    true,
		shutdownTimeout: DefaultShutdownTimeout,
		concurrency:     DefaultConcurrency,
		ackWait:         DefaultAckWait,
		maxDeliver:      DefaultMaxDeliver,
		outageBudget:    DefaultOutageBudget,
		crashLoopLimit:  DefaultCrashLoopLimit,
		cacheSize:       DefaultCacheSize,
	}
}

// WithNATS joins the NATS server at url instead of starting an embedded one.
// It takes precedence over NATS_URL / NATS_ENDPOINT; NATS_TOKEN, NATS_CREDS,
// NATS_NKEY_SEED and the NATS_TLS_* variables still apply.
func WithNATS(url string) Option {
	return func(o *options) error {
		if url == "" {
			return errors.New("agent: WithNATS: empty URL")
		}
		o.natsURL, o.natsSet = url, true
		return nil
	}
}

// WithBus runs the agent on an existing bus, for example to share one NATS
// connection between several agents and a gateway in one binary. The runner
// does not close it.
func WithBus(b bus.Bus) Option {
	return func(o *options) error {
		if b == nil {
			return errors.New("agent: WithBus: nil bus")
		}
		o.bus = b
		return nil
	}
}

// WithDataDir keeps the embedded server's JetStream files in dir, so that
// streams and state survive a restart. Without it a temporary directory is
// used and removed when Run returns. It has no effect when joining a real
// NATS server.
func WithDataDir(dir string) Option {
	return func(o *options) error {
		if dir == "" {
			return errors.New("agent: WithDataDir: empty directory")
		}
		o.dataDir = dir
		return nil
	}
}

// WithStore keeps run state in s instead of the default JetStream KV store.
// The runner does not close it.
func WithStore(s store.Store) Option {
	return func(o *options) error {
		if s == nil {
			return errors.New("agent: WithStore: nil store")
		}
		o.store = s
		return nil
	}
}

// WithRedis keeps run state in the Redis server at url (redis:// or
// rediss://). It takes precedence over REDIS_URL.
func WithRedis(url string) Option {
	return func(o *options) error {
		if url == "" {
			return errors.New("agent: WithRedis: empty URL")
		}
		o.redisURL, o.redisSet = url, true
		return nil
	}
}

// EnvStandalone, set to 1 (or true), has the same effect as Standalone, so
// that a deployment can run an agent without the platform without changing
// its code.
const EnvStandalone = "SAAP_STANDALONE"

// Standalone runs every run with the agent's default configuration
// (Configurer) and never asks the platform for an instance's profile over
// the configuration RPC. Use it when no API gateway is around: local
// development, tests, agents driven only by other agents. A runner on the
// embedded NATS server (no NATS_URL, NATS_ENDPOINT, WithNATS or WithBus) is
// standalone without it, since no platform can reach that server; so is one
// with SAAP_STANDALONE=1 in its environment (EnvStandalone).
func Standalone() Option {
	return func(o *options) error {
		o.standalone = true
		return nil
	}
}

// Discoverable says whether the agent answers the gateway's class discovery
// (default true). Internal agents that only other agents call turn it off;
// they still consume their control events.
func Discoverable(on bool) Option {
	return func(o *options) error {
		o.discoverable = on
		return nil
	}
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("agent: WithLogger: nil logger")
		}
		o.logger = l
		return nil
	}
}

// WithTracerProvider sets where spans go and turns on OpenInference
// tracing (package semantic): run, step and semantic-event spans. Without
// it, a provider installed globally before Run does the same; with
// neither, the engine makes no spans at all (a provider installed after
// Run started is not used).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) error {
		if tp == nil {
			return errors.New("agent: WithTracerProvider: nil provider")
		}
		o.tracerProvider = tp
		return nil
	}
}

// WithInterceptors installs interceptors that follow the runner's work:
// each delivery, step, execution, run end, dropped output and dead letter
// (see package interceptor). They run in the order given, inside the
// tracing spans when tracing is on.
func WithInterceptors(ics ...interceptor.Interceptor) Option {
	return func(o *options) error {
		for i, ic := range ics {
			if ic == nil {
				return fmt.Errorf("agent: WithInterceptors: interceptor %d is nil", i)
			}
		}
		o.interceptors = append(o.interceptors, ics...)
		return nil
	}
}

// WithShutdownTimeout bounds how long a graceful shutdown waits for running
// steps (default 25 s, below the 30 s AckWait). Control events still being
// handled when it expires are handed back to the stream (nak) and run again
// on another replica or after the restart.
func WithShutdownTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("agent: WithShutdownTimeout: %v is not positive", d)
		}
		o.shutdownTimeout = d
		return nil
	}
}

// WithConcurrency bounds how many control events this replica handles at
// once (default 1000, as the reference).
func WithConcurrency(n int) Option {
	return func(o *options) error {
		if n <= 0 {
			return fmt.Errorf("agent: WithConcurrency: %d is not positive", n)
		}
		o.concurrency = n
		return nil
	}
}

// WithAckWait sets the runner consumer's AckWait (default 30 s, the
// reference's). Tests that kill replicas shorten it so that unacknowledged
// events come back quickly. The runner sends in-progress heartbeats well
// within it, so long steps are never redelivered while they run.
//
// All replicas of a class share one consumer: the last one to start
// reconciles the consumer to its setting.
func WithAckWait(d time.Duration) Option {
	return func(o *options) error {
		if d < 100*time.Millisecond {
			return fmt.Errorf("agent: WithAckWait: %v is below 100ms", d)
		}
		o.ackWait = d
		return nil
	}
}

// WithMaxDeliver sets how often a control event is delivered before it is
// given up (default -1: no limit; the outage budget decides). The runner
// tries the event at most n-1 times and keeps the server's last delivery
// for giving up itself, ending the run with an ExceptionEvent and
// dead-lettering the event, so that a process that crashes on an event
// every time cannot make it vanish. n must be at least 2, or -1.
func WithMaxDeliver(n int) Option {
	return func(o *options) error {
		if n != -1 && n < 2 {
			return fmt.Errorf("agent: WithMaxDeliver: %d must be at least 2 (one try and the delivery that gives up), or -1 for no limit", n)
		}
		o.maxDeliver = n
		return nil
	}
}

// OutageBudget sets how long the runner retries a control event whose
// handling fails for a transient reason, such as the state store or NATS
// being unavailable (default DefaultOutageBudget, 10 minutes). The budget
// counts the retry delays, which double from 1 s up to 30 s. When it is
// spent the run ends with an ExceptionEvent and the event is dead-lettered.
// Permanent failures (an output over the server's max payload, a subject
// too long) are not retried at all.
func OutageBudget(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("agent: OutageBudget: %v is negative", d)
		}
		o.outageBudget = d
		return nil
	}
}

// CrashLoopLimit sets how many handlings of a redelivered control event
// may be cut short by the process dying (SIGKILL, OOM, a node lost) before
// the event is given up: the run ends with an ExceptionEvent and the event
// is dead-lettered, so that an event that kills every replica that takes
// it cannot take the deployment down (default DefaultCrashLoopLimit).
// Raise it where replicas are killed often for reasons of their own.
func CrashLoopLimit(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("agent: CrashLoopLimit: %d must be at least 1", n)
		}
		o.crashLoopLimit = n
		return nil
	}
}

// WithReady calls f once the runner is connected, its stream and consumer
// exist and it takes events, just before Runner.Ready is closed. f must not
// block.
func WithReady(f func(Info)) Option {
	return func(o *options) error {
		o.ready = f
		return nil
	}
}

// WithCacheSize bounds how many runs' histories the runner keeps in memory
// (default DefaultCacheSize). A run whose history was evicted is reloaded from the
// stream when its next event arrives, so the bound trades memory for
// a read per event of a long-paused run.
func WithCacheSize(runs int) Option {
	return func(o *options) error {
		if runs <= 0 {
			return fmt.Errorf("agent: WithCacheSize: %d is not positive", runs)
		}
		o.cacheSize = runs
		return nil
	}
}

// WithReplicas sets how many copies of its streams and key-value buckets the
// runner asks the NATS servers to keep when it creates them (default 1): on
// a NATS cluster, 3 keeps every run going when one server dies, since
// JetStream needs a majority of the copies. It applies to the class's
// stream, the dead-letter stream and the JetStream KV state buckets; the
// consumers take their stream's count. Streams and buckets that exist
// already keep their setting. n is 1 to 5; a count above the cluster's
// size makes the start fail with the server's error. With WithBus the
// bus's own configuration decides for the streams (natsbus.Config.Replicas).
// docs/scaling.md explains running on a cluster.
func WithReplicas(n int) Option {
	return func(o *options) error {
		if n < 1 || n > 5 {
			return fmt.Errorf("agent: WithReplicas: %d is not between 1 and 5 (JetStream keeps at most 5 copies)", n)
		}
		o.replicas = n
		return nil
	}
}

// Template is a profile template of the agent class: a starting point the
// platform's admin UI offers when somebody creates a profile, published in
// discovery (templates). Name and Description are shown; Icon (default
// the class's) and the settings of Config (a value of the configuration
// type, or a map) fill the new profile.
type Template struct {
	Name, Description event.LocaleString
	Icon              string
	Config            any
}

// WithTemplates publishes profile templates in the class's discovery
// answer. New fails when a template has no name or its Config does not
// encode to a JSON object.
func WithTemplates(ts ...Template) Option {
	return func(o *options) error {
		for i, t := range ts {
			if t.Name == (event.LocaleString{}) {
				return fmt.Errorf("agent: WithTemplates: template %d has no name", i)
			}
		}
		o.templates = append(o.templates, ts...)
		return nil
	}
}
