package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/discovery"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// Describe returns the discovery answer of p: its class, texts, an empty
// configuration form, and the work it takes from humans, programs and
// agents (human_inputs, program_inputs, agent_inputs) and, as an extra
// member, the start events, all as event specs, from which a gateway
// derives the submission routes (NewSubmitterFromDiscovery).
func Describe(p *Process) (*event.ProcessClassDiscoveryResponseEvent, error) {
	c, err := p.compile()
	if err != nil {
		return nil, err
	}
	var human, program, agent []string
	for _, s := range c.wf.Steps() {
		for _, n := range s.Triggers() {
			switch {
			case isA(n, "HumanWorkEvent"):
				human = append(human, n)
			case isA(n, "ProgramWorkEvent"):
				program = append(program, n)
			case isA(n, "AgentWorkEvent"):
				agent = append(agent, n)
			}
		}
	}
	var errs []error
	specs := func(names []string) []json.RawMessage {
		slices.Sort(names)
		out := []json.RawMessage{}
		for _, n := range slices.Compact(names) {
			sp, err := discovery.EventSpec(n)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			raw, err := json.Marshal(sp)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, raw)
		}
		return out
	}
	desc := p.Description
	if desc == "" {
		desc = p.Class
	}
	r := &event.ProcessClassDiscoveryResponseEvent{
		ProcessClass:       c.class,
		Name:               event.L(c.class, c.class, c.class, c.class).Ptr(),
		Description:        event.L(desc, desc, desc, desc).Ptr(),
		Icon:               "mage:broadcast",
		Form:               []json.RawMessage{},
		ProcessConfigSpecs: &event.ConfigSpecs{ConfigClass: c.class + "Config", ConfigSchema: map[string]json.RawMessage{}},
		HumanInputs:        specs(human),
		ProgramInputs:      specs(program),
		AgentInputs:        specs(agent),
		Templates:          []json.RawMessage{},
	}
	// The start events are an addition of this SDK: a gateway needs them
	// to open walkthroughs (see NewSubmitterFromDiscovery).
	starts, err := json.Marshal(specs(slices.Clone(c.wf.StartEvents())))
	if err != nil {
		errs = append(errs, err)
	} else if err := event.SetExtra(r, "start_events", starts); err != nil {
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
