package semantic

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/interceptor"
)

// Metric names. Every metric carries saap.agent.class; step metrics add
// saap.step.name and saap.step.outcome, waits saap.wait.kind.
const (
	MetricRunsStarted    = "saap.agent.runs.started"
	MetricRunsCompleted  = "saap.agent.runs.completed"
	MetricRunsCrashed    = "saap.agent.runs.crashed"
	MetricStepExecutions = "saap.agent.step.executions"
	MetricStepReruns     = "saap.agent.step.reruns"
	MetricStepDuration   = "saap.agent.step.duration"
	MetricDeadLetters    = "saap.agent.dead_letters"
	MetricHITLWaits      = "saap.agent.hitl.waits"
)

type metrics struct {
	started, completed, crashed metric.Int64Counter
	executions, reruns          metric.Int64Counter
	duration                    metric.Float64Histogram
	deadLetters, waits          metric.Int64Counter

	classes sync.Map // class -> metric.MeasurementOption
	steps   sync.Map // stepKey -> metric.MeasurementOption
}

type stepKey struct{ class, step, outcome string }

func newMetrics(m metric.Meter) *metrics {
	// An instrument that cannot be created is a no-op one: metrics must
	// never stop an agent.
	c := func(name, desc string) metric.Int64Counter {
		i, _ := m.Int64Counter(name, metric.WithDescription(desc), metric.WithUnit("1"))
		return i
	}
	d, _ := m.Float64Histogram(MetricStepDuration, metric.WithDescription("Duration of step executions, outputs published."),
		metric.WithUnit("s"))
	return &metrics{
		started:     c(MetricRunsStarted, "Runs started (StartEvents handled)."),
		completed:   c(MetricRunsCompleted, "Runs ended with a StopEvent."),
		crashed:     c(MetricRunsCrashed, "Runs ended with an ExceptionEvent."),
		executions:  c(MetricStepExecutions, "Step executions."),
		reruns:      c(MetricStepReruns, "Step executions run again after an interrupted one."),
		duration:    d,
		deadLetters: c(MetricDeadLetters, "Control messages dead-lettered."),
		waits:       c(MetricHITLWaits, "Questions asked (human, bot or agent in the loop) the run waits on."),
	}
}

func (m *metrics) class(class string) metric.MeasurementOption {
	if o, ok := m.classes.Load(class); ok {
		return o.(metric.MeasurementOption)
	}
	o := metric.WithAttributeSet(attribute.NewSet(attribute.String(attrClass, class)))
	m.classes.Store(class, o)
	return o
}

func (m *metrics) step(class, step, outcome string) metric.MeasurementOption {
	k := stepKey{class, step, outcome}
	if o, ok := m.steps.Load(k); ok {
		return o.(metric.MeasurementOption)
	}
	o := metric.WithAttributeSet(attribute.NewSet(attribute.String(attrClass, class),
		attribute.String(attrStep, step), attribute.String(attrOutcome, outcome)))
	m.steps.Store(k, o)
	return o
}

func (m *metrics) runStarted(ctx context.Context, class string) {
	m.started.Add(ctx, 1, m.class(class))
}

func (m *metrics) runEnded(ctx context.Context, class string, crashed bool) {
	if crashed {
		m.crashed.Add(ctx, 1, m.class(class))
	} else {
		m.completed.Add(ctx, 1, m.class(class))
	}
}

func (m *metrics) deadLetter(ctx context.Context, class string) {
	m.deadLetters.Add(ctx, 1, m.class(class))
}

func (m *metrics) stepDone(ctx context.Context, s interceptor.Step, outcome string, d time.Duration, outs []event.Event) {
	class := s.Context.Run().Class
	o := m.step(class, s.Name, outcome)
	m.executions.Add(ctx, 1, o)
	if s.Rerun {
		m.reruns.Add(ctx, 1, o)
	}
	m.duration.Record(ctx, d.Seconds(), o)
	for _, ev := range outs {
		if kind := waitKind(ev); kind != "" {
			m.waits.Add(ctx, 1, metric.WithAttributes(attribute.String(attrClass, class), attribute.String("saap.wait.kind", kind)))
		}
	}
}

// waitKind names the kind of question ev asks, or "".
func waitKind(ev event.Event) string {
	switch {
	case event.IsHITLRequest(ev):
		return "hitl"
	case event.IsBITLRequest(ev):
		return "bitl"
	case event.IsAITLRequest(ev):
		return "aitl"
	}
	return ""
}
