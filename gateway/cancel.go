package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/status"
)

// Run cancellation over HTTP, an extension of this SDK:
//
//	POST /api/v1/saap/runs/{class}/{run}/cancel   {"reason": "..."} (optional)
//
// The members of the run's thread may cancel it; to anybody else the run
// is as unknown as one that does not exist (404). 202 once the request is
// on the run (it stops shortly after: its status turns cancelled), 409 for
// a run that has ended.

// CancelRequest asks the gateway to cancel a run.
type CancelRequest struct {
	// User cancels; they must be a member of the run's thread.
	User *event.UserIdentity
	// Class and Run name the run.
	Class, Run string
	// AgentID, Thread and Display address the run when the caller knows
	// them (an adapter that started it): the run's status is then not
	// asked for, and the engine refuses a request whose agent id or thread
	// are not the run's. Empty: they come from the run's status.
	AgentID, Thread, Display string
	// Reason says why; optional, at most event.MaxCancelReason bytes.
	Reason string
	// Header is sent with the request (X-AIHub-* headers; the gateway
	// sets the user's).
	Header bus.Header
}

// Cancel asks a run to stop: it publishes a RunCancelRequestedEvent on the
// run's control subject, which the run's engine acts on (its running steps
// see their context cancelled, nothing of it starts after, compensations
// run, and it ends with a RunCancelledEvent and the status cancelled). It
// returns the run's status as it was (only Class, Run, AgentID, Thread and
// Display when the request addressed the run itself). Refusals are errors
// whose ErrorStatus is 400 (a bad id or reason), 404 (an unknown class or
// run, or a run of a thread the user is not a member of) or 409 (the run
// has ended); 503 when no runner answers status requests.
func (g *Gateway) Cancel(ctx context.Context, req CancelRequest) (status.Record, error) {
	if req.User == nil || req.User.ID == "" {
		return status.Record{}, &requestError{status: http.StatusUnauthorized, msg: "gateway: a cancel needs a user"}
	}
	if _, ok := g.reg.get(req.Class); !ok {
		return status.Record{}, &requestError{status: http.StatusNotFound, field: "agent_class", msg: g.unknownClass(req.Class)}
	}
	if err := validToken("run_id", req.Run); err != nil {
		return status.Record{}, badRequest("run_id", "%v", err)
	}
	by := req.User.ID
	if len(by) > event.MaxCancelBy {
		by = by[:event.MaxCancelBy]
	}
	if err := status.CheckCancel(req.Reason, by); err != nil {
		return status.Record{}, badRequest("reason", "%v", err)
	}
	notFound := &requestError{status: http.StatusNotFound, field: "run_id",
		msg: fmt.Sprintf("run %s of agent class %s is not known", req.Run, req.Class)}
	var st status.Record
	if req.Thread != "" {
		for _, f := range []struct{ name, v string }{{"agent_id", req.AgentID}, {"thread_id", req.Thread}, {"display_id", req.Display}} {
			if err := validToken(f.name, f.v); err != nil {
				return status.Record{}, badRequest(f.name, "%v", err)
			}
		}
		st = status.Record{Class: req.Class, Run: req.Run, AgentID: req.AgentID, Thread: req.Thread, Display: req.Display}
	} else {
		rq, ok := g.bus.(bus.Requester)
		if !ok {
			return status.Record{}, &requestError{status: http.StatusNotImplemented, msg: "gateway: the bus does no request/reply, so runs cannot be looked up"}
		}
		var err error
		st, err = status.Request(ctx, rq, req.Class, req.Run)
		var re *bus.RemoteError
		switch {
		case errors.Is(err, status.ErrNotFound):
			return status.Record{}, notFound
		case errors.Is(err, bus.ErrNoResponders):
			return status.Record{}, &requestError{status: http.StatusServiceUnavailable, msg: "no runner of the class answers run-status requests"}
		case errors.As(err, &re) && re.Type == status.BadRequestType:
			return status.Record{}, badRequest("", "%s", re.Message)
		case err != nil:
			return status.Record{}, err
		}
	}
	if err := g.checkMember(ctx, st.Thread, req.User); err != nil {
		var re *requestError
		if errors.As(err, &re) && re.status == http.StatusForbidden {
			return status.Record{}, notFound
		}
		return status.Record{}, err
	}
	if st.State.Ended() {
		return st, &requestError{status: http.StatusConflict, field: "run_id",
			msg: fmt.Sprintf("run %s has ended (%s): there is nothing to cancel", req.Run, st.State)}
	}
	if _, err := status.PublishCancel(ctx, g.bus, st, req.Reason, by, g.adapterHeader(req.Header, req.User)); err != nil {
		return st, fmt.Errorf("gateway: %w", err)
	}
	return st, nil
}

// cancelBody is the optional body of the cancel route.
type cancelBody struct {
	Reason string `json:"reason"`
}

// maxCancelBody bounds the cancel route's body before it is decoded.
const maxCancelBody = 8 << 10

// serveRunCancel answers POST /api/v1/saap/runs/{class}/{run}/cancel.
func (g *Gateway) serveRunCancel(w http.ResponseWriter, r *http.Request) {
	user, ok := g.authenticate(w, r)
	if !ok || !g.statusAllowed(w, user) {
		return
	}
	var body cancelBody
	data, err := io.ReadAll(io.LimitReader(r.Body, maxCancelBody+1))
	switch {
	case err != nil:
		g.fail(w, badRequest("", "body: %v", err))
		return
	case len(data) > maxCancelBody:
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body: over the limit of %d bytes", maxCancelBody), "")
		return
	case len(strings.TrimSpace(string(data))) > 0:
		if err := json.Unmarshal(data, &body); err != nil {
			g.fail(w, badRequest("", "body: want {\"reason\": \"...\"}: %v", err))
			return
		}
	}
	st, err := g.Cancel(r.Context(), CancelRequest{User: user, Class: r.PathValue("class"), Run: r.PathValue("run"),
		Reason: body.Reason, Header: aihubHeaders(r)})
	if err != nil {
		var re *requestError
		if errors.As(err, &re) && re.status == http.StatusConflict {
			writeJSON(w, http.StatusConflict, map[string]any{"detail": re.msg, "status": st})
			return
		}
		g.fail(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"run_id": st.Run, "agent_class": st.Class, "thread_id": st.Thread,
		"status": st.State, "cancel_requested": true})
}
