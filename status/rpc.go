package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/saap-go/agent/store"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/topic"
)

// Error types of run-status error replies.
const (
	NotFoundType   = "NotFound"
	BadRequestType = "BadRequest"
)

// statusRequest is the body of a status request.
type statusRequest struct {
	Run string `json:"run_id"`
}

// maxStatusRequest bounds a request body before it is decoded.
const maxStatusRequest = 4 << 10

// Serve answers the run-status requests of class (topic.Runs) from
// s, until ctx is done or the subscription is unsubscribed. Every replica
// of the class may serve: the subscription is in a queue group, so each
// request is answered once. It holds nothing per run.
func Serve(ctx context.Context, b interface {
	bus.Subscriber
	bus.Publisher
}, s store.Store, class string, log *slog.Logger) (bus.Subscription, error) {
	if _, ok := s.(store.Statuses); !ok {
		return nil, fmt.Errorf("status: the store %T keeps no run status", s)
	}
	pattern, err := topic.RunsRequests(class)
	if err != nil {
		return nil, fmt.Errorf("status: status requests: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	sub, err := b.Subscribe(ctx, pattern, "saap_runs_"+class, func(m *bus.Msg) {
		reply, err := answerStatus(ctx, s, class, m)
		if err != nil {
			typ := BadRequestType
			if errors.Is(err, ErrNotFound) {
				typ = NotFoundType
			}
			if rerr := bus.RespondError(ctx, b, m, err, typ); rerr != nil {
				log.WarnContext(ctx, "status: status reply failed", "subject", m.Subject, "error", rerr)
			}
			return
		}
		if rerr := bus.Respond(ctx, b, m, reply, nil); rerr != nil {
			log.WarnContext(ctx, "status: status reply failed", "subject", m.Subject, "error", rerr)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("status: subscribe to status requests: %w", err)
	}
	return sub, nil
}

func answerStatus(ctx context.Context, s store.Store, class string, m *bus.Msg) ([]byte, error) {
	rpc, err := topic.ParseRPC(m.Subject)
	if err != nil {
		return nil, err
	}
	if len(m.Data) > maxStatusRequest {
		return nil, fmt.Errorf("status: status request of %d bytes, over the limit of %d", len(m.Data), maxStatusRequest)
	}
	switch rpc.EntityID {
	case topic.RunsStatus:
		var req statusRequest
		if err := json.Unmarshal(m.Data, &req); err != nil {
			return nil, fmt.Errorf("status: status request: %w", err)
		}
		st, err := Read(ctx, s, class, req.Run)
		if err != nil {
			return nil, err
		}
		return json.Marshal(st)
	case topic.RunsList:
		var q Query
		if err := json.Unmarshal(m.Data, &q); err != nil {
			return nil, fmt.Errorf("status: list request: %w", err)
		}
		page, err := List(ctx, s, class, q)
		if err != nil {
			return nil, err
		}
		return json.Marshal(page)
	}
	return nil, fmt.Errorf("status: %q is not a run-status operation (%s, %s)", rpc.EntityID, topic.RunsStatus, topic.RunsList)
}

// Request asks the replicas of class for the status of run over the
// bus. A run without a status record is an error wrapping ErrNotFound.
func Request(ctx context.Context, r bus.Requester, class, run string) (Record, error) {
	if err := topic.ValidateToken("run_id", run); err != nil {
		return Record{}, fmt.Errorf("status: status: %w", err)
	}
	body, _ := json.Marshal(statusRequest{Run: run})
	var st Record
	err := request(ctx, r, class, topic.RunsStatus, body, &st)
	return st, err
}

// RequestList asks the replicas of class for a page of its runs over the
// bus (see List).
func RequestList(ctx context.Context, r bus.Requester, class string, q Query) (Page, error) {
	body, err := json.Marshal(q)
	if err != nil {
		return Page{}, fmt.Errorf("status: list request: %w", err)
	}
	var page Page
	err = request(ctx, r, class, topic.RunsList, body, &page)
	return page, err
}

func request(ctx context.Context, r bus.Requester, class, op string, body []byte, v any) error {
	subj, err := topic.Runs(class, op).Subject()
	if err != nil {
		return fmt.Errorf("status: run status of %q: %w", class, err)
	}
	reply, err := r.Request(ctx, &bus.Msg{Subject: subj, Data: body})
	var re *bus.RemoteError
	if errors.As(err, &re) && re.Type == NotFoundType {
		return fmt.Errorf("%w: %s", ErrNotFound, re.Message)
	}
	if err != nil {
		return fmt.Errorf("status: run status of %s: %w", class, err)
	}
	if err := json.Unmarshal(reply.Data, v); err != nil {
		return fmt.Errorf("status: run status reply of %s: %w", class, err)
	}
	return nil
}
