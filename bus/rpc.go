package bus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// DefaultRequestTimeout bounds a Request whose context has no deadline, as
// the reference's requester does.
const DefaultRequestTimeout = 5 * time.Second

// Headers of a typed error reply. Respond error replies carry both these
// headers and the reference's {"error","error_type"} body, so that Python
// requesters see the error too.
const (
	HeaderError     = "Saap-Error"
	HeaderErrorType = "Saap-Error-Type"
)

// RemoteError is an error reply to a Request: either a typed error reply
// (HeaderError) or the reference's {"error": ..., "error_type": ...} body.
type RemoteError struct {
	Subject string // the request subject
	Message string
	Type    string // the responder's error class, e.g. "ValueError"; may be empty
}

// Error names the request subject, the error type and the message.
func (e *RemoteError) Error() string {
	if e.Type == "" {
		return fmt.Sprintf("bus: error reply to %q: %s", e.Subject, e.Message)
	}
	return fmt.Sprintf("bus: error reply to %q: %s: %s", e.Subject, e.Type, e.Message)
}

// ReplyError returns a *RemoteError if reply is an error reply, else nil.
// A body counts as an error reply when it is a JSON object with a non-empty
// string "error" and an "error_type" key; a config reply such as
// {"found": true, "error": null} does not.
func ReplyError(subject string, reply *Msg) error {
	if reply == nil {
		return nil
	}
	if msg := reply.Header.Lookup(HeaderError); msg != "" {
		return &RemoteError{Subject: subject, Message: msg, Type: reply.Header.Lookup(HeaderErrorType)}
	}
	d := bytes.TrimSpace(reply.Data)
	if len(d) == 0 || d[0] != '{' || !bytes.Contains(d, []byte(`"error_type"`)) {
		return nil
	}
	var body struct {
		Error     *string         `json:"error"`
		ErrorType json.RawMessage `json:"error_type"`
	}
	if json.Unmarshal(d, &body) != nil || body.Error == nil || *body.Error == "" || body.ErrorType == nil {
		return nil
	}
	var typ string
	_ = json.Unmarshal(body.ErrorType, &typ) // a non-string type is kept empty
	return &RemoteError{Subject: subject, Message: *body.Error, Type: typ}
}

// Respond publishes data (with headers h) as the reply to req. It fails if
// req has no reply subject.
func Respond(ctx context.Context, p Publisher, req *Msg, data []byte, h Header) error {
	if req.Reply == "" {
		return fmt.Errorf("bus: message on %q has no reply subject", req.Subject)
	}
	return p.Publish(ctx, &Msg{Subject: req.Reply, Header: h, Data: data})
}

// RespondError publishes an error reply to req: typed headers plus the
// reference's {"error","error_type"} body. errType names the error class;
// empty means "Error".
func RespondError(ctx context.Context, p Publisher, req *Msg, err error, errType string) error {
	if err == nil {
		return errors.New("bus: RespondError with a nil error")
	}
	if errType == "" {
		errType = "Error"
	}
	body, _ := json.Marshal(map[string]string{"error": err.Error(), "error_type": errType})
	h := Header{}
	h.Set(HeaderError, err.Error())
	h.Set(HeaderErrorType, errType)
	return Respond(ctx, p, req, body, h)
}

// RequestContext returns ctx bounded by DefaultRequestTimeout when it has no
// deadline. Implementations of Requester use it.
func RequestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, DefaultRequestTimeout)
}
