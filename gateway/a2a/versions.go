package a2a

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// v1Methods maps the JSON-RPC method names of A2A v1.0 to the v0.3 names
// the a2a-go server handles.
var v1Methods = map[string]string{
	"SendMessage":          "message/send",
	"SendStreamingMessage": "message/stream",
	"GetTask":              "tasks/get",
	"CancelTask":           "tasks/cancel",
	"SubscribeToTask":      "tasks/resubscribe",
	"GetExtendedAgentCard": "agent/getAuthenticatedExtendedCard",
}

// versions serves the v1.0 method names next to the v0.3 ones: a v1.0
// request is rewritten into its v0.3 form for h, and h's answer (a result,
// or each event of a stream) back into the v1.0 shapes: enum-style roles
// and task states, parts without a kind, results wrapped by what they are
// (task, message, statusUpdate, artifactUpdate). v0.3 requests pass
// untouched.
func versions(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, err := io.ReadAll(r.Body)
		if err != nil {
			writeRPCError(w, http.StatusRequestEntityTooLarge, "request body: "+err.Error())
			return
		}
		var head struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(data, &head)
		method := head.Method
		old, ok := v1Methods[method]
		var req map[string]json.RawMessage
		if !ok || json.Unmarshal(data, &req) != nil {
			r.Body = io.NopCloser(bytes.NewReader(data))
			h.ServeHTTP(w, r)
			return
		}
		req["method"], _ = json.Marshal(old)
		if p, ok := req["params"]; ok && (method == "SendMessage" || method == "SendStreamingMessage") {
			req["params"] = v1SendParams(p)
		}
		data, _ = json.Marshal(req)
		r.Body = io.NopCloser(bytes.NewReader(data))
		tw := &v1Writer{w: w, method: method}
		h.ServeHTTP(tw, r)
		tw.finish()
	})
}

// v1SendParams turns v1.0 SendMessageRequest params into v0.3
// MessageSendParams.
func v1SendParams(raw json.RawMessage) json.RawMessage {
	var p map[string]any
	if json.Unmarshal(raw, &p) != nil {
		return raw
	}
	if m, ok := p["message"].(map[string]any); ok {
		p["message"] = v03Message(m)
	}
	if c, ok := p["configuration"].(map[string]any); ok {
		if ri, ok := c["returnImmediately"].(bool); ok {
			c["blocking"] = !ri
			delete(c, "returnImmediately")
		}
	}
	out, err := json.Marshal(p)
	if err != nil {
		return raw
	}
	return out
}

func v03Message(m map[string]any) map[string]any {
	m["kind"] = "message"
	switch m["role"] {
	case "ROLE_USER":
		m["role"] = "user"
	case "ROLE_AGENT":
		m["role"] = "agent"
	}
	if parts, ok := m["parts"].([]any); ok {
		for i, p := range parts {
			if pm, ok := p.(map[string]any); ok {
				parts[i] = v03Part(pm)
			}
		}
	}
	return m
}

func v03Part(p map[string]any) map[string]any {
	out := map[string]any{}
	if md, ok := p["metadata"]; ok {
		out["metadata"] = md
	}
	switch {
	case p["text"] != nil:
		out["kind"], out["text"] = "text", p["text"]
	case p["data"] != nil:
		data, ok := p["data"].(map[string]any)
		if !ok {
			data = map[string]any{"value": p["data"]}
		}
		out["kind"], out["data"] = "data", data
	default:
		file := map[string]any{}
		if u, ok := p["url"]; ok {
			file["uri"] = u
		}
		if b, ok := p["raw"]; ok {
			file["bytes"] = b
		}
		if mt, ok := p["mediaType"]; ok {
			file["mimeType"] = mt
		}
		if n, ok := p["filename"]; ok {
			file["name"] = n
		}
		out["kind"], out["file"] = "file", file
	}
	return out
}

// v1Writer rewrites h's v0.3 answer into v1.0: a JSON body at the end, an
// event stream line by line.
type v1Writer struct {
	w      http.ResponseWriter
	method string
	status int
	stream bool
	buf    bytes.Buffer
}

func (t *v1Writer) Header() http.Header { return t.w.Header() }

func (t *v1Writer) WriteHeader(code int) {
	if t.status != 0 {
		return
	}
	t.status = code
	t.stream = strings.HasPrefix(t.w.Header().Get("Content-Type"), "text/event-stream")
	if t.stream {
		t.w.WriteHeader(code)
	}
}

func (t *v1Writer) Write(b []byte) (int, error) {
	t.WriteHeader(http.StatusOK)
	t.buf.Write(b)
	if !t.stream {
		return len(b), nil
	}
	for {
		i := bytes.IndexByte(t.buf.Bytes(), '\n')
		if i < 0 {
			return len(b), nil
		}
		line := t.buf.Next(i + 1)
		if payload, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			line = append(append([]byte("data: "), v1Response(bytes.TrimRight(payload, "\n"), t.method)...), '\n')
		}
		if _, err := t.w.Write(line); err != nil {
			return 0, err
		}
	}
}

// Flush implements http.Flusher.
func (t *v1Writer) Flush() {
	if f, ok := t.w.(http.Flusher); ok && t.stream {
		f.Flush()
	}
}

func (t *v1Writer) finish() {
	if t.stream {
		if t.buf.Len() > 0 {
			_, _ = t.w.Write(t.buf.Bytes())
		}
		return
	}
	if t.status == 0 {
		t.status = http.StatusOK
	}
	body := t.buf.Bytes()
	if len(bytes.TrimSpace(body)) > 0 {
		body = append(v1Response(bytes.TrimSpace(body), t.method), '\n')
	}
	t.w.WriteHeader(t.status)
	_, _ = t.w.Write(body)
}

// v1Response rewrites one JSON-RPC response; errors pass as they are.
func v1Response(data []byte, method string) []byte {
	var resp map[string]any
	if json.Unmarshal(data, &resp) != nil {
		return data
	}
	res, ok := resp["result"].(map[string]any)
	if !ok {
		return data
	}
	switch method {
	case "GetTask", "CancelTask":
		resp["result"] = v1Task(res)
	case "GetExtendedAgentCard":
		return data
	default:
		resp["result"] = v1Wrapped(res)
	}
	out, err := json.Marshal(resp)
	if err != nil {
		return data
	}
	return out
}

// v1Wrapped wraps a v0.3 result or stream event by its kind.
func v1Wrapped(res map[string]any) map[string]any {
	switch res["kind"] {
	case "task":
		return map[string]any{"task": v1Task(res)}
	case "message":
		return map[string]any{"message": v1Message(res)}
	case "status-update":
		delete(res, "kind")
		delete(res, "final")
		if st, ok := res["status"].(map[string]any); ok {
			res["status"] = v1Status(st)
		}
		return map[string]any{"statusUpdate": res}
	case "artifact-update":
		delete(res, "kind")
		if a, ok := res["artifact"].(map[string]any); ok {
			res["artifact"] = v1Artifact(a)
		}
		return map[string]any{"artifactUpdate": res}
	}
	return res
}

func v1Task(t map[string]any) map[string]any {
	delete(t, "kind")
	if st, ok := t["status"].(map[string]any); ok {
		t["status"] = v1Status(st)
	}
	if as, ok := t["artifacts"].([]any); ok {
		for i, a := range as {
			if am, ok := a.(map[string]any); ok {
				as[i] = v1Artifact(am)
			}
		}
	}
	if hs, ok := t["history"].([]any); ok {
		for i, h := range hs {
			if hm, ok := h.(map[string]any); ok {
				hs[i] = v1Message(hm)
			}
		}
	}
	return t
}

func v1Status(st map[string]any) map[string]any {
	if s, ok := st["state"].(string); ok {
		st["state"] = v1State(s)
	}
	if m, ok := st["message"].(map[string]any); ok {
		st["message"] = v1Message(m)
	}
	return st
}

// v1State spells a v0.3 task state as v1.0 does: "input-required" is
// TASK_STATE_INPUT_REQUIRED.
func v1State(s string) string {
	if s == "" || s == "unknown" {
		return "TASK_STATE_UNSPECIFIED"
	}
	return "TASK_STATE_" + strings.ToUpper(strings.ReplaceAll(s, "-", "_"))
}

func v1Message(m map[string]any) map[string]any {
	delete(m, "kind")
	switch m["role"] {
	case "user":
		m["role"] = "ROLE_USER"
	case "agent":
		m["role"] = "ROLE_AGENT"
	}
	m["parts"] = v1Parts(m["parts"])
	return m
}

func v1Artifact(a map[string]any) map[string]any {
	a["parts"] = v1Parts(a["parts"])
	return a
}

func v1Parts(v any) any {
	parts, ok := v.([]any)
	if !ok {
		return v
	}
	for i, p := range parts {
		pm, ok := p.(map[string]any)
		if !ok {
			continue
		}
		out := map[string]any{}
		if md, ok := pm["metadata"]; ok {
			out["metadata"] = md
		}
		switch pm["kind"] {
		case "text":
			out["text"] = pm["text"]
		case "data":
			out["data"] = pm["data"]
		case "file":
			f, _ := pm["file"].(map[string]any)
			if u, ok := f["uri"]; ok {
				out["url"] = u
			}
			if b, ok := f["bytes"]; ok {
				out["raw"] = b
			}
			if mt, ok := f["mimeType"]; ok {
				out["mediaType"] = mt
			}
			if n, ok := f["name"]; ok {
				out["filename"] = n
			}
		}
		parts[i] = out
	}
	return parts
}
