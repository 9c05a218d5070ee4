package semantic

import (
	"container/list"
	"sync"
	"time"

	"github.com/saap-go/agent/store"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// openRuns holds the run spans started here until their run ends. A run
// may pause for days or end on another replica: the bounds keep the table
// small, and a span past them ends early, marked open.
type openRuns struct {
	mu     sync.Mutex
	byKey  map[store.RunKey]*list.Element
	order  list.List // of *openRun, oldest first
	max    int
	maxAge time.Duration
}

type openRun struct {
	key     store.RunKey
	span    trace.Span
	started time.Time
}

func newOpenRuns(max int, maxAge time.Duration) *openRuns {
	return &openRuns{byKey: map[store.RunKey]*list.Element{}, max: max, maxAge: maxAge}
}

// put holds span for run. A second span for a run already held (a
// redelivered start) replaces it: the first ends now.
func (o *openRuns) put(run store.RunKey, span trace.Span) {
	now := time.Now()
	var stale []trace.Span
	o.mu.Lock()
	if el, ok := o.byKey[run]; ok {
		stale = append(stale, el.Value.(*openRun).span)
		o.order.Remove(el)
	}
	o.byKey[run] = o.order.PushBack(&openRun{key: run, span: span, started: now})
	for o.order.Len() > o.max || o.order.Len() > 0 && o.maxAge > 0 && now.Sub(o.order.Front().Value.(*openRun).started) > o.maxAge {
		r := o.order.Remove(o.order.Front()).(*openRun)
		delete(o.byKey, r.key)
		stale = append(stale, r.span)
	}
	o.mu.Unlock()
	endOpen(stale)
}

// take removes and returns the span of run, or nil.
func (o *openRuns) take(run store.RunKey) trace.Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	el, ok := o.byKey[run]
	if !ok {
		return nil
	}
	delete(o.byKey, run)
	return o.order.Remove(el).(*openRun).span
}

func (o *openRuns) closeAll() {
	o.mu.Lock()
	var spans []trace.Span
	for el := o.order.Front(); el != nil; el = el.Next() {
		spans = append(spans, el.Value.(*openRun).span)
	}
	o.order.Init()
	clear(o.byKey)
	o.mu.Unlock()
	endOpen(spans)
}

func endOpen(spans []trace.Span) {
	for _, s := range spans {
		s.SetAttributes(attribute.Bool(attrRunOpen, true))
		s.End()
	}
}
