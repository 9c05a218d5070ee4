package gateway

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/files"
)

// chatRequest is the part of an OpenAI chat-completions request the gateway
// reads. model is "<AgentClass>/<agent_id>" or "<AgentClass>".
type chatRequest struct {
	Model         string         `json:"model"`
	Messages      []chatMessage  `json:"messages"`
	Stream        bool           `json:"stream"`
	StreamOptions *streamOptions `json:"stream_options"`
	Metadata      chatMetadata   `json:"metadata"`
	// What the endpoint cannot honour: the agent chooses its tools and
	// answers once.
	Tools     json.RawMessage `json:"tools"`
	Functions json.RawMessage `json:"functions"`
	N         *int            `json:"n"`
}

// unsupported names the first parameter of req the endpoint cannot honour.
func (req *chatRequest) unsupported() (param, msg string) {
	set := func(raw json.RawMessage) bool {
		t := strings.TrimSpace(string(raw))
		return t != "" && t != "null" && t != "[]"
	}
	switch {
	case set(req.Tools):
		return "tools", "tools: the agent chooses and runs its own tools; client-side tools are not supported"
	case set(req.Functions):
		return "functions", "functions: the agent chooses and runs its own tools; client-side functions are not supported"
	case req.N != nil && *req.N != 1:
		return "n", fmt.Sprintf("n: the agent answers once; n must be 1, got %d", *req.N)
	}
	return "", ""
}

// chatMetadata is a request's metadata. OpenAI's values are strings; the
// reference's clients send reconstruct_history as a boolean, so other
// JSON values are kept as their JSON text.
type chatMetadata map[string]string

func (m *chatMetadata) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("metadata: must be an object: %w", err)
	}
	out := make(chatMetadata, len(raw))
	for k, v := range raw {
		var s string
		if json.Unmarshal(v, &s) == nil {
			out[k] = s
			continue
		}
		out[k] = strings.TrimSpace(string(v))
	}
	*m = out
	return nil
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// contentPart is one element of an array-form message content.
type contentPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL *struct {
		URL    string `json:"url"`
		Detail string `json:"detail"`
	} `json:"image_url"`
	// File is an OpenAI file part; the gateway takes a file_id of its own
	// uploads (POST /api/v1/saap/files) and passes it on as a
	// UserUploadedFile reference.
	File *struct {
		FileID string `json:"file_id"`
	} `json:"file"`
}

// text returns the message's text (array parts joined).
func (m chatMessage) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []contentPart
	_ = json.Unmarshal(m.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// chatMessage converts the message to the library's ChatMessage, which the
// event codec then writes, and returns the file ids its file parts name.
// An image given as a data: URL becomes inline image bytes with their
// sniffed MIME type, as llama-index's ImageBlock carries them; one that
// is no image, or a URL other than http(s), is an error.
func (m chatMessage) chatMessage() (event.ChatMessage, []string, error) {
	blocks := []event.Block{}
	var fileIDs []string
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		blocks = append(blocks, &event.TextBlock{Text: s})
	} else {
		var parts []contentPart
		_ = json.Unmarshal(m.Content, &parts)
		for i, p := range parts {
			switch {
			case p.Type == "text":
				blocks = append(blocks, &event.TextBlock{Text: p.Text})
			case p.Type == "image_url" && p.ImageURL != nil:
				b, err := imageBlock(p.ImageURL.URL, p.ImageURL.Detail)
				if err != nil {
					return event.ChatMessage{}, nil, badRequest("messages", "messages: content[%d].image_url: %v", i, err)
				}
				blocks = append(blocks, b)
			case p.Type == "file" && p.File != nil:
				if p.File.FileID == "" {
					return event.ChatMessage{}, nil, badRequest("messages", "messages: content[%d].file: only file_id of a file uploaded to this gateway is taken", i)
				}
				fileIDs = append(fileIDs, p.File.FileID)
			}
		}
	}
	return event.ChatMessage{Role: m.Role, AdditionalKwargs: map[string]json.RawMessage{}, Blocks: blocks}, fileIDs, nil
}

// imageBlock is the ImageBlock of an image_url part.
func imageBlock(u, detail string) (*event.ImageBlock, error) {
	b := &event.ImageBlock{}
	if detail != "" {
		b.Detail = event.Str(detail)
	}
	rest, isData := strings.CutPrefix(u, "data:")
	if !isData {
		if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
			return nil, fmt.Errorf("url: want an http(s) or data: URL, got %q", truncate(u, 40))
		}
		b.URL = event.Str(u)
		return b, nil
	}
	meta, payload, ok := strings.Cut(rest, ",")
	if !ok || !strings.HasSuffix(meta, ";base64") {
		return nil, errors.New("url: a data: URL of an image must be base64 (data:image/png;base64,...)")
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return nil, fmt.Errorf("url: base64: %v", err)
	}
	mt := strings.TrimSuffix(http.DetectContentType(data), "; charset=utf-8")
	if !slices.Contains(files.ImageTypes, mt) {
		return nil, fmt.Errorf("url: the data is %s, not one of %s", mt, strings.Join(files.ImageTypes, ", "))
	}
	b.Image, b.ImageMimetype = event.Bytes(data), event.Str(mt)
	return b, nil
}

// openRequest is a HITL request a chat completion ended with: its JSON as
// received and its decoded form.
type openRequest struct {
	raw []byte
	req *event.HumanInTheLoopRequestEvent
}

// openRequests remembers, per thread, the HITL input or chat request that
// ended the last chat completion, so the next user message answers it (the
// reference's chat flow).
type openRequests struct {
	mu sync.Mutex
	m  map[string]openRequest
}

func (o *openRequests) put(thread string, req openRequest) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.m[thread] = req
}

func (o *openRequests) take(thread string) (openRequest, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	r, ok := o.m[thread]
	delete(o.m, thread)
	return r, ok
}

// openAIError writes an error in the OpenAI shape, which OpenAI clients
// surface as the error message.
func openAIError(w http.ResponseWriter, status int, msg, param string) {
	typ := "invalid_request_error"
	switch {
	case status == http.StatusUnauthorized:
		typ = "authentication_error"
	case status == http.StatusForbidden:
		typ = "permission_error"
	case status == http.StatusNotFound:
		typ = "not_found_error"
	case status >= 500:
		typ = "server_error"
	}
	body := map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nilIfEmpty(param), "code": nil}}
	writeJSON(w, status, body)
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (g *Gateway) chatFail(w http.ResponseWriter, err error) {
	var re *requestError
	if errors.As(err, &re) {
		openAIError(w, re.status, re.msg, re.field)
		return
	}
	g.log.Error("gateway: chat completion failed", "err", err)
	openAIError(w, http.StatusInternalServerError, err.Error(), "")
}

// serveChat serves the OpenAI-compatible chat completions endpoint.
func (g *Gateway) serveChat(w http.ResponseWriter, r *http.Request) {
	user, ok := g.authenticateWith(w, r, g.chatFail)
	if !ok {
		return
	}
	obj, err := g.readObject(w, r)
	if err != nil {
		g.chatFail(w, err)
		return
	}
	raw, _ := json.Marshal(obj)
	var req chatRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		g.chatFail(w, badRequest("body", "body: %v", err))
		return
	}
	if param, msg := req.unsupported(); param != "" {
		openAIError(w, http.StatusBadRequest, msg, param)
		return
	}
	// A model as GET /v1/models lists it (the class) talks to the
	// gateway's default agent id.
	className, id, found := strings.Cut(req.Model, "/")
	if !found {
		id = g.cfg.DefaultAgentID
	}
	if className == "" || id == "" {
		g.chatFail(w, badRequest("model", `model: must be "<AgentClass>" or "<AgentClass>/<agent_id>", got %q`, req.Model))
		return
	}
	class, ok := g.reg.get(className)
	if !ok {
		openAIError(w, http.StatusNotFound, fmt.Sprintf("model %q: %s", req.Model, g.unknownClass(className)), "model")
		return
	}
	spec, ok := class.chatStart()
	if !ok {
		openAIError(w, http.StatusNotFound, fmt.Sprintf("model %q: agent class %s is not conversational", req.Model, className), "model")
		return
	}
	if err := validToken("agent_id", id); err != nil {
		g.chatFail(w, badRequest("model", "model: %v", err))
		return
	}
	if len(req.Messages) == 0 {
		g.chatFail(w, badRequest("messages", "messages: at least one message is required"))
		return
	}
	thread, display := req.Metadata["thread_id"], req.Metadata["display_id"]
	reconstruct, err := truthy(req.Metadata["reconstruct_history"])
	if err != nil {
		g.chatFail(w, badRequest("metadata.reconstruct_history", "metadata.reconstruct_history: %v", err))
		return
	}
	for _, f := range []struct{ name, v string }{{"metadata.thread_id", thread}, {"metadata.display_id", display}} {
		if f.v != "" && !event.IsObjectID(f.v) {
			g.chatFail(w, badRequest(f.name, "%s: must be 24 lower-case hex characters, got %q", f.name, f.v))
			return
		}
	}
	var d *delivery
	if thread != "" {
		d, err = g.chatAnswer(r, user, class, thread, display, req.Messages[len(req.Messages)-1].text())
		if err != nil {
			g.chatFail(w, err)
			return
		}
	}
	if d == nil {
		msgs := make([]event.ChatMessage, len(req.Messages))
		var fileIDs []string
		for i, m := range req.Messages {
			var ids []string
			if msgs[i], ids, err = m.chatMessage(); err != nil {
				g.chatFail(w, err)
				return
			}
			fileIDs = append(fileIDs, ids...)
		}
		raw, err := event.MarshalValue(msgs)
		if err != nil {
			g.chatFail(w, fmt.Errorf("gateway: encode messages: %w", err))
			return
		}
		body := map[string]json.RawMessage{"messages": raw}
		if len(fileIDs) > 0 {
			refs, err := g.fileRefs(r.Context(), fileIDs, user)
			if err != nil {
				g.chatFail(w, err)
				return
			}
			body["files"] = refs
		}
		sent := said(body)
		e, err := g.buildEvent(spec, body, user, g.locale(r))
		if err != nil {
			g.chatFail(w, err)
			return
		}
		if thread == "" {
			thread = event.NewID()
		}
		if display == "" {
			display = event.NewID()
		}
		if err := g.enterThread(r.Context(), thread, user); err != nil {
			g.chatFail(w, err)
			return
		}
		if filled, err := g.fillMessages(r.Context(), thread, spec, body, reconstruct); err != nil {
			g.chatFail(w, err)
			return
		} else if filled {
			if e, err = g.buildEvent(spec, body, user, g.locale(r)); err != nil {
				g.chatFail(w, err)
				return
			}
		}
		run := event.NewID()
		d = &delivery{spec: spec, event: e, user: user, header: aihubHeaders(r), watch: display, said: sent,
			target:  agentTopic(class.Name(), id, thread, display, run, spec.EventName),
			primary: primary{class: class.Name(), id: id, run: run}}
	}
	g.completeChat(w, r, d, req)
}

// chatAnswer turns text, the last user message, into the response to the
// thread's open HITL input or chat request, if there is one; nil otherwise.
func (g *Gateway) chatAnswer(r *http.Request, user *event.UserIdentity, class *Class, thread, display, text string) (*delivery, error) {
	if err := g.checkMember(r.Context(), thread, user); err != nil {
		var re *requestError
		if errors.As(err, &re) {
			// A thread the caller does not know yet is created below.
			if ok, _ := g.threads.Create(r.Context(), thread, user.ID); ok {
				return nil, nil
			}
		}
		return nil, err
	}
	open, ok, err := g.openChatQuestion(r.Context(), thread)
	if err != nil || !ok {
		return nil, err
	}
	base := "HumanInTheLoopInputResponseEvent"
	if open.req.HITLType == event.HITLChat {
		base = "HumanInTheLoopChatResponseEvent"
	}
	t, err := topicOf(open.req)
	if err != nil {
		return nil, err
	}
	if t.Thread != thread {
		return nil, nil
	}
	parents := []string{t.Name}
	if typ, ok := event.Lookup(base); ok {
		parents = append(parents, typ.Parents...)
	} else {
		parents = append(parents, base)
	}
	response, _ := json.Marshal(text)
	body := map[string]json.RawMessage{"request_event": open.raw, "response": response}
	spec := event.EventSpecs{EventName: t.Name, EventParents: parents}
	if s, ok := class.hitlResponse(t.Name); ok {
		spec = s
	}
	e, err := g.buildEvent(spec, body, nil, "")
	if err != nil {
		return nil, err
	}
	if display == "" {
		display = t.Display
	}
	return &delivery{spec: spec, event: e, user: user, header: aihubHeaders(r), watch: display,
		target:  agentTopic(t.Class, t.ID, thread, t.Display, t.Run, t.Name),
		primary: primary{class: t.Class, id: t.ID, run: t.Run}}, nil
}

// openChatQuestion returns the thread's input or chat question that is
// still open: the question store's latest for the thread when the store
// keeps one (so any replica finds it), else the one that ended this
// replica's last chat completion in the thread. A question answered, timed
// out or of an ended run is none: the message then starts a new run.
func (g *Gateway) openChatQuestion(ctx context.Context, thread string) (openRequest, bool, error) {
	local, hasLocal := g.chats.take(thread)
	var raw []byte
	if tq, ok := g.questions.(ThreadQuestions); ok {
		q, found, err := tq.LastChatQuestion(ctx, thread)
		if err != nil {
			return openRequest{}, false, fmt.Errorf("gateway: questions: %w", err)
		}
		if found {
			raw = q.Request
		}
	}
	if raw == nil && hasLocal {
		raw = local.raw
	}
	if raw == nil {
		return openRequest{}, false, nil
	}
	req, err := event.UnmarshalAs[event.HumanInTheLoopRequestEvent](raw)
	if err != nil || !chatAnswerable(req.HITLType) {
		return openRequest{}, false, nil
	}
	q, known, err := g.questions.Question(ctx, req.EventID)
	if err != nil {
		return openRequest{}, false, fmt.Errorf("gateway: questions: %w", err)
	}
	if known && g.answerable(ctx, q) != nil {
		return openRequest{}, false, nil
	}
	return openRequest{raw: raw, req: req}, true, nil
}

// completion gathers what a chat completion reports.
type completion struct {
	id, model string
	created   int64
	streamed  strings.Builder
	chunks    []timedText
	usage     usage
	costs     int   // LLMCostEvents seen
	calls     usage // the token counts of the run's LLM events
	counted   int   // LLM events with token counts seen
}

type timedText struct {
	at   int64
	text string
}

type usage struct {
	Prompt     int64 `json:"prompt_tokens"`
	Completion int64 `json:"completion_tokens"`
	Total      int64 `json:"total_tokens"`
}

func (g *Gateway) completeChat(w http.ResponseWriter, r *http.Request, d *delivery, req chatRequest) {
	ctx := r.Context()
	wt, err := g.watchThread(ctx, d.target.Thread, d.watch)
	if err != nil {
		g.chatFail(w, err)
		return
	}
	defer wt.close()
	if err := g.publish(ctx, d); err != nil {
		g.chatFail(w, err)
		return
	}
	h := w.Header()
	h.Set("X-Thread-Id", d.target.Thread)
	h.Set("X-Display-Id", d.watch)
	h.Set("X-Run-Id", d.target.Run)

	c := &completion{id: "chatcmpl-" + d.target.Run, model: req.Model, created: g.now().Unix()}
	var s *sse
	var tick func() error
	if req.Stream {
		s = newSSE(w)
		tick = s.comment
	}
	first := true
	final, err := g.follow(ctx, wt, d.primary, func(x *seen) error {
		switch {
		case event.IsChunk(x.event):
			f, ok := as[event.ChunkEvent](x)
			if !ok {
				return nil
			}
			c.streamed.WriteString(f.Content)
			c.chunks = append(c.chunks, timedText{f.CreatedAt, f.Content})
			if s != nil {
				delta := map[string]any{"content": f.Content}
				if first {
					delta["role"] = "assistant"
					first = false
				}
				return s.data(c.chunk(delta, nil))
			}
		case event.IsLLMCost(x.event):
			f, ok := as[event.LLMCostEvent](x)
			if !ok {
				return nil
			}
			c.usage.Prompt += f.PromptTokenCount
			c.usage.Completion += f.CompletionTokenCount
			c.usage.Total += f.PromptTokenCount + f.CompletionTokenCount
			c.costs++
		case event.Has(x.event, "LLMEvent"):
			f, ok := as[event.LLMEvent](x)
			if !ok || f.TokenCountPrompt == nil && f.TokenCountCompletion == nil {
				return nil
			}
			in, out := deref(f.TokenCountPrompt), deref(f.TokenCountCompletion)
			c.calls.Prompt += in
			c.calls.Completion += out
			c.calls.Total += cmp.Or(deref(f.TokenCountTotal), in+out)
			c.counted++
		}
		return nil
	}, tick)

	var tail string
	status := http.StatusOK
	switch {
	case errors.Is(err, errTimeout):
		status = http.StatusGatewayTimeout
		tail = fmt.Sprintf("\n\n> **Error:** no answer from %s within %s", req.Model, g.cfg.Timeout)
	case err != nil:
		return // client gone
	case event.IsException(final.event):
		msg, st := exceptionOf(final)
		status = st
		tail = "\n\n> **Error:** " + msg
	case event.IsHITLRequest(final.event):
		if hr, ok := as[event.HumanInTheLoopRequestEvent](final); ok {
			tail = hr.Question
			if hr.HITLType == event.HITLInput || hr.HITLType == event.HITLChat {
				g.chats.put(d.target.Thread, openRequest{raw: final.raw, req: hr})
			}
		}
	default:
		tail = unstreamed(c.streamed.String(), finalText(final))
	}

	if s != nil {
		delta := map[string]any{}
		if tail != "" {
			delta["content"] = tail
		}
		stop := "stop"
		if err := s.data(c.chunk(delta, &stop)); err != nil {
			return
		}
		if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
			if err := s.data(c.usageChunk()); err != nil {
				return
			}
		}
		_ = s.done()
		return
	}
	if status != http.StatusOK {
		openAIError(w, status, strings.TrimPrefix(tail, "\n\n> **Error:** "), "")
		return
	}
	slices.SortStableFunc(c.chunks, func(a, b timedText) int { return cmp.Compare(a.at, b.at) })
	var text strings.Builder
	for _, ch := range c.chunks {
		text.WriteString(ch.text)
	}
	text.WriteString(tail)
	writeJSON(w, http.StatusOK, map[string]any{
		"id":      c.id,
		"object":  "chat.completion",
		"created": c.created,
		"model":   c.model,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": text.String(), "refusal": nil},
			"finish_reason": "stop",
			"logprobs":      nil,
		}},
		"usage": c.usageOrNil(),
	})
}

// usageOrNil is the token usage the run's LLMCostEvents reported, else the
// sum of its LLM events' token counts (an LLMStopEvent carries its call's),
// or nil (JSON null) when it reported none: zeros would claim a free run.
func (c *completion) usageOrNil() *usage {
	switch {
	case c.costs > 0:
		return &c.usage
	case c.counted > 0:
		return &c.calls
	}
	return nil
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// chunk is one chat.completion.chunk. Every chunk and the final object name
// the requested model, so clients see one model per response.
func (c *completion) chunk(delta map[string]any, finish *string) []byte {
	data, _ := json.Marshal(map[string]any{
		"id":      c.id,
		"object":  "chat.completion.chunk",
		"created": c.created,
		"model":   c.model,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}},
	})
	return data
}

func (c *completion) usageChunk() []byte {
	data, _ := json.Marshal(map[string]any{
		"id": c.id, "object": "chat.completion.chunk", "created": c.created,
		"model": c.model, "choices": []any{}, "usage": c.usageOrNil(),
	})
	return data
}

// as returns x's event as a T: the decoded event when it is one, else the
// T part of a registered subtype, decoded again by the codec. Callers check
// that the event is a T first (event.Has): as also reads a fallback event
// of an unknown name as a T.
func as[T any, PT interface {
	*T
	event.Event
}](x *seen) (PT, bool) {
	if e, ok := x.event.(PT); ok {
		return e, true
	}
	e, err := event.UnmarshalAs[T, PT](x.raw)
	return e, err == nil
}

// finalText is the full answer a stop event carries (see StopText); an
// LLM stop already decoded is read as it is.
func finalText(x *seen) string {
	if event.Has(x.event, "LLMEvent") {
		if llm, ok := as[event.LLMEvent](x); ok && len(llm.OutputMessages) > 0 {
			return llm.OutputMessages[len(llm.OutputMessages)-1].Content()
		}
		return ""
	}
	return StopText(x.raw)
}

// StopText is the full answer a stop event carries, from its JSON: the
// text of its last output message (an LLM stop, or any stop with
// output_messages), else its content string. Custom stops may declare
// these fields or carry them as extras, so they are read with the codec's
// value decoding. The adapters give it as a run's final answer.
func StopText(data []byte) string {
	var out struct {
		Messages json.RawMessage `json:"output_messages"`
		Content  *string         `json:"content"`
	}
	if event.UnmarshalValue(data, &out) != nil {
		return ""
	}
	if len(out.Messages) > 0 && string(out.Messages) != "null" {
		var msgs []event.Message
		if event.UnmarshalValue(out.Messages, &msgs) == nil && len(msgs) > 0 {
			if text := msgs[len(msgs)-1].Content(); text != "" {
				return text
			}
		}
		// ChatMessage-shaped outputs: blocks, or the legacy content string.
		var chat []event.ChatMessage
		if event.UnmarshalValue(out.Messages, &chat) == nil && len(chat) > 0 {
			return chat[len(chat)-1].Content()
		}
		return ""
	}
	if out.Content != nil {
		return *out.Content
	}
	return ""
}

// unstreamed is the part of the final answer the chunks did not carry (the
// reference's backstop for chunks that lose the race with the stop).
func unstreamed(streamed, final string) string {
	if strings.HasPrefix(final, streamed) {
		return final[len(streamed):]
	}
	return ""
}

// model is one entry of the OpenAI model list: an agent class. Chat
// requests name "<id>/<agent_id>".
type model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func modelOf(c *Class) model {
	return model{ID: c.Name(), Object: "model", Created: c.Discovered.Unix(), OwnedBy: "saap-gateway"}
}

// serveModels lists the conversational classes the gateway serves, which
// the chat endpoint can talk to, in OpenAI's list format.
func (g *Gateway) serveModels(w http.ResponseWriter, r *http.Request) {
	if _, ok := g.authenticateWith(w, r, g.chatFail); !ok {
		return
	}
	data := []model{}
	for _, c := range g.reg.list() {
		if _, ok := c.chatStart(); ok {
			data = append(data, modelOf(c))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// serveModel describes one conversational class; the model may also be a
// chat model "<AgentClass>/<agent_id>".
func (g *Gateway) serveModel(w http.ResponseWriter, r *http.Request) {
	if _, ok := g.authenticateWith(w, r, g.chatFail); !ok {
		return
	}
	name := r.PathValue("model")
	className, _, _ := strings.Cut(name, "/")
	c, ok := g.reg.get(className)
	if !ok {
		openAIError(w, http.StatusNotFound, fmt.Sprintf("model %q: %s", name, g.unknownClass(className)), "model")
		return
	}
	if _, ok := c.chatStart(); !ok {
		openAIError(w, http.StatusNotFound, fmt.Sprintf("model %q: agent class %s is not conversational", name, className), "model")
		return
	}
	writeJSON(w, http.StatusOK, modelOf(c))
}

func (g *Gateway) openAINotFound(w http.ResponseWriter, r *http.Request) {
	openAIError(w, http.StatusNotFound, fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path), "")
}

func (g *Gateway) openAINotAllowed(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		openAIError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s %s: method not allowed, use %s", r.Method, r.URL.Path, allow), "")
	}
}
