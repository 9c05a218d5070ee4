package step

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"

	"github.com/saap-go/agent/event"
)

// Context is what a step (or a precondition) receives as its first
// parameter. It is a context.Context cancelled when the run is torn down or
// the process shuts down, plus the run's identity, its state and the
// services a step needs while it works. The dispatcher provides it; tests use
// the agenttest harness.
type Context interface {
	context.Context

	// Run identifies the run this execution belongs to.
	Run() Run
	// RunState is the run context: deleted when the run ends (namespaced by
	// agent class and run).
	RunState() State
	// ThreadState is the thread context: it outlives the run and is shared
	// by every run of the thread (namespaced by agent class and thread).
	ThreadState() State
	// Emit publishes a display event right away, e.g. a streamed ChunkEvent.
	// Control events are refused: they are a step's results.
	Emit(e event.Event) error
	// IdempotencyKey is stable for this execution: a re-run after a crash
	// sees the same key, so side effects keyed by it happen once.
	IdempotencyKey() string
	// Logger is a logger carrying the run's identity.
	Logger() *slog.Logger
	// Tracer starts spans under the step's span.
	Tracer() trace.Tracer
	// Config is the run's agent configuration, nil until the runtime provides
	// one. Config[T] is the typed accessor.
	Config() any
	// Locale is the run's locale, one of Locales: the run context's
	// "locale" (which the start event's locale field seeds), normalised by
	// NormalizeLocale, so DefaultLocale when the run names none.
	Locale() string
	// Translate returns the text of key in the run's locale from the
	// agent's Translator, or key itself when the agent has none.
	Translate(key string) string
}

// Run is the identity of a run, taken from the subject of its events.
type Run struct {
	Class     string // agent class
	AgentID   string
	ThreadID  string
	DisplayID string
	RunID     string
	// Trigger is the control event whose arrival started this execution.
	Trigger event.Event
}

// State is a key-value view of the run or the thread context. Values are
// stored as JSON, as the reference platform stores them, so Python and Go
// steps of the same agent class can share them.
type State interface {
	// Get decodes the value of key into v (a pointer) and reports whether
	// the key was present.
	Get(ctx context.Context, key string, v any) (bool, error)
	// Set stores v, JSON-encoded, under key.
	Set(ctx context.Context, key string, v any) error
	// Delete removes key; deleting an absent key is not an error.
	Delete(ctx context.Context, key string) error
	// Keys lists the keys present, in no particular order.
	Keys(ctx context.Context) ([]string, error)
	// Incr atomically adds delta to the integer stored under key (absent
	// counts as 0) and returns the new value.
	Incr(ctx context.Context, key string, delta int64) (int64, error)
}

// Config returns the run's agent configuration as a T, and false if there is
// none or it has another type.
func Config[T any](ctx Context) (T, bool) {
	v, ok := ctx.Config().(T)
	return v, ok
}
