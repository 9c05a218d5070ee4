package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// EventSpec is one event type a class accepts or emits, as its discovery
// response describes it (`EventSpecs` on the wire).
type EventSpec struct {
	Name    string          `json:"event_name"`
	Schema  json.RawMessage `json:"event_schema,omitempty"`
	Parents []string        `json:"event_parents"`
}

// Has reports whether the spec's type is name or descends from it.
func (s EventSpec) Has(name string) bool { return s.Name == name || slices.Contains(s.Parents, name) }

// Class is what the gateway knows about one discovered agent class.
type Class struct {
	Name           string      `json:"agent_class"`
	Conversational bool        `json:"is_conversational"`
	StartEvents    []EventSpec `json:"start_events"`
	StopEvents     []EventSpec `json:"stop_events"`
	HITLRequests   []EventSpec `json:"hitl_request_events"`
	HITLResponses  []EventSpec `json:"hitl_response_events"`
	// Discovered is when the class last answered a discovery request.
	Discovered time.Time `json:"-"`
}

// startEvent returns the class's start event spec called name.
func (c *Class) startEvent(name string) (EventSpec, bool) {
	for _, s := range c.StartEvents {
		if s.Name == name {
			return s, true
		}
	}
	return EventSpec{}, false
}

// hitlResponse returns the class's HITL response spec called name.
func (c *Class) hitlResponse(name string) (EventSpec, bool) {
	for _, s := range c.HITLResponses {
		if s.Name == name {
			return s, true
		}
	}
	return EventSpec{}, false
}

// chatStart returns the start event a chat message becomes: the first start
// event that is a UserMessageEvent.
func (c *Class) chatStart() (EventSpec, bool) {
	for _, s := range c.StartEvents {
		if s.Has("UserMessageEvent") {
			return s, true
		}
	}
	return EventSpec{}, false
}

// registry holds the discovered classes.
type registry struct {
	mu      sync.RWMutex
	classes map[string]*Class
}

func (r *registry) get(name string) (*Class, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	c, ok := r.classes[name]
	return c, ok
}

func (r *registry) list() []*Class {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Class, 0, len(r.classes))
	for _, c := range r.classes {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *Class) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// Classes returns the classes the gateway serves, sorted by name.
func (g *Gateway) Classes() []*Class { return g.reg.list() }

// AddClass serves c's endpoints until a complete discovery cycle misses
// it. Discovery calls it for every answer; tests and embedders may call it
// to register a class they know without a round trip.
func (g *Gateway) AddClass(c *Class) error {
	if c == nil || c.Name == "" {
		return fmt.Errorf("gateway: class without agent_class")
	}
	if err := validToken("agent_class", c.Name); err != nil {
		return err
	}
	if c.Discovered.IsZero() {
		c.Discovered = g.now()
	}
	g.reg.mu.Lock()
	defer g.reg.mu.Unlock()
	g.reg.classes[c.Name] = c
	return nil
}

// Discover runs one discovery cycle now: it publishes a
// ClassDiscoveryRequestEvent to `class_discovery.agent.*.*.request.<call_id>`
// and collects AgentClassDiscoveryResponseEvents on
// `class_discovery.agent.*.*.response.<call_id>` for the configured window.
// The first answer per class wins. After a full window, classes that did not
// answer are removed, as the reference does.
//
// With want, Discover returns as soon as every named class has answered (the
// cycle then removes nothing): tests and examples use it to wait for their
// agent without sleeping. It returns the classes that answered in this
// cycle. Discover blocks until the window ends, every wanted class answered,
// or ctx is done; in the last case it returns ctx's error and changes
// nothing.
func (g *Gateway) Discover(ctx context.Context, want ...string) ([]string, error) {
	callID := event.NewID()
	reqSubject, err := topic.Discovery{Kind: topic.KindAgent, Class: topic.AnyClass, Dir: topic.DirRequest, CallID: callID}.Subject()
	if err != nil {
		return nil, err
	}
	respSubject, err := topic.DiscoveryResponses(topic.KindAgent, callID)
	if err != nil {
		return nil, err
	}

	type answer struct {
		class *Class
		err   error
	}
	answers := make(chan answer, 64)
	done := make(chan struct{})
	sub, err := g.bus.Subscribe(ctx, respSubject, "", func(m *bus.Msg) {
		var c Class
		err := json.Unmarshal(m.Data, &c)
		if err == nil && c.Name == "" {
			err = fmt.Errorf("response without agent_class")
		}
		select {
		case answers <- answer{&c, err}:
		case <-done:
		}
	})
	if err != nil {
		return nil, fmt.Errorf("gateway: discovery: subscribe %s: %w", respSubject, err)
	}
	defer func() {
		close(done)
		_ = sub.Unsubscribe()
	}()

	// A bare BaseEvent subclass without fields (bus.md §8.2).
	data, err := event.Marshal(event.Stamp(&event.ClassDiscoveryRequestEvent{}))
	if err != nil {
		return nil, fmt.Errorf("gateway: discovery: encode request: %w", err)
	}
	if err := g.bus.Publish(ctx, &bus.Msg{Subject: reqSubject, Data: data}); err != nil {
		return nil, fmt.Errorf("gateway: discovery: publish %s: %w", reqSubject, err)
	}

	window := time.NewTimer(g.cfg.DiscoveryWindow)
	defer window.Stop()
	seen := make(map[string]*Class)
	missing := make(map[string]bool, len(want))
	for _, w := range want {
		missing[w] = true
	}
	full := false
collect:
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-window.C:
			full = len(want) == 0
			break collect
		case a := <-answers:
			if a.err != nil {
				g.log.Warn("gateway: ignoring malformed discovery response", "err", a.err)
				continue
			}
			if _, dup := seen[a.class.Name]; dup {
				continue
			}
			if err := validToken("agent_class", a.class.Name); err != nil {
				g.log.Warn("gateway: ignoring discovery response", "err", err)
				continue
			}
			a.class.Discovered = g.now()
			seen[a.class.Name] = a.class
			delete(missing, a.class.Name)
			if len(want) > 0 && len(missing) == 0 {
				break collect
			}
		}
	}

	g.reg.mu.Lock()
	for name, c := range seen {
		g.reg.classes[name] = c
	}
	if full {
		for name := range g.reg.classes {
			if _, ok := seen[name]; !ok {
				g.log.Info("gateway: class did not answer discovery; endpoints removed", "class", name)
				delete(g.reg.classes, name)
			}
		}
	}
	g.reg.mu.Unlock()

	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(missing) > 0 {
		return names, fmt.Errorf("gateway: discovery: no answer from %v within %s", sortedKeys(missing), g.cfg.DiscoveryWindow)
	}
	return names, nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// discoverLoop runs a discovery cycle every period until ctx is done.
func (g *Gateway) discoverLoop(ctx context.Context) {
	t := time.NewTicker(g.cfg.DiscoveryPeriod)
	defer t.Stop()
	for {
		if _, err := g.Discover(ctx); err != nil && ctx.Err() == nil {
			g.log.Warn("gateway: discovery cycle failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Class returns the served class called name.
func (g *Gateway) Class(name string) (*Class, bool) { return g.reg.get(name) }
