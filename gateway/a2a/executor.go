package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	core "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
)

// executor turns A2A executions into runs: a new task starts a run
// through the class's conversational start event; a message to a task
// that waits on a question answers it.
type executor struct{ s *Server }

// chatLike reports whether a start event takes chat messages.
func chatLike(s event.EventSpecs) bool {
	return s.EventName == "UserMessageEvent" || slices.Contains(s.EventParents, "UserMessageEvent")
}

// Execute implements a2asrv.AgentExecutor.
func (e *executor) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	user, ok := gateway.UserFrom(ctx)
	if !ok {
		return fmt.Errorf("a2a: execution without a user: %w", core.ErrInvalidRequest)
	}
	var (
		st  *stream
		x   task
		err error
	)
	if rc.StoredTask == nil {
		tg, _ := ctx.Value(targetKey{}).(target)
		x, st, err = e.start(ctx, user, tg, rc)
	} else {
		x, st, err = e.resume(ctx, user, rc)
	}
	if err != nil {
		return err
	}
	defer st.close()
	// The first event says the run is going. It is a status update, not a
	// Task: the a2a-go v0.3.3 task manager keeps a Task event as its own
	// state and changes it in place while the stream still encodes it.
	if err := q.Write(ctx, core.NewStatusUpdateEvent(rc, core.TaskStateWorking, nil)); err != nil {
		return err
	}
	return e.follow(ctx, rc, q, st, x)
}

// start begins a run for a new task.
func (e *executor) start(ctx context.Context, user *event.UserIdentity, tg target, rc *a2asrv.RequestContext) (task, *stream, error) {
	c, ok := e.s.gw.Class(tg.class)
	if !ok {
		return task{}, nil, fmt.Errorf("a2a: class %s: %w: %w", tg.class, errUnknownClass, core.ErrInvalidParams)
	}
	var spec event.EventSpecs
	for _, se := range c.Response.StartEvents {
		if chatLike(se) {
			spec = se
			break
		}
	}
	if spec.EventName == "" {
		return task{}, nil, fmt.Errorf("a2a: agent class %s takes no chat message: %w", tg.class, core.ErrUnsupportedOperation)
	}
	text := messageText(rc.Message)
	if strings.TrimSpace(text) == "" {
		return task{}, nil, fmt.Errorf("a2a: the message has no text part: %w", core.ErrInvalidParams)
	}
	x := task{owner: user.ID, class: tg.class, agentID: tg.id, thread: gateway.ExternalThread("a2a-context", user.ID, rc.ContextID), display: event.NewID()}
	if !e.s.tasks.put(rc.TaskID, x) {
		return task{}, nil, fmt.Errorf("a2a: task %s: %w", rc.TaskID, core.ErrTaskNotFound)
	}
	body := map[string]any{"messages": []map[string]string{{"role": "user", "content": text}}}
	// An A2A client sends one message per turn; its context's earlier
	// turns come from the gateway's thread history, if it keeps one.
	st, err := e.s.call(ctx, x.class, x.agentID, spec.EventName, x.thread, x.display, true, body)
	if err != nil {
		return task{}, nil, err
	}
	if st.status != http.StatusOK {
		return task{}, nil, callError(st)
	}
	x.run = st.header.Get("X-Run-Id")
	e.s.tasks.put(rc.TaskID, x)
	return x, st, nil
}

// resume answers the question a task waits on with the message.
func (e *executor) resume(ctx context.Context, user *event.UserIdentity, rc *a2asrv.RequestContext) (task, *stream, error) {
	x, ok := e.s.tasks.get(rc.TaskID)
	if !ok || x.owner != user.ID {
		return task{}, nil, fmt.Errorf("a2a: task %s: %w", rc.TaskID, core.ErrTaskNotFound)
	}
	if x.question == "" || rc.StoredTask.Status.State != core.TaskStateInputRequired {
		return task{}, nil, fmt.Errorf("a2a: task %s is %s and waits for no input: %w", rc.TaskID, rc.StoredTask.Status.State, core.ErrInvalidParams)
	}
	answer, err := answerOf(rc.Message, x.hitlType)
	if err != nil {
		return task{}, nil, err
	}
	body := map[string]any{"response": answer, "request_event": map[string]string{"event_id": x.question}}
	st, err := e.s.call(ctx, x.class, x.agentID, x.response, x.thread, x.display, false, body)
	if err != nil {
		return task{}, nil, err
	}
	if st.status != http.StatusOK {
		return task{}, nil, callError(st)
	}
	x.question, x.response, x.hitlType = "", "", ""
	e.s.tasks.put(rc.TaskID, x)
	return x, st, nil
}

// callError maps a refusal of the gateway to a JSON-RPC error.
func callError(st *stream) error {
	msg := st.detail()
	switch st.status {
	case http.StatusNotFound, http.StatusForbidden:
		// Another user's thread or an unknown question: as unknown as a
		// task of someone else.
		return fmt.Errorf("a2a: %s: %w", msg, core.ErrTaskNotFound)
	case http.StatusBadRequest, http.StatusConflict, http.StatusRequestEntityTooLarge:
		return fmt.Errorf("a2a: %s: %w", msg, core.ErrInvalidParams)
	}
	return fmt.Errorf("a2a: gateway answered %d: %s: %w", st.status, msg, core.ErrInternalError)
}

// follow turns the run's display events into A2A events until the run
// stops, fails or asks a question.
func (e *executor) follow(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue, st *stream, x task) error {
	var artifact core.ArtifactID
	var streamed strings.Builder
	// The stream carries no subjects: a stop ends the task only when the
	// gateway ends the stream right after it ([DONE]); a stop followed by
	// more events was a delegate's.
	var stop []byte
	for {
		data, err := st.next()
		if errors.Is(err, io.EOF) && stop != nil {
			if ev, err := event.Unmarshal(stop); err == nil && event.IsCancelled(ev) {
				// Cancelled, by tasks/cancel or by other means (the
				// gateway's cancel route, saap run cancel).
				return writeFinal(ctx, q, rc, core.TaskStateCanceled, nil)
			}
			return e.complete(ctx, rc, q, x, stop, artifact, streamed.String())
		}
		if errors.Is(err, io.EOF) || (err != nil && ctx.Err() == nil) {
			msg := core.NewMessageForTask(core.MessageRoleAgent, rc, core.TextPart{Text: "the gateway's stream ended without an answer"})
			return writeFinal(ctx, q, rc, core.TaskStateFailed, msg)
		}
		if err != nil {
			return ctx.Err()
		}
		stop = nil
		ev, err := event.Unmarshal(data)
		if err != nil {
			e.s.log.Warn("a2a: ignoring an undecodable event", "err", err)
			continue
		}
		switch {
		case event.IsChunk(ev):
			c, ok := ev.(*event.ChunkEvent)
			if !ok {
				if c, err = event.UnmarshalAs[event.ChunkEvent](data); err != nil {
					continue
				}
			}
			if c.Content == "" {
				continue
			}
			streamed.WriteString(c.Content)
			var up *core.TaskArtifactUpdateEvent
			if artifact == "" {
				up = core.NewArtifactEvent(rc, core.TextPart{Text: c.Content})
				up.Artifact.Name = "answer"
				artifact = up.Artifact.ID
			} else {
				up = core.NewArtifactUpdateEvent(rc, artifact, core.TextPart{Text: c.Content})
				up.Append = true
			}
			if err := q.Write(ctx, up); err != nil {
				return err
			}
		case event.IsException(ev):
			msg := "the agent failed"
			if x, err := event.UnmarshalAs[event.ExceptionEvent](data); err == nil && x.Message != "" {
				msg = x.Message
			}
			return writeFinal(ctx, q, rc, core.TaskStateFailed,
				core.NewMessageForTask(core.MessageRoleAgent, rc, core.TextPart{Text: msg}))
		case event.IsHITLRequest(ev):
			return e.ask(ctx, rc, q, x, data)
		case event.IsStop(ev):
			stop = data
		}
	}
}

// complete ends the task with the stop event's output as its artifact.
func (e *executor) complete(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue, x task, stop []byte, artifact core.ArtifactID, streamed string) error {
	// The stop's output replaces the streamed chunks, which it normally
	// equals; chunks lost to the race with the stop are in it.
	text := gateway.StopText(stop)
	if text == "" {
		text = streamed
	}
	if text != "" || artifact != "" {
		var up *core.TaskArtifactUpdateEvent
		if artifact == "" {
			up = core.NewArtifactEvent(rc, core.TextPart{Text: text})
		} else {
			up = core.NewArtifactUpdateEvent(rc, artifact, core.TextPart{Text: text})
		}
		up.Append = false // the whole answer replaces the chunks
		up.Artifact.Name = "answer"
		name := ""
		if ev, err := event.Unmarshal(stop); err == nil {
			name = event.Name(ev)
		}
		up.Artifact.Metadata = map[string]any{"stop_event": name, "run_id": x.run}
		up.LastChunk = true
		if err := q.Write(ctx, up); err != nil {
			return err
		}
	}
	return writeFinal(ctx, q, rc, core.TaskStateCompleted, nil)
}

// ask records the question the run waits on and pauses the task.
func (e *executor) ask(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue, x task, data []byte) error {
	hr, err := event.UnmarshalAs[event.HumanInTheLoopRequestEvent](data)
	if err != nil {
		return writeFinal(ctx, q, rc, core.TaskStateFailed,
			core.NewMessageForTask(core.MessageRoleAgent, rc, core.TextPart{Text: "the agent asked an unreadable question"}))
	}
	x.question, x.hitlType = hr.EventID, hr.HITLType
	if hr.Topic != nil && hr.Topic.EventName != nil {
		x.response = *hr.Topic.EventName
	}
	e.s.tasks.put(rc.TaskID, x)
	var raw map[string]any
	_ = json.Unmarshal(data, &raw)
	info := map[string]any{"question_id": hr.EventID, "hitl_type": hr.HITLType, "response_event": x.response}
	if t, ok := raw["timeout_seconds"]; ok {
		info["timeout_seconds"] = t
	}
	msg := core.NewMessageForTask(core.MessageRoleAgent, rc,
		core.TextPart{Text: hr.Question},
		core.DataPart{Data: map[string]any{"hitl": info}})
	return writeFinal(ctx, q, rc, core.TaskStateInputRequired, msg)
}

func writeFinal(ctx context.Context, q eventqueue.Queue, rc *a2asrv.RequestContext, state core.TaskState, msg *core.Message) error {
	ev := core.NewStatusUpdateEvent(rc, state, msg)
	ev.Final = true
	return q.Write(ctx, ev)
}

// Cancel implements a2asrv.AgentExecutor. It cancels the task's run (see
// gateway.Gateway.Cancel: the agent's running step sees its context
// cancelled, nothing more of the run starts, its compensations run) and
// ends the task as canceled.
func (e *executor) Cancel(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	stopped := false
	if x, ok := e.s.tasks.get(rc.TaskID); ok {
		if x.run != "" {
			_, err := e.s.gw.Cancel(ctx, gateway.CancelRequest{User: &event.UserIdentity{ID: x.owner}, Class: x.class, Run: x.run,
				AgentID: x.agentID, Thread: x.thread, Display: x.display, Reason: "A2A tasks/cancel"})
			if err != nil {
				return fmt.Errorf("a2a: cancel the run of task %s: %w: %w", rc.TaskID, err, core.ErrInternalError)
			}
			stopped = true
		}
		x.question, x.response, x.hitlType = "", "", ""
		e.s.tasks.put(rc.TaskID, x)
	}
	err := writeFinal(ctx, q, rc, core.TaskStateCanceled, nil)
	if err != nil && stopped {
		// The execution following the run saw it end and closed the
		// task as canceled first.
		e.s.log.Debug("a2a: the task was closed before its cancel's final status", "task", rc.TaskID, "error", err)
		return nil
	}
	return err
}

// messageText joins the text parts of m; a data part is added as JSON.
func messageText(m *core.Message) string {
	if m == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range m.Parts {
		switch p := p.(type) {
		case core.TextPart:
			b.WriteString(p.Text)
		case *core.TextPart:
			b.WriteString(p.Text)
		case core.DataPart:
			data, _ := json.Marshal(p.Data)
			b.Write(data)
		case *core.DataPart:
			data, _ := json.Marshal(p.Data)
			b.Write(data)
		}
	}
	return b.String()
}

// answerOf reads the answer to a question of hitlType from m: a data part
// with a "response" member wins; else the text, read as yes or no for a
// confirmation.
func answerOf(m *core.Message, hitlType string) (any, error) {
	if m != nil {
		for _, p := range m.Parts {
			var d map[string]any
			switch p := p.(type) {
			case core.DataPart:
				d = p.Data
			case *core.DataPart:
				d = p.Data
			}
			if v, ok := d["response"]; ok {
				return v, nil
			}
		}
	}
	text := strings.TrimSpace(messageText(m))
	if hitlType != event.HITLConfirmation {
		if text == "" {
			return nil, fmt.Errorf("a2a: the answer has no text: %w", core.ErrInvalidParams)
		}
		return text, nil
	}
	switch strings.ToLower(text) {
	case "yes", "y", "ja", "oui", "si", "sì", "ok", "approve", "approved":
		return true, nil
	case "no", "n", "nein", "non", "deny", "denied", "reject":
		return false, nil
	}
	if b, err := strconv.ParseBool(text); err == nil {
		return b, nil
	}
	return nil, fmt.Errorf("a2a: the question wants yes or no, got %q: %w", text, core.ErrInvalidParams)
}
