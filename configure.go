package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/saap-go/agent/config"
	"github.com/saap-go/agent/dispatch"
	"github.com/saap-go/agent/step"
)

// configResolver plugs the configuration RPC into the engine (dispatch.md §2
// steps 4 and 6): the instance's profile is fetched once per run, on its
// StartEvent, merged over the agent's defaults and validated; a failure ends
// the run with an ExceptionEvent naming the failing fields, never values.
type configResolver struct {
	src      config.Source
	defaults any          // the Configurer's value, or nil
	typ      reflect.Type // its type, or nil
}

var _ dispatch.ConfigResolver = (*configResolver)(nil)

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
	if _, err := config.Merge[any](d, nil); err != nil {
		return nil, fmt.Errorf("%w: DefaultConfig: %w", ErrInvalidAgent, err)
	}
	r.defaults, r.typ = d, t
	return r, nil
}

// Resolve fetches the instance's profile.
func (r *configResolver) Resolve(ctx context.Context, run step.Run) (json.RawMessage, error) {
	raw, err := r.src.Fetch(ctx, run.Class, run.AgentID)
	if err != nil {
		return nil, fmt.Errorf("agent configuration of %s/%s could not be loaded: %w", run.Class, run.AgentID, err)
	}
	return raw, nil
}

// Decode merges the stored profile over the defaults and validates it.
func (r *configResolver) Decode(raw json.RawMessage) (any, error) {
	if r.typ == nil {
		m, err := config.Merge(map[string]any{}, raw)
		if err != nil {
			return nil, invalidConfig(err)
		}
		return m, nil
	}
	// config.Merge is generic and the type is known only at run time: merge
	// into a generic object, then decode into the configuration type.
	merged, err := config.Merge[any](r.defaults, raw)
	if err != nil {
		return nil, invalidConfig(err)
	}
	data, err := json.Marshal(merged)
	if err != nil {
		return nil, invalidConfig(err)
	}
	p := reflect.New(r.typ)
	if err := json.Unmarshal(data, p.Interface()); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			// te's message quotes the value: keep only the field.
			return nil, invalidConfig(config.Invalid(te.Field, "invalid value"))
		}
		return nil, invalidConfig(config.Invalid("(root)", "invalid value"))
	}
	for _, v := range []any{p.Interface(), p.Elem().Interface()} {
		if val, ok := v.(config.Validator); ok {
			if err := val.Validate(); err != nil {
				var ve *config.ValidationError
				if !errors.As(err, &ve) {
					// Its text may quote a value: keep it out of the message.
					ve = &config.ValidationError{Err: err}
				}
				return nil, invalidConfig(ve)
			}
			break
		}
	}
	return p.Elem().Interface(), nil
}

// invalidConfig phrases a configuration failure as the reference does
// ("configuration is invalid"), naming fields only.
func invalidConfig(err error) error {
	return fmt.Errorf("agent configuration is invalid: %w", err)
}
