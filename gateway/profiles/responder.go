package profiles

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/config"
	"github.com/saap-go/agent/topic"
)

// ResponderBus is what a Responder needs of a transport. Every bus.Bus is
// one.
type ResponderBus interface {
	bus.Subscriber
	bus.Publisher
}

// ResponderOptions configure Serve. The zero value answers as the
// reference platform does.
type ResponderOptions struct {
	// UnknownNotFound answers found:false for an instance with no stored
	// profile, so its runs end with an error. Default false: the
	// reference's answer, found:true with an empty configuration, on which
	// the agent runs with its defaults.
	UnknownNotFound bool
	// Classes, when set, limits the answers to the agent classes it
	// accepts: a request for another class is left unanswered, for the
	// responder that holds that class's profiles. Without it every class
	// is answered, as the platform's one responder does; set it where
	// several responders with different stores share a NATS account.
	Classes func(class string) bool
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Responder answers the agents' config RPC from a Store until Stop.
type Responder struct {
	sub bus.Subscription
}

// requestPattern is what the reference's config responder listens on.
var requestPattern = "aihub.rpc.config." + topic.KindAgent + ".*.*"

// Serve answers config requests on aihub.rpc.config.agent.*.* from st, as
// the platform's API does: a plain subscription with no queue group (every
// gateway replica answers, the agent keeps the first reply), the instance
// named by the request body, the reply
//
//	{"agent_class": ..., "agent_id": ..., "config": {...}, "found": true, "error": null}
//
// found:true with config {} for an instance with no profile (unless
// UnknownNotFound), found:false with the error's text when the store fails,
// and the reference's {"error", "error_type"} reply to a request that does
// not decode. ctx bounds the store reads; Stop ends the subscription.
func Serve(ctx context.Context, b ResponderBus, st *Store, o ResponderOptions) (*Responder, error) {
	if b == nil || st == nil {
		return nil, errors.New("profiles: Serve needs a bus and a Store")
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	h := func(m *bus.Msg) {
		if m.Reply == "" || (o.Classes != nil && !o.Classes(classOf(m.Subject))) {
			return
		}
		rctx, cancel := context.WithTimeout(ctx, config.DefaultTimeout)
		defer cancel()
		data, err := answer(rctx, st, m.Data, o.UnknownNotFound)
		if err != nil {
			if rerr := bus.RespondError(rctx, b, m, err, "ValidationError"); rerr != nil {
				log.Warn("profiles: config reply failed", "subject", m.Subject, "error", rerr)
			}
			return
		}
		if err := bus.Respond(rctx, b, m, data, nil); err != nil {
			log.Warn("profiles: config reply failed", "subject", m.Subject, "error", err)
		}
	}
	sub, err := b.Subscribe(ctx, requestPattern, "", h)
	if err != nil {
		return nil, fmt.Errorf("profiles: subscribe %s: %w", requestPattern, err)
	}
	return &Responder{sub: sub}, nil
}

// classOf is the class token of a config request's subject,
// aihub.rpc.config.agent.<class>.<id>.
func classOf(subject string) string {
	parts := strings.Split(subject, ".")
	if len(parts) != 6 {
		return ""
	}
	return parts[4]
}

// Stop ends the subscription; it is idempotent.
func (r *Responder) Stop() error { return r.sub.Unsubscribe() }

// answer builds the reply to one request body; an error means the request
// itself is malformed.
func answer(ctx context.Context, st *Store, body []byte, unknownNotFound bool) ([]byte, error) {
	var req config.Request
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("config request: not a JSON object with agent_class and agent_id: %v", err)
	}
	if req.AgentClass == "" || req.AgentID == "" {
		return nil, errors.New("config request: agent_class and agent_id are required")
	}
	reply := config.Reply{AgentClass: req.AgentClass, AgentID: req.AgentID, Config: json.RawMessage("{}"), Found: true}
	p, err := st.Get(ctx, req.AgentClass, req.AgentID)
	switch {
	case err == nil:
		reply.Config = p.Config
	case errors.Is(err, ErrNotFound) && !unknownNotFound:
	default:
		msg := err.Error()
		reply.Found, reply.Error = false, &msg
	}
	return json.Marshal(reply)
}
