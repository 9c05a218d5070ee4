package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/discovery"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// Describe returns the discovery answer of p, in the reference's shapes:
// its class and texts; the configuration form and schema generated from
// p.Config; the work it takes from humans and programs (human_inputs and
// program_inputs, each with the route and method of the Submitter's
// handler that takes it and whether it starts a walkthrough) and from
// agents (agent_inputs, with the agent class and id of the route whose
// answer it is); and, as an extra member, the start events as event specs,
// from which a gateway derives the submission routes
// (NewSubmitterFromDiscovery).
func Describe(p *Process) (*event.ProcessClassDiscoveryResponseEvent, error) {
	c, err := p.compile()
	if err != nil {
		return nil, err
	}
	var errs []error
	spec := func(name string) event.EventSpecs {
		sp, err := discovery.EventSpec(name)
		if err != nil {
			errs = append(errs, err)
		}
		return sp
	}
	starts := slices.Clone(c.wf.StartEvents())
	slices.Sort(starts)
	var names []string
	for _, s := range c.wf.Steps() {
		names = append(names, s.Triggers()...)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	human, program, agent := []event.HumanInSpecs{}, []event.ProgramInSpecs{}, []event.AgentInSpecs{}
	for _, n := range names {
		start := isA(n, "ProcessStartEvent") || slices.Contains(starts, n)
		route := "/processes/" + c.class + "/{process_id}/walkthroughs/{walkthrough_id}/work"
		if start {
			route = "/processes/" + c.class + "/{process_id}/walkthroughs"
		}
		switch {
		case isA(n, "HumanWorkEvent"):
			label := event.L(n, n, n, n)
			human = append(human, event.HumanInSpecs{Name: label, Description: label, Route: route, Method: http.MethodPost,
				IsProcessStart: start, EventSpecs: spec(n), Form: []json.RawMessage{}})
		case isA(n, "ProgramWorkEvent"):
			program = append(program, event.ProgramInSpecs{Route: route, Method: http.MethodPost, IsProcessStart: start, EventSpecs: spec(n)})
		case isA(n, "AgentWorkEvent"):
			in := event.AgentInSpecs{IsProcessStart: start, EventSpecs: spec(n)}
			for _, r := range c.routes {
				if r.Kind == AgentWork && r.Answer == n {
					in.AgentClass, in.AgentID = r.AgentClass, r.AgentID
				}
			}
			agent = append(agent, in)
		}
	}
	desc := p.Description
	if desc == "" {
		desc = p.Class
	}
	form, err := discovery.ProcessForm(c.config)
	if err != nil {
		errs = append(errs, err)
	}
	specs, err := discovery.ProcessConfigSpecs(c.config, c.class, "")
	if err != nil {
		errs = append(errs, err)
	}
	r := &event.ProcessClassDiscoveryResponseEvent{
		ProcessClass:       c.class,
		Name:               event.L(c.class, c.class, c.class, c.class).Ptr(),
		Description:        event.L(desc, desc, desc, desc).Ptr(),
		Icon:               discovery.DefaultProcessIcon,
		Form:               form,
		ProcessConfigSpecs: specs,
		HumanInputs:        human,
		ProgramInputs:      program,
		AgentInputs:        agent,
		Templates:          []json.RawMessage{},
	}
	// The start events are an addition of this SDK: a gateway needs them
	// to open walkthroughs (see NewSubmitterFromDiscovery).
	startSpecs := []event.EventSpecs{}
	for _, n := range starts {
		startSpecs = append(startSpecs, spec(n))
	}
	if raw, err := json.Marshal(startSpecs); err != nil {
		errs = append(errs, err)
	} else if err := event.SetExtra(r, "start_events", raw); err != nil {
		errs = append(errs, err)
	}
	return r, errors.Join(errs...)
}

// serveDiscovery answers the process discovery requests addressed to the
// class or to every process class, until ctx is done.
func serveDiscovery(ctx context.Context, b bus.Bus, resp *event.ProcessClassDiscoveryResponseEvent, o options) (bus.Subscription, error) {
	class := resp.ProcessClass
	template := *resp
	return b.Subscribe(ctx, topic.DiscoveryRequests(topic.KindProcess), "", func(m *bus.Msg) {
		req, err := topic.ParseDiscovery(m.Subject)
		if err != nil || (req.Class != topic.AnyClass && req.Class != class) {
			return
		}
		subject, err := topic.Discovery{Kind: topic.KindProcess, Class: class, Dir: topic.DirResponse, CallID: req.CallID}.Subject()
		if err != nil {
			o.log.Warn("process: cannot answer a discovery request", "subject", m.Subject, "error", err)
			return
		}
		answer := template
		answer.EventID = event.NewID()
		answer.CreatedAt = time.Now().UnixNano()
		data, err := event.Marshal(&answer)
		if err != nil {
			o.log.Warn("process: discovery answer does not encode", "error", err)
			return
		}
		if err := b.Publish(ctx, &bus.Msg{Subject: subject, Data: data}); err != nil {
			o.log.Warn("process: discovery answer", "error", fmt.Errorf("publish %s: %w", subject, err))
		}
	})
}

// Discover asks every process class on b to describe itself and collects
// the answers that arrive within wait, one per class, sorted by class.
// A gateway builds its submission routes from them with
// NewSubmitterFromDiscovery.
func Discover(ctx context.Context, b bus.Bus, wait time.Duration) ([]*event.ProcessClassDiscoveryResponseEvent, error) {
	call := event.NewID()
	respSubj, err := topic.DiscoveryResponses(topic.KindProcess, call)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	byClass := map[string]*event.ProcessClassDiscoveryResponseEvent{}
	sub, err := b.Subscribe(ctx, respSubj, "", func(m *bus.Msg) {
		e, err := event.Unmarshal(m.Data)
		if err != nil {
			return
		}
		if r, ok := e.(*event.ProcessClassDiscoveryResponseEvent); ok {
			mu.Lock()
			byClass[r.ProcessClass] = r
			mu.Unlock()
		}
	})
	if err != nil {
		return nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	reqSubj, err := topic.Discovery{Kind: topic.KindProcess, Class: topic.AnyClass, Dir: topic.DirRequest, CallID: call}.Subject()
	if err != nil {
		return nil, err
	}
	req := &event.ClassDiscoveryRequestEvent{}
	req.EventID, req.CreatedAt = call, time.Now().UnixNano()
	data, err := event.Marshal(req)
	if err != nil {
		return nil, err
	}
	if err := b.Publish(ctx, &bus.Msg{Subject: reqSubj, Data: data}); err != nil {
		return nil, err
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	mu.Lock()
	defer mu.Unlock()
	out := make([]*event.ProcessClassDiscoveryResponseEvent, 0, len(byClass))
	for _, r := range byClass {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *event.ProcessClassDiscoveryResponseEvent) int {
		return strings.Compare(a.ProcessClass, b.ProcessClass)
	})
	return out, nil
}
