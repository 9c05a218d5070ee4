package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/saap-go/agent/internal/engine"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/config"
	"github.com/saap-go/agent/step"
)

// configResolver plugs the configuration RPC into the engine: the
// instance's profile is fetched once per run, on its StartEvent, merged over
// the agent's defaults and validated; a failure ends the run with an
// ExceptionEvent naming the failing fields, never values.
type configResolver struct {
	src      config.Source
	defaults any  // the Configurer's value, or nil
	static   bool // src is config.Standalone: every replica resolves the same
}

var _ engine.ConfigResolver = (*configResolver)(nil)

func newConfigResolver(a Agent) (*configResolver, error) {
	r := &configResolver{}
	c, ok := a.(Configurer)
	if !ok {
		return r, nil
	}
	d := c.DefaultConfig()
	if d == nil {
		return r, nil
	}
	t := reflect.TypeOf(d)
	if t.Kind() == reflect.Pointer {
		return nil, fmt.Errorf("%w: DefaultConfig returns a %v; return the struct value, not a pointer", ErrInvalidAgent, t)
	}
	// Defaults may be incomplete (a required API key comes from the
	// profile), so only their shape is checked here, not Validate.
	if b, err := json.Marshal(d); err != nil {
		return nil, fmt.Errorf("%w: DefaultConfig: %w", ErrInvalidAgent, err)
	} else if len(b) == 0 || b[0] != '{' {
		return nil, fmt.Errorf("%w: DefaultConfig returns a %v, which does not encode to a JSON object", ErrInvalidAgent, t)
	}
	r.defaults = d
	return r, nil
}

// Resolve fetches the instance's profile.
func (r *configResolver) Resolve(ctx context.Context, run step.Run) (json.RawMessage, error) {
	raw, err := r.src.Fetch(ctx, run.Class, run.AgentID)
	if err != nil {
		if errors.Is(err, bus.ErrNoResponders) || errors.Is(err, config.ErrTimeout) {
			return nil, fmt.Errorf("agent configuration of %s/%s could not be loaded: no platform answered the configuration request (%w); "+
				"to run on the agent's default configuration without the platform, use agent.Standalone() or set %s=1",
				run.Class, run.AgentID, err, EnvStandalone)
		}
		return nil, fmt.Errorf("agent configuration of %s/%s could not be loaded: %w", run.Class, run.AgentID, err)
	}
	return raw, nil
}

// Static reports whether every replica resolves the same configuration
// (standalone: the defaults), so that a run's start need not store it.
func (r *configResolver) Static() bool { return r.static }

// Decode merges the stored profile over the defaults and validates it
// through config.MergeValue, so the config package's type and null checks and
// the type's Validate apply and every failing field is named (never a value).
// Without a Configurer the result is the profile as a generic object.
func (r *configResolver) Decode(raw json.RawMessage) (any, error) {
	v, err := config.MergeValue(r.defaults, raw)
	if err != nil {
		return nil, invalidConfig(err)
	}
	return v, nil
}

// invalidConfig phrases a configuration failure as the reference does
// ("configuration is invalid"), naming fields only.
func invalidConfig(err error) error {
	return fmt.Errorf("agent configuration is invalid: %w", err)
}
