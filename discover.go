package agent

import (
	"context"
	"encoding/json"
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
	for i, t := range r.o.templates {
		data, err := templateJSON(t)
		if err != nil {
			return nil, fmt.Errorf("%w: template %d: %w", ErrInvalidAgent, i, err)
		}
		c.Templates = append(c.Templates, data)
	}
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

// templateJSON writes a template as the reference's TemplateData: name,
// description and icon, then the settings of its Config.
func templateJSON(t Template) (json.RawMessage, error) {
	obj := map[string]any{}
	if t.Config != nil {
		data, err := json.Marshal(t.Config)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(data, &obj); err != nil || obj == nil {
			return nil, fmt.Errorf("its Config (%T) does not encode to a JSON object", t.Config)
		}
	}
	locale := func(l event.LocaleString) map[string]string {
		return map[string]string{"de": l.De, "en": l.En, "fr": l.Fr, "it": l.It}
	}
	obj["name"], obj["description"] = locale(t.Name), locale(t.Description)
	if t.Icon != "" {
		obj["icon"] = t.Icon
	}
	return json.Marshal(obj)
}
