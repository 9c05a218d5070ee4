package a2a_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	core "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/saap-go/agent/step"
)

// bearer adds the gateway's bearer token to every call.
type bearer string

func (b bearer) Before(ctx context.Context, req *a2aclient.Request) (context.Context, error) {
	if b != "" {
		req.Meta["Authorization"] = []string{"Bearer " + string(b)}
	}
	return ctx, nil
}

func (bearer) After(context.Context, *a2aclient.Response) error { return nil }

// client is the official Go client for the greeter, found through its card.
func (e *env) client(t testing.TB, token string) *a2aclient.Client {
	t.Helper()
	card, err := agentcard.DefaultResolver.Resolve(ctxTimeout(t), e.url)
	if err != nil {
		t.Fatalf("resolve card: %v", err)
	}
	c, err := a2aclient.NewFromCard(ctxTimeout(t), card, a2aclient.WithInterceptors(bearer(token)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

func userText(text string) *core.MessageSendParams {
	return &core.MessageSendParams{Message: core.NewMessage(core.MessageRoleUser, core.TextPart{Text: text})}
}

// reply continues task with text.
func reply(task *core.Task, text string) *core.MessageSendParams {
	m := core.NewMessage(core.MessageRoleUser, core.TextPart{Text: text})
	m.TaskID, m.ContextID = task.ID, task.ContextID
	return &core.MessageSendParams{Message: m}
}

// streamed collects a stream: the texts of the artifact updates, the
// states of the status updates, the last task info and the last status.
type streamed struct {
	texts  []string
	states []core.TaskState
	task   core.TaskInfo
	final  *core.TaskStatusUpdateEvent
	first  core.Event
	answer string // the artifact after the last update
}

func collect(t testing.TB, events func(func(core.Event, error) bool)) streamed {
	t.Helper()
	var s streamed
	for ev, err := range events {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if s.first == nil {
			s.first = ev
		}
		s.task = ev.TaskInfo()
		switch ev := ev.(type) {
		case *core.TaskArtifactUpdateEvent:
			text := partsText(ev.Artifact.Parts)
			s.texts = append(s.texts, text)
			if ev.Append {
				s.answer += text
			} else {
				s.answer = text
			}
		case *core.TaskStatusUpdateEvent:
			s.states = append(s.states, ev.Status.State)
			if ev.Final {
				s.final = ev
			}
		case *core.Task:
			s.states = append(s.states, ev.Status.State)
		}
	}
	return s
}

func partsText(ps core.ContentParts) string {
	var b strings.Builder
	for _, p := range ps {
		if tp, ok := p.(core.TextPart); ok {
			b.WriteString(tp.Text)
		}
	}
	return b.String()
}

func TestCard(t *testing.T) {
	e := newEnv(t)
	card, err := agentcard.DefaultResolver.Resolve(ctxTimeout(t), e.url)
	if err != nil {
		t.Fatal(err)
	}
	if card.URL != e.url || !card.Capabilities.Streaming || card.PreferredTransport != core.TransportProtocolJSONRPC {
		t.Errorf("card url %q streaming %v transport %q", card.URL, card.Capabilities.Streaming, card.PreferredTransport)
	}
	if len(card.Skills) != 1 || card.Skills[0].ID != "UserMessageEvent" || !slices.Contains(card.Skills[0].Tags, "chat") {
		t.Errorf("skills %+v: want the start event UserMessageEvent", card.Skills)
	}
	// The only class is also the root agent, with the default instance id.
	root, err := agentcard.DefaultResolver.Resolve(ctxTimeout(t), e.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if want := e.srv.URL + "/a2a/" + e.class + "/default"; root.URL != want {
		t.Errorf("root card url %q, want %q", root.URL, want)
	}
	// An unknown class has no card.
	resp, err := http.Get(e.srv.URL + "/a2a/Nobody/dev/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown class card: %d", resp.StatusCode)
	}
}

func TestGoClientStream(t *testing.T) {
	e := newEnv(t)
	c := e.client(t, tokenAlice)
	s := collect(t, c.SendStreamingMessage(ctxTimeout(t), userText("world")))
	if st, ok := s.first.(*core.TaskStatusUpdateEvent); !ok || st.Status.State != core.TaskStateWorking {
		t.Errorf("first event %T %+v, want the working status", s.first, s.first)
	}
	if want := []string{"Hello", ", ", "world", "Hello, world"}; !slices.Equal(s.texts, want) {
		t.Errorf("artifact updates %q, want %q", s.texts, want)
	}
	if s.final == nil || s.final.Status.State != core.TaskStateCompleted {
		t.Fatalf("states %v: want a final completed", s.states)
	}
	task, err := c.GetTask(ctxTimeout(t), &core.TaskQueryParams{ID: s.task.TaskID})
	if err != nil {
		t.Fatal(err)
	}
	if task.Status.State != core.TaskStateCompleted || len(task.Artifacts) != 1 || partsText(task.Artifacts[0].Parts) != "Hello, world" {
		t.Fatalf("tasks/get: %+v", task)
	}
	if task.Artifacts[0].Metadata["stop_event"] != "LLMStopEvent" {
		t.Errorf("artifact metadata %v: want the stop event's name", task.Artifacts[0].Metadata)
	}
}

func TestGoClientSend(t *testing.T) {
	e := newEnv(t)
	c := e.client(t, tokenAlice)
	res, err := c.SendMessage(ctxTimeout(t), userText("Ada"))
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*core.Task)
	if !ok || task.Status.State != core.TaskStateCompleted || len(task.Artifacts) != 1 || partsText(task.Artifacts[0].Parts) != "Hello, Ada" {
		t.Fatalf("message/send: %T %+v", res, res)
	}
	// A failing run fails the task with the agent's message.
	res, err = c.SendMessage(ctxTimeout(t), userText("fail"))
	if err != nil {
		t.Fatal(err)
	}
	task, ok = res.(*core.Task)
	if !ok || task.Status.State != core.TaskStateFailed || task.Status.Message == nil ||
		!strings.Contains(partsText(task.Status.Message.Parts), "cannot greet anyone today") {
		t.Fatalf("failing run: %T %+v", res, res)
	}
}

// A HITL question pauses the task in input-required; the next message to
// the task answers it and the run goes on to its stop.
func TestGoClientInputRequired(t *testing.T) {
	e := newEnv(t)
	c := e.client(t, tokenAlice)
	s := collect(t, c.SendStreamingMessage(ctxTimeout(t), userText("ask")))
	if s.final == nil || s.final.Status.State != core.TaskStateInputRequired {
		t.Fatalf("states %v: want a final input-required", s.states)
	}
	if q := partsText(s.final.Status.Message.Parts); q != "What is your name?" {
		t.Errorf("question %q", q)
	}
	task, err := c.GetTask(ctxTimeout(t), &core.TaskQueryParams{ID: s.task.TaskID})
	if err != nil || task.Status.State != core.TaskStateInputRequired {
		t.Fatalf("tasks/get while waiting: %v %+v", err, task)
	}
	s = collect(t, c.SendStreamingMessage(ctxTimeout(t), reply(task, "Grace")))
	if s.task.TaskID != task.ID || s.final == nil || s.final.Status.State != core.TaskStateCompleted || s.answer != "Hello, Grace" {
		t.Fatalf("after the answer: task %s states %v answer %q", s.task.TaskID, s.states, s.answer)
	}
	// The question is answered: another answer is refused.
	if _, err := c.SendMessage(ctxTimeout(t), reply(task, "again")); err == nil {
		t.Fatal("a second answer to a completed task was accepted")
	}
}

// A task belongs to its creator: another user can neither read, resubscribe,
// cancel nor continue it, nor write into its context; and a call without
// credentials is refused.
func TestCrossUserRefused(t *testing.T) {
	e := newEnv(t)
	a, b := e.client(t, tokenAlice), e.client(t, tokenBob)
	s := collect(t, a.SendStreamingMessage(ctxTimeout(t), userText("ask")))
	if s.final == nil || s.final.Status.State != core.TaskStateInputRequired {
		t.Fatalf("states %v", s.states)
	}
	id := s.task.TaskID
	task := &core.Task{ID: id, ContextID: s.task.ContextID}
	notFound := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "not found") {
			t.Errorf("bob %s: %v, want task not found", what, err)
		}
	}
	_, err := b.GetTask(ctxTimeout(t), &core.TaskQueryParams{ID: id})
	notFound("tasks/get", err)
	_, err = b.CancelTask(ctxTimeout(t), &core.TaskIDParams{ID: id})
	notFound("tasks/cancel", err)
	_, err = b.SendMessage(ctxTimeout(t), reply(task, "Mallory"))
	notFound("message/send to the task", err)
	for _, err := range b.ResubscribeToTask(ctxTimeout(t), &core.TaskIDParams{ID: id}) {
		notFound("tasks/resubscribe", err)
		break
	}
	// A contextId names a conversation of its user: Bob's message with
	// Alice's contextId opens his own task in his own thread, and reaches
	// nothing of hers.
	m := core.NewMessage(core.MessageRoleUser, core.TextPart{Text: "Mallory"})
	m.ContextID = task.ContextID
	got, err := b.SendMessage(ctxTimeout(t), &core.MessageSendParams{Message: m})
	if err != nil {
		t.Fatalf("bob message/send with alice's contextId: %v, want his own task", err)
	}
	if bt, ok := got.(*core.Task); !ok || bt.ID == id {
		t.Fatalf("bob message/send with alice's contextId: %+v, want a task of his own", got)
	}

	// Alice's task is untouched: she answers it.
	res, err := a.SendMessage(ctxTimeout(t), reply(task, "Alice"))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := res.(*core.Task); !ok || got.Status.State != core.TaskStateCompleted || partsText(got.Artifacts[0].Parts) != "Hello, Alice" {
		t.Fatalf("alice's answer: %+v", res)
	}

	anon := e.client(t, "")
	_, err = anon.SendMessage(ctxTimeout(t), userText("x"))
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("unauthenticated: %v, want 401", err)
	}
}

// tasks/cancel ends a waiting task as canceled for its owner.
func TestCancel(t *testing.T) {
	e := newEnv(t)
	c := e.client(t, tokenAlice)
	s := collect(t, c.SendStreamingMessage(ctxTimeout(t), userText("ask")))
	task, err := c.CancelTask(ctxTimeout(t), &core.TaskIDParams{ID: s.task.TaskID})
	if err != nil {
		t.Fatal(err)
	}
	if task.Status.State != core.TaskStateCanceled {
		t.Fatalf("after cancel: %s", task.Status.State)
	}
	if _, err := c.SendMessage(ctxTimeout(t), reply(task, "late")); err == nil {
		t.Fatal("a canceled task took an answer")
	}
}

// tasks/cancel of a working task stops the agent: its running step sees
// its context cancelled with step.ErrRunEnded, and the task ends canceled.
func TestCancelStopsRun(t *testing.T) {
	gate, stopped = make(chan struct{}), make(chan error, 1)
	t.Cleanup(func() { stopped = nil })
	e := newEnv(t)
	c := e.client(t, tokenAlice)
	ctx, cancel := context.WithCancel(ctxTimeout(t))
	defer cancel()
	var id core.TaskID
	for ev, err := range c.SendStreamingMessage(ctx, userText("slow")) {
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := ev.(*core.TaskArtifactUpdateEvent); ok {
			id = ev.TaskInfo().TaskID
			break
		}
	}
	task, err := c.CancelTask(ctxTimeout(t), &core.TaskIDParams{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	if task.Status.State != core.TaskStateCanceled {
		t.Fatalf("after cancel: %s", task.Status.State)
	}
	select {
	case cause := <-stopped:
		if !errors.Is(cause, step.ErrRunEnded) {
			t.Errorf("the step's context ended with %v, want step.ErrRunEnded", cause)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("tasks/cancel did not stop the agent's step")
	}
}

// A client that lost its stream rejoins the running task with
// tasks/resubscribe; another user can neither rejoin nor cancel it.
func TestResubscribe(t *testing.T) {
	gate = make(chan struct{})
	e := newEnv(t)
	a, b := e.client(t, tokenAlice), e.client(t, tokenBob)
	ctx, cancel := context.WithCancel(ctxTimeout(t))
	var id core.TaskID
	for ev, err := range a.SendStreamingMessage(ctx, userText("slow")) {
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := ev.(*core.TaskArtifactUpdateEvent); ok {
			id = ev.TaskInfo().TaskID
			break
		}
	}
	cancel() // the client goes away; the run goes on
	for _, err := range b.ResubscribeToTask(ctxTimeout(t), &core.TaskIDParams{ID: id}) {
		if err == nil || !strings.Contains(err.Error(), "not found") {
			t.Errorf("bob resubscribes to a running task: %v, want task not found", err)
		}
		break
	}
	if _, err := b.CancelTask(ctxTimeout(t), &core.TaskIDParams{ID: id}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("bob cancels a running task: %v, want task not found", err)
	}
	var final *core.TaskStatusUpdateEvent
	for ev, err := range a.ResubscribeToTask(ctxTimeout(t), &core.TaskIDParams{ID: id}) {
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-gate:
		default:
			close(gate) // alice is back: let the run finish
		}
		if st, ok := ev.(*core.TaskStatusUpdateEvent); ok && st.Final {
			final = st
		}
	}
	if final == nil || final.Status.State != core.TaskStateCompleted {
		t.Fatalf("resubscribed stream ended with %+v, want completed", final)
	}
	task, err := a.GetTask(ctxTimeout(t), &core.TaskQueryParams{ID: id})
	if err != nil || partsText(task.Artifacts[0].Parts) != "Hello, slow" {
		t.Fatalf("tasks/get: %v %+v", err, task)
	}
}

// A context is a conversation: a later message in it reaches the agent
// with the context's earlier turns (the gateway's thread history); another
// user's message with the same contextId gets only its own.
func TestContextHistory(t *testing.T) {
	e := newEnv(t)
	a, b := e.client(t, tokenAlice), e.client(t, tokenBob)
	res, err := a.SendMessage(ctxTimeout(t), userText("Ada"))
	if err != nil {
		t.Fatal(err)
	}
	first, ok := res.(*core.Task)
	if !ok || first.Status.State != core.TaskStateCompleted {
		t.Fatalf("first message: %+v", res)
	}
	count := func(c *a2aclient.Client) string {
		m := core.NewMessage(core.MessageRoleUser, core.TextPart{Text: "count"})
		m.ContextID = first.ContextID
		res, err := c.SendMessage(ctxTimeout(t), &core.MessageSendParams{Message: m})
		if err != nil {
			t.Fatal(err)
		}
		task, ok := res.(*core.Task)
		if !ok || len(task.Artifacts) != 1 {
			t.Fatalf("count: %+v", res)
		}
		return partsText(task.Artifacts[0].Parts)
	}
	// Ada, "Hello, Ada", count.
	if got := count(a); got != "Hello, 3 messages" {
		t.Errorf("alice's second message: %q", got)
	}
	if got := count(b); got != "Hello, 1 messages" {
		t.Errorf("bob's message with alice's contextId: %q, want his own conversation only", got)
	}
}
