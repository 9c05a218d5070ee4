package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// Class is what the gateway knows about one discovered agent class: its
// discovery answer, decoded by the event codec like every event the gateway
// receives, and when that answer came.
type Class struct {
	// Response is the class's AgentClassDiscoveryResponseEvent.
	Response *event.AgentClassDiscoveryResponseEvent
	// Discovered is when the class last answered a discovery request.
	Discovered time.Time

	gen uint64 // the registry's generation when the class was put
}

// Name returns the class's agent_class.
func (c *Class) Name() string { return c.Response.AgentClass }

// specHas reports whether the spec's type is name or descends from it.
func specHas(s event.EventSpecs, name string) bool {
	return s.EventName == name || slices.Contains(s.EventParents, name)
}

// findSpec returns the spec called name.
func findSpec(specs []event.EventSpecs, name string) (event.EventSpecs, bool) {
	for _, s := range specs {
		if s.EventName == name {
			return s, true
		}
	}
	return event.EventSpecs{}, false
}

// startEvent returns the class's start event spec called name.
func (c *Class) startEvent(name string) (event.EventSpecs, bool) {
	return findSpec(c.Response.StartEvents, name)
}

// hitlResponse returns the class's HITL response spec called name.
func (c *Class) hitlResponse(name string) (event.EventSpecs, bool) {
	return findSpec(c.Response.HITLResponseEvents, name)
}

// chatStart returns the start event a chat message becomes: the first start
// event that is a UserMessageEvent.
func (c *Class) chatStart() (event.EventSpecs, bool) {
	for _, s := range c.Response.StartEvents {
		if specHas(s, "UserMessageEvent") {
			return s, true
		}
	}
	return event.EventSpecs{}, false
}

// registry holds the discovered classes.
type registry struct {
	mu      sync.RWMutex
	classes map[string]*Class
	// changed is closed, and replaced, whenever a class is added.
	changed chan struct{}
	// gen counts the classes put, so a cycle knows which came after its
	// start without trusting the clock.
	gen uint64
	// cycles counts the completed discovery cycles; last is when the
	// latest ended.
	cycles int
	last   time.Time
}

// putLocked serves c; the caller holds mu.
func (r *registry) putLocked(c *Class) {
	r.gen++
	c.gen = r.gen
	r.classes[c.Name()] = c
	close(r.changed)
	r.changed = make(chan struct{})
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
	slices.SortFunc(out, func(a, b *Class) int { return strings.Compare(a.Name(), b.Name()) })
	return out
}

// Classes returns the classes the gateway serves, sorted by name.
func (g *Gateway) Classes() []*Class { return g.reg.list() }

// AddClass serves the endpoints of the class resp describes (as its agent
// would answer discovery, e.g. discovery.Build) until a complete discovery
// cycle misses it. Tests and embedders use it to register a class they know
// without a round trip.
func (g *Gateway) AddClass(resp *event.AgentClassDiscoveryResponseEvent) error {
	c, err := newClass(resp)
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	c.Discovered = g.now()
	g.reg.mu.Lock()
	defer g.reg.mu.Unlock()
	g.reg.putLocked(c)
	return nil
}

// WaitClass blocks until the gateway serves the class called name (it
// answered discovery, announced itself or was added) and returns it, or
// returns ctx's error. Tests and embedders use it to wait for an agent
// they started without sleeping.
func (g *Gateway) WaitClass(ctx context.Context, name string) (*Class, error) {
	for {
		g.reg.mu.RLock()
		c, ok := g.reg.classes[name]
		changed := g.reg.changed
		g.reg.mu.RUnlock()
		if ok {
			return c, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("gateway: waiting for class %s: %w", name, ctx.Err())
		case <-changed:
		}
	}
}

// unknownClass explains a request for a class the gateway does not serve:
// whether discovery has run yet and which classes it knows.
func (g *Gateway) unknownClass(name string) string {
	g.reg.mu.RLock()
	known := make([]string, 0, len(g.reg.classes))
	for n := range g.reg.classes {
		known = append(known, n)
	}
	cycles, last := g.reg.cycles, g.reg.last
	g.reg.mu.RUnlock()
	slices.Sort(known)
	list := "none"
	if len(known) > 0 {
		list = strings.Join(known, ", ")
	}
	ran := "no discovery cycle has completed yet"
	if cycles > 0 {
		ran = "the last discovery cycle ended at " + last.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("unknown agent class %.80q (known classes: %s; %s)", name, list, ran)
}

// announcePattern matches the announcements agents publish when they start.
var announcePattern = topic.DiscoveryAnnouncements(topic.KindAgent)

// listenAnnouncements serves every class that announces itself, at once,
// so an agent started after the gateway needs no discovery cycle.
func (g *Gateway) listenAnnouncements(ctx context.Context) (bus.Subscription, error) {
	sub, err := g.bus.Subscribe(ctx, announcePattern, "", g.announced)
	if err != nil {
		return nil, fmt.Errorf("gateway: subscribe %s: %w", announcePattern, err)
	}
	return sub, nil
}

func (g *Gateway) announced(m *bus.Msg) {
	resp, err := event.UnmarshalAs[event.AgentClassDiscoveryResponseEvent](m.Data)
	var c *Class
	if err == nil {
		c, err = newClass(resp)
	}
	if err != nil {
		g.log.Warn("gateway: ignoring malformed class announcement", "subject", m.Subject, "err", err)
		return
	}
	// class_discovery.agent.<Class>.*.announce.<id>: the subject names the
	// class the payload describes.
	if tokens := strings.Split(m.Subject, "."); len(tokens) != 6 || tokens[2] != c.Name() {
		g.log.Warn("gateway: ignoring class announcement whose subject names another class",
			"subject", m.Subject, "agent_class", c.Name())
		return
	}
	c.Discovered = g.now()
	g.reg.mu.Lock()
	g.reg.putLocked(c)
	g.reg.mu.Unlock()
	g.log.Info("gateway: class announced", "class", c.Name())
}

// newClass checks a discovery answer and wraps it.
func newClass(resp *event.AgentClassDiscoveryResponseEvent) (*Class, error) {
	if resp == nil || resp.AgentClass == "" {
		return nil, errors.New("discovery response without agent_class")
	}
	if err := validToken("agent_class", resp.AgentClass); err != nil {
		return nil, err
	}
	return &Class{Response: resp}, nil
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
		var c *Class
		resp, err := event.UnmarshalAs[event.AgentClassDiscoveryResponseEvent](m.Data)
		if err == nil {
			c, err = newClass(resp)
		}
		select {
		case answers <- answer{c, err}:
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

	// Classes put from here on may have missed the request.
	g.reg.mu.RLock()
	startGen := g.reg.gen
	g.reg.mu.RUnlock()
	// A bare BaseEvent subclass without fields.
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
			name := a.class.Name()
			if _, dup := seen[name]; dup {
				continue
			}
			a.class.Discovered = g.now()
			seen[name] = a.class
			delete(missing, name)
			if len(want) > 0 && len(missing) == 0 {
				break collect
			}
		}
	}

	g.reg.mu.Lock()
	for _, c := range seen {
		g.reg.putLocked(c)
	}
	if full {
		g.reg.cycles++
		g.reg.last = g.now()
		for name, c := range g.reg.classes {
			// A class announced or added during the window could not
			// answer a request sent before it started.
			if _, ok := seen[name]; !ok && c.gen <= startGen {
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

// discoverLoop serves announced classes and runs a discovery cycle every
// period until ctx is done. It listens for announcements before the first
// cycle's request goes out.
func (g *Gateway) discoverLoop(ctx context.Context) {
	if sub, err := g.listenAnnouncements(ctx); err != nil {
		g.log.Warn("gateway: class announcements are not served; new agents wait for a discovery cycle", "err", err)
	} else {
		defer func() { _ = sub.Unsubscribe() }()
	}
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
