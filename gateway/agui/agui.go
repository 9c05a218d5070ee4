package agui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/hitl"
)

// Mount serves the AG-UI endpoints on g.
func Mount(g *gateway.Gateway) {
	h := &handler{g: g}
	guarded := g.Guard(http.HandlerFunc(h.serve), nil)
	g.Mount("POST /agui/{class}/{id}", guarded)
	g.Mount("POST /api/v1/{tenant}/agui/{class}/{id}", guarded)
}

type handler struct{ g *gateway.Gateway }

// runInput is the part of RunAgentInput the adapter reads.
type runInput struct {
	ThreadID       string          `json:"threadId"`
	RunID          string          `json:"runId"`
	Messages       []message       `json:"messages"`
	ForwardedProps json.RawMessage `json:"forwardedProps"`
	Resume         []resumeEntry   `json:"resume"`
}

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type resumeEntry struct {
	InterruptID string          `json:"interruptId"`
	Status      string          `json:"status"`
	Payload     json.RawMessage `json:"payload"`
}

// forwarded is what forwardedProps may say about the start event.
type forwarded struct {
	Event string                     `json:"event"`
	Body  map[string]json.RawMessage `json:"body"`
}

// ThreadID returns the protocol thread id an AG-UI threadId of user
// stands for: itself when it is 24 lower-case hex characters, else one
// derived from the user and the name (see gateway.ExternalThread), so two
// users' threads of one name never meet.
func ThreadID(userID, threadID string) string {
	return gateway.ExternalThread("agui-thread", userID, threadID)
}

// errorBody is the shape of the refusals, the gateway's.
type errorBody struct {
	Detail string `json:"detail"`
}

func refuse(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorBody{Detail: msg})
}

func (h *handler) serve(w http.ResponseWriter, r *http.Request) {
	user, ok := gateway.UserFrom(r.Context())
	if !ok || user == nil {
		refuse(w, http.StatusUnauthorized, "no authenticated user")
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.g.Config().MaxBody))
	if err != nil {
		refuse(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body: %v", err))
		return
	}
	var in runInput
	if err := json.Unmarshal(data, &in); err != nil {
		refuse(w, http.StatusBadRequest, fmt.Sprintf("body: not a RunAgentInput: %v", err))
		return
	}
	if in.ThreadID == "" {
		refuse(w, http.StatusBadRequest, "threadId: required")
		return
	}
	thread := ThreadID(user.ID, in.ThreadID)
	ctx := r.Context()
	var resolved []resumeEntry
	for _, e := range in.Resume {
		switch e.Status {
		case "resolved":
			resolved = append(resolved, e)
		case "cancelled":
		default:
			refuse(w, http.StatusBadRequest, fmt.Sprintf("resume: status %q of interrupt %q: want resolved or cancelled", e.Status, e.InterruptID))
			return
		}
	}
	var s *gateway.Stream
	switch {
	case len(resolved) > 1:
		refuse(w, http.StatusBadRequest, "resume: a run waits on one question at a time; resolve one interrupt")
		return
	case len(resolved) == 1:
		s, err = h.g.Answer(ctx, gateway.AnswerRequest{User: user, Thread: thread, Question: resolved[0].InterruptID,
			Response: answerValue(resolved[0].Payload), Header: headers(r)})
	case len(in.Resume) > 0:
		// Every interrupt cancelled: nothing goes to the agent.
		if ok, err := h.g.IsMember(ctx, thread, user); err != nil || !ok {
			refuse(w, http.StatusForbidden, fmt.Sprintf("thread %s: user %s is not a member", thread, user.ID))
			return
		}
		out := newWriter(w)
		_ = out.send(map[string]any{"type": "RUN_STARTED", "threadId": in.ThreadID, "runId": in.RunID})
		_ = out.send(map[string]any{"type": "RUN_FINISHED", "threadId": in.ThreadID, "runId": in.RunID})
		return
	default:
		req, rerr := h.runRequest(r, user, thread, in)
		if rerr != nil {
			refuse(w, http.StatusBadRequest, rerr.Error())
			return
		}
		s, err = h.g.Start(ctx, req)
	}
	if err != nil {
		refuse(w, gateway.ErrorStatus(err), err.Error())
		return
	}
	defer s.Close()
	out := newWriter(w)
	(&run{h: h, out: out, in: in, s: s, user: user}).follow(ctx)
}

// headers are the X-AIHub-* headers of r, which the guard has filtered.
func headers(r *http.Request) map[string][]string {
	out := map[string][]string{}
	for k, vs := range r.Header {
		if strings.HasPrefix(strings.ToLower(k), "x-aihub-") {
			out[strings.ToLower(k)] = vs
		}
	}
	return out
}

// answerValue is the response a resume payload carries: the payload
// itself, or its "response" member when it is an object holding one.
func answerValue(p json.RawMessage) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(p, &obj) == nil {
		if v, ok := obj["response"]; ok {
			return v
		}
	}
	if len(p) == 0 {
		return json.RawMessage(`""`)
	}
	return p
}

func (h *handler) runRequest(r *http.Request, user *event.UserIdentity, thread string, in runInput) (gateway.RunRequest, error) {
	req := gateway.RunRequest{User: user, Class: r.PathValue("class"), AgentID: r.PathValue("id"), Thread: thread,
		Locale: locale(r), Header: headers(r)}
	var f forwarded
	if len(in.ForwardedProps) > 0 && string(in.ForwardedProps) != "null" {
		if err := json.Unmarshal(in.ForwardedProps, &f); err != nil {
			return req, fmt.Errorf("forwardedProps: want {\"event\": name, \"body\": {...}}: %v", err)
		}
	}
	req.Event, req.Body = f.Event, f.Body
	if req.Body == nil {
		req.Body = map[string]json.RawMessage{}
	}
	if class, ok := h.g.Class(req.Class); ok {
		if spec, ok := class.StartSpec(req.Event); ok && hasParent(spec, "UserMessageEvent") {
			msgs := chatMessages(in.Messages)
			raw, err := event.MarshalValue(msgs)
			if err != nil {
				return req, fmt.Errorf("messages: %v", err)
			}
			req.Body["messages"] = raw
		}
	}
	return req, nil
}

func hasParent(s event.EventSpecs, name string) bool {
	if s.EventName == name {
		return true
	}
	for _, p := range s.EventParents {
		if p == name {
			return true
		}
	}
	return false
}

// chatMessages converts the input's user, assistant and system messages.
func chatMessages(in []message) []event.ChatMessage {
	out := []event.ChatMessage{}
	for _, m := range in {
		role := m.Role
		switch role {
		case "user", "assistant", "system":
		case "developer":
			role = "system"
		default:
			continue // tool, activity and reasoning messages are the client's record
		}
		var blocks []event.Block
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			blocks = append(blocks, &event.TextBlock{Text: s})
		} else {
			var parts []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			_ = json.Unmarshal(m.Content, &parts)
			for _, p := range parts {
				if p.Type == "text" {
					blocks = append(blocks, &event.TextBlock{Text: p.Text})
				}
			}
		}
		if blocks == nil {
			blocks = []event.Block{}
		}
		out = append(out, event.ChatMessage{Role: role, Blocks: blocks, AdditionalKwargs: map[string]json.RawMessage{}})
	}
	return out
}

// locale picks the first of de, en, fr, it in Accept-Language; "" lets
// the gateway choose.
func locale(r *http.Request) string {
	for part := range strings.SplitSeq(r.Header.Get("Accept-Language"), ",") {
		tag, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		lang, _, _ := strings.Cut(strings.ToLower(tag), "-")
		switch lang {
		case "de", "en", "fr", "it":
			return lang
		}
	}
	return ""
}

// writer writes AG-UI events as the official encoder does.
type writer struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func newWriter(w http.ResponseWriter) *writer {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-store, must-revalidate, no-transform")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	out := &writer{w: w, rc: http.NewResponseController(w)}
	_ = out.rc.Flush()
	return out
}

func (o *writer) send(ev map[string]any) error {
	data, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("agui: encode %v: %w", ev["type"], err)
	}
	return o.raw("data: " + string(data) + "\n\n")
}

func (o *writer) raw(s string) error {
	_ = o.rc.SetWriteDeadline(time.Now().Add(time.Minute))
	if _, err := io.WriteString(o.w, s); err != nil {
		return err
	}
	return o.rc.Flush()
}

// run maps one followed run onto AG-UI events.
type run struct {
	h    *handler
	out  *writer
	in   runInput
	s    *gateway.Stream
	user *event.UserIdentity

	text      string // open text message id
	reasoning string // open reasoning message id
	streamed  strings.Builder
}

func (r *run) follow(ctx context.Context) {
	meta := map[string]any{"saap": map[string]string{"thread_id": r.s.Thread(), "display_id": r.s.Display(),
		"run_id": r.s.Run(), "agent_class": r.s.Class(), "agent_id": r.s.AgentID()}}
	if err := r.out.send(map[string]any{"type": "RUN_STARTED", "threadId": r.in.ThreadID, "runId": r.in.RunID, "metadata": meta}); err != nil {
		return
	}
	final, err := r.s.Follow(ctx, r.event, func() error { return r.out.raw(": keep-alive\n\n") })
	switch {
	case errors.Is(err, gateway.ErrTimeout):
		if r.closeOpen() == nil {
			_ = r.out.send(map[string]any{"type": "RUN_ERROR", "message": fmt.Sprintf("no answer from %s/%s in time", r.s.Class(), r.s.AgentID()),
				"code": strconv.Itoa(http.StatusGatewayTimeout)})
		}
		return
	case err != nil:
		// The client went away before the run ended (AG-UI clients stop a
		// run by aborting its request: HttpAgent.abortRun) or its stream
		// broke: nobody follows the run any more, so it is cancelled.
		r.cancel()
		return
	}
	_ = r.finish(final)
}

// cancelTimeout bounds the cancel of a run whose client went away.
const cancelTimeout = 10 * time.Second

// cancel asks the followed run to stop (see gateway.Gateway.Cancel).
func (r *run) cancel() {
	ctx, stop := context.WithTimeout(context.Background(), cancelTimeout)
	defer stop()
	_, err := r.h.g.Cancel(ctx, gateway.CancelRequest{User: r.user, Class: r.s.Class(), Run: r.s.Run(),
		AgentID: r.s.AgentID(), Thread: r.s.Thread(), Display: r.s.Display(), Reason: "the AG-UI client aborted the run"})
	if err != nil {
		r.h.g.Config().Logger.Warn("agui: the run of an aborted request could not be cancelled", "run_id", r.s.Run(), "error", err)
	}
}

// event maps a non-terminal display event; the terminal one is finished
// by finish.
func (r *run) event(x gateway.StreamEvent) error {
	if x.Terminal {
		return nil
	}
	e := x.Event
	ts := ms(e)
	switch {
	case event.IsChunk(e):
		c, ok := e.(*event.ChunkEvent)
		if !ok {
			c, _ = event.UnmarshalAs[event.ChunkEvent](x.Raw)
		}
		if c == nil || c.Content == "" {
			return nil
		}
		if err := r.closeReasoning(); err != nil {
			return err
		}
		if r.text == "" {
			r.text = event.NewID()
			if err := r.out.send(map[string]any{"type": "TEXT_MESSAGE_START", "messageId": r.text, "role": "assistant", "timestamp": ts}); err != nil {
				return err
			}
		}
		r.streamed.WriteString(c.Content)
		return r.out.send(map[string]any{"type": "TEXT_MESSAGE_CONTENT", "messageId": r.text, "delta": c.Content, "timestamp": ts})
	case event.IsThought(e):
		t, err := event.UnmarshalAs[event.ThoughtEvent](x.Raw)
		if err != nil || t.ReasoningContent == nil || *t.ReasoningContent == "" {
			return nil
		}
		if err := r.closeText(); err != nil {
			return err
		}
		if r.reasoning == "" {
			r.reasoning = event.NewID()
			if err := r.out.send(map[string]any{"type": "REASONING_START", "messageId": r.reasoning, "timestamp": ts}); err != nil {
				return err
			}
			if err := r.out.send(map[string]any{"type": "REASONING_MESSAGE_START", "messageId": r.reasoning, "role": "reasoning", "timestamp": ts}); err != nil {
				return err
			}
		}
		return r.out.send(map[string]any{"type": "REASONING_MESSAGE_CONTENT", "messageId": r.reasoning, "delta": *t.ReasoningContent, "timestamp": ts})
	case event.Has(e, "ToolEvent"):
		return r.tool(x, ts)
	case event.Has(e, "StateSnapshotEvent"):
		s, err := event.UnmarshalAs[StateSnapshotEvent](x.Raw)
		if err != nil {
			return nil
		}
		return r.out.send(map[string]any{"type": "STATE_SNAPSHOT", "snapshot": s.Snapshot, "timestamp": ts})
	case event.Has(e, "StateDeltaEvent"):
		d, err := event.UnmarshalAs[StateDeltaEvent](x.Raw)
		if err != nil {
			return nil
		}
		return r.out.send(map[string]any{"type": "STATE_DELTA", "delta": d.Delta, "timestamp": ts})
	}
	return nil
}

func (r *run) tool(x gateway.StreamEvent, ts int64) error {
	t, err := event.UnmarshalAs[event.ToolEvent](x.Raw)
	if err != nil {
		return nil
	}
	if err := r.closeOpen(); err != nil {
		return err
	}
	id := x.Event.EventBase().EventID
	if t.ToolCallID != nil && *t.ToolCallID != "" {
		id = *t.ToolCallID
	}
	name := "tool"
	if t.Name != nil && *t.Name != "" {
		name = *t.Name
	}
	args := []byte("{}")
	if t.Parameters != nil {
		if args, err = json.Marshal(t.Parameters); err != nil {
			args = []byte("{}")
		}
	}
	for _, ev := range []map[string]any{
		{"type": "TOOL_CALL_START", "toolCallId": id, "toolCallName": name, "timestamp": ts},
		{"type": "TOOL_CALL_ARGS", "toolCallId": id, "delta": string(args), "timestamp": ts},
		{"type": "TOOL_CALL_END", "toolCallId": id, "timestamp": ts},
	} {
		if err := r.out.send(ev); err != nil {
			return err
		}
	}
	for _, key := range []string{"result", "output"} {
		raw, ok := event.Extra(t, key)
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			s = string(raw)
		}
		return r.out.send(map[string]any{"type": "TOOL_CALL_RESULT", "messageId": event.NewID(), "toolCallId": id,
			"content": s, "role": "tool", "timestamp": ts})
	}
	return nil
}

func (r *run) closeText() error {
	if r.text == "" {
		return nil
	}
	id := r.text
	r.text = ""
	return r.out.send(map[string]any{"type": "TEXT_MESSAGE_END", "messageId": id})
}

func (r *run) closeReasoning() error {
	if r.reasoning == "" {
		return nil
	}
	id := r.reasoning
	r.reasoning = ""
	if err := r.out.send(map[string]any{"type": "REASONING_MESSAGE_END", "messageId": id}); err != nil {
		return err
	}
	return r.out.send(map[string]any{"type": "REASONING_END", "messageId": id})
}

func (r *run) closeOpen() error {
	if err := r.closeReasoning(); err != nil {
		return err
	}
	return r.closeText()
}

// finish ends the AG-UI run with the terminal event: a stop, an
// exception or a HITL question.
func (r *run) finish(x gateway.StreamEvent) error {
	e := x.Event
	switch {
	case event.IsCancelled(e):
		// Cancelled elsewhere (the gateway's cancel route, saap run
		// cancel): the run did not finish.
		if err := r.closeOpen(); err != nil {
			return err
		}
		msg := "the run was cancelled"
		if c, err := event.UnmarshalAs[event.RunCancelledEvent](x.Raw); err == nil && c.Reason != "" {
			msg += ": " + c.Reason
		}
		return r.out.send(map[string]any{"type": "RUN_ERROR", "message": msg, "code": "cancelled", "timestamp": ms(e)})
	case event.IsException(e):
		if err := r.closeOpen(); err != nil {
			return err
		}
		msg, status := x.Exception()
		return r.out.send(map[string]any{"type": "RUN_ERROR", "message": msg, "code": strconv.Itoa(status), "timestamp": ms(e)})
	case event.IsHITLRequest(e):
		if err := r.closeOpen(); err != nil {
			return err
		}
		return r.out.send(map[string]any{"type": "RUN_FINISHED", "threadId": r.in.ThreadID, "runId": r.in.RunID, "timestamp": ms(e),
			"outcome": map[string]any{"type": "interrupt", "interrupts": []any{interrupt(x)}}})
	}
	// A stop: the part of its answer the chunks did not carry, then the
	// end of the run.
	if err := r.closeReasoning(); err != nil {
		return err
	}
	if tail := gateway.Unstreamed(r.streamed.String(), x.Text()); tail != "" {
		if r.text == "" {
			r.text = event.NewID()
			if err := r.out.send(map[string]any{"type": "TEXT_MESSAGE_START", "messageId": r.text, "role": "assistant"}); err != nil {
				return err
			}
		}
		if err := r.out.send(map[string]any{"type": "TEXT_MESSAGE_CONTENT", "messageId": r.text, "delta": tail}); err != nil {
			return err
		}
	}
	if err := r.closeText(); err != nil {
		return err
	}
	return r.out.send(map[string]any{"type": "RUN_FINISHED", "threadId": r.in.ThreadID, "runId": r.in.RunID, "timestamp": ms(e),
		"result": json.RawMessage(x.Raw), "outcome": map[string]any{"type": "success"}})
}

// interrupt describes a HITL question as an AG-UI interrupt.
func interrupt(x gateway.StreamEvent) map[string]any {
	req, err := event.UnmarshalAs[event.HumanInTheLoopRequestEvent](x.Raw)
	if err != nil {
		return map[string]any{"id": x.Event.EventBase().EventID, "reason": "input"}
	}
	it := map[string]any{"id": req.EventID, "reason": req.HITLType, "message": req.Question,
		"metadata": map[string]any{"saap": map[string]string{"thread_id": x.Topic.Thread, "run_id": x.Topic.Run,
			"agent_class": x.Topic.Class, "agent_id": x.Topic.ID, "event_name": event.Name(x.Event)}}}
	if req.HITLType == event.HITLConfirmation {
		it["responseSchema"] = map[string]any{"type": "boolean"}
	} else {
		it["responseSchema"] = map[string]any{"type": "string"}
	}
	var tool struct {
		ToolCallID string `json:"tool_call_id"`
	}
	if json.Unmarshal(x.Raw, &tool) == nil && tool.ToolCallID != "" {
		it["toolCallId"] = tool.ToolCallID
	}
	if d, ok := hitl.TimeoutOf(x.Event); ok && req.CreatedAt > 0 {
		it["expiresAt"] = time.Unix(0, req.CreatedAt).Add(d).UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	return it
}

// ms is the event's created_at in Unix milliseconds, AG-UI's timestamp.
func ms(e event.Event) int64 { return e.EventBase().CreatedAt / int64(time.Millisecond) }
