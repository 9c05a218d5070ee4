package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/saap-go/agent/event"
)

// MaxHistoryPage is the most entries one
// GET /api/v1/saap/threads/{thread}/messages answer holds.
const MaxHistoryPage = 500

// historyPage is the answer of the thread messages route.
type historyPage struct {
	Thread   string         `json:"thread_id"`
	Messages []HistoryEntry `json:"messages"`
	// Next is the cursor of the following page (?after=Next); empty on
	// the last page.
	Next string `json:"next,omitempty"`
}

// serveThreadMessages answers GET /api/v1/saap/threads/{thread}/messages
// ?after=<cursor>&limit=N: the thread's history, oldest first, to its
// members. A thread the caller is not a member of gets the same 404 as one
// that does not exist, so nobody learns which threads exist.
func (g *Gateway) serveThreadMessages(w http.ResponseWriter, r *http.Request) {
	user, ok := g.authenticate(w, r)
	if !ok || !g.statusAllowed(w, user) {
		return
	}
	thread := r.PathValue("thread")
	if err := validToken("thread_id", thread); err != nil {
		g.fail(w, badRequest("thread_id", "%v", err))
		return
	}
	q := r.URL.Query()
	var after uint64
	if s := q.Get("after"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			g.fail(w, badRequest("after", "after must be the next cursor of a previous page (a number), not %q", s))
			return
		}
		after = n
	}
	limit := 100
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxHistoryPage {
			g.fail(w, badRequest("limit", "limit must be a number from 1 to %d, not %q", MaxHistoryPage, s))
			return
		}
		limit = n
	}
	member, err := g.threads.IsMember(r.Context(), thread, user.ID)
	if err != nil {
		g.fail(w, fmt.Errorf("gateway: threads: %w", err))
		return
	}
	if !member {
		writeError(w, http.StatusNotFound, fmt.Sprintf("thread %s is not known", thread), "thread_id")
		return
	}
	if g.cfg.History == nil {
		writeError(w, http.StatusNotImplemented, "gateway: thread history is not kept (Config.History)", "")
		return
	}
	// One more than asked tells whether a next page exists.
	es, err := g.cfg.History.Read(r.Context(), thread, after, limit+1)
	if err != nil {
		g.fail(w, err)
		return
	}
	page := historyPage{Thread: thread, Messages: es}
	if len(es) > limit {
		page.Messages = es[:limit]
		page.Next = strconv.FormatUint(es[limit-1].Seq, 10)
	}
	if page.Messages == nil {
		page.Messages = []HistoryEntry{}
	}
	writeJSON(w, http.StatusOK, page)
}

// fillMessages puts the thread's history into a start event body, as the
// reference's distributor does: an empty (or missing) messages list
// becomes the history; with reconstruct, the history goes before the
// messages sent (the reference's reconstruct_history). Only for start
// events with a messages list (UserMessageEvent and its kind), and only
// after the caller's membership is checked. The entries hold their
// messages in wire JSON, so they are spliced in as they are; the event
// codec checks the whole list when the event is built.
func (g *Gateway) fillMessages(ctx context.Context, thread string, spec event.EventSpecs, body map[string]json.RawMessage, reconstruct bool) (filled bool, err error) {
	if g.cfg.History == nil || !specHas(spec, "UserMessageEvent") {
		return false, nil
	}
	var sent []json.RawMessage
	if raw, ok := body["messages"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &sent); err != nil {
			return false, badRequest("messages", "messages: must be a list of chat messages: %v", err)
		}
	}
	if len(sent) > 0 && !reconstruct {
		return false, nil
	}
	es, err := g.cfg.History.Read(ctx, thread, 0, 0)
	if err != nil {
		return false, fmt.Errorf("gateway: thread history: %w", err)
	}
	if len(es) == 0 {
		return false, nil
	}
	size := 2
	for _, m := range sent {
		size += len(m) + 1
	}
	// The event must fit in a NATS message: beyond half the server's
	// payload limit the oldest messages stay out (the agent's own
	// budget trims further).
	budget := g.fillBudget()
	first := len(es)
	for first > 0 && size+len(es[first-1].Message)+1 <= budget {
		first--
		size += len(es[first].Message) + 1
	}
	if first > 0 {
		g.log.Warn("gateway: thread history larger than a start event may carry; the oldest messages are left out",
			"thread", thread, "left_out", first, "kept", len(es)-first)
	}
	es = es[first:]
	buf := make([]byte, 0, size)
	buf = append(buf, '[')
	add := func(m json.RawMessage) {
		if len(buf) > 1 {
			buf = append(buf, ',')
		}
		buf = append(buf, m...)
	}
	// The stores check the messages as JSON when they are appended;
	// the event codec checks the whole list when the event is built.
	for _, e := range es {
		add(e.Message)
	}
	for _, m := range sent {
		add(m)
	}
	body["messages"] = append(buf, ']')
	return true, nil
}

// fillBudget is how many bytes of messages a filled start event may
// carry: half the server's payload limit (1 MiB where the bus does not
// say).
func (g *Gateway) fillBudget() int {
	if mp, ok := g.bus.(interface{ MaxPayload() int }); ok && mp.MaxPayload() > 0 {
		return mp.MaxPayload() / 2
	}
	return 1 << 19
}

func isNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}

// said is the wire form of the last message of body's messages list: what
// the user said, recorded once the event is published.
func said(body map[string]json.RawMessage) json.RawMessage {
	raw, ok := body["messages"]
	if !ok {
		return nil
	}
	var msgs []json.RawMessage
	if json.Unmarshal(raw, &msgs) != nil || len(msgs) == 0 {
		return nil
	}
	return msgs[len(msgs)-1]
}

// truthy reads a flag given as a JSON boolean or string, or a query value.
func truthy(v string) (bool, error) {
	switch strings.ToLower(strings.Trim(strings.TrimSpace(v), `"`)) {
	case "", "false", "0", "no":
		return false, nil
	case "true", "1", "yes":
		return true, nil
	}
	return false, fmt.Errorf("must be true or false, not %s", v)
}

// record appends an entry to the thread's history, if one is kept. A
// failure is logged, not the request's: the agent got its event.
func (g *Gateway) record(ctx context.Context, thread string, e HistoryEntry) {
	if g.cfg.History == nil || len(e.Message) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := g.cfg.History.Append(ctx, thread, e); err != nil {
		g.log.Error("gateway: cannot record thread history", "thread", thread, "event", e.ID, "err", err)
	}
}

// recordSent records what the user said with d, once d is published: the
// last message of a start event's messages, or a HITL answer's response.
func (g *Gateway) recordSent(ctx context.Context, d *delivery) {
	if g.cfg.History == nil || d.user == nil {
		return
	}
	var msg json.RawMessage
	if d.said != nil {
		// The event's copy, in the codec's wire form (blocks), not the
		// client's shorthand; a fill only puts history before it.
		msg = said(eventFields(d.event))
	}
	if msg == nil && (event.IsHITLResponse(d.event) || event.IsBITLResponse(d.event)) {
		if text := responseText(d.event); text != "" {
			msg = textMessage(event.RoleUser, text)
		}
	}
	if msg == nil {
		return
	}
	b := d.event.EventBase()
	g.record(ctx, d.target.Thread, HistoryEntry{ID: b.EventID, Message: msg, Class: d.target.Class, AgentID: d.target.ID,
		Display: d.target.Display, Run: d.target.Run, User: d.user.ID, CreatedAt: b.CreatedAt})
}

// eventFields is e's JSON as fields, nil when it does not encode.
func eventFields(e event.Event) map[string]json.RawMessage {
	data, err := event.Marshal(e)
	if err != nil {
		return nil
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(data, &fields) != nil {
		return nil
	}
	return fields
}

// responseText is a HITL answer's response as text: a string as it is, a
// boolean as "true" or "false" (as the reference projects it).
func responseText(e event.Event) string {
	resp := eventFields(e)["response"]
	var s string
	if json.Unmarshal(resp, &s) == nil {
		return s
	}
	var b bool
	if json.Unmarshal(resp, &b) == nil {
		return strconv.FormatBool(b)
	}
	return ""
}

func textMessage(role, text string) json.RawMessage {
	raw, err := event.MarshalValue(event.Text(role, text))
	if err != nil {
		return nil
	}
	return raw
}

// turn collects the assistant's side of one request while the gateway
// follows it: the chunks streamed in the display, then the primary
// agent's stop (what its output holds beyond the chunks) or a HITL
// question ends the message.
type turn struct {
	streamed strings.Builder
}

// see records the assistant's message when s ends it.
func (g *Gateway) see(ctx context.Context, tn *turn, s *seen) {
	if g.cfg.History == nil {
		return
	}
	b := s.event.EventBase()
	entry := func(text string) HistoryEntry {
		return HistoryEntry{ID: b.EventID, Message: textMessage(event.RoleAssistant, text), Class: s.topic.Class,
			AgentID: s.topic.ID, Display: s.topic.Display, Run: s.topic.Run, CreatedAt: b.CreatedAt}
	}
	switch {
	case event.IsChunk(s.event):
		if c, ok := as[event.ChunkEvent](s); ok {
			tn.streamed.WriteString(c.Content)
		}
	case event.IsHITLRequest(s.event):
		hr, ok := as[event.HumanInTheLoopRequestEvent](s)
		if ok && hr.Question != "" {
			text := tn.streamed.String() + hr.Question
			tn.streamed.Reset()
			g.record(ctx, s.topic.Thread, entry(text))
		}
	case s.terminal && event.IsStop(s.event):
		streamed := tn.streamed.String()
		text := streamed + unstreamed(streamed, finalText(s))
		tn.streamed.Reset()
		if text != "" {
			g.record(ctx, s.topic.Thread, entry(text))
		}
	}
}
