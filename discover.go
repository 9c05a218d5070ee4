package agent

import (
	"context"
	"fmt"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/discovery"
	"github.com/saap-go/agent/event"
)

// discoveryResponse builds the class's discovery answer once, in New, so
// that a problem (an unrepresentable config type) is reported before any
// I/O.
func discoveryResponse(r *Runner) (*event.AgentClassDiscoveryResponseEvent, error) {
	c := discovery.Class{}
	if d, ok := r.agent.(Describer); ok {
		desc := d.Describe()
		c.Name, c.Description, c.Icon = desc.Name, desc.Description, desc.Icon
	}
	c.Config = r.cfg.defaults
	resp, err := discovery.Build(r.workflow, c)
	if err != nil {
		return nil, fmt.Errorf("%w: discovery: %w", ErrInvalidAgent, err)
	}
	return resp, nil
}

// serveDiscovery answers the gateway's class discovery until shutdown.
func (r *Runner) serveDiscovery(ctx context.Context, res *resources, b bus.Bus) error {
	resp, err := discovery.Serve(ctx, b, r.discovery, discovery.WithLogger(r.log))
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	res.mu.Lock()
	res.discovery = resp.Stop
	res.mu.Unlock()
	return nil
}
