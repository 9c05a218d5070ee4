package hitl

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// Bot carries a bot-in-the-loop question to a channel (Slack, Teams, a
// webhook). The answer comes back later and separately, as a
// BotInTheLoopResponseEvent published into the asking run (for Webhook:
// through the gateway's bot answer route).
type Bot interface {
	// Ask delivers req, whose topic the agent's runtime has completed. An
	// error means the channel did not take the question.
	Ask(ctx context.Context, req *event.BotInTheLoopRequestEvent) error
}

// AskBot builds a BotInTheLoopRequestEvent asking user question on a bot
// channel, as the reference's factory does: channel becomes channel_config
// (for Slack {channel_id, service_url}, for Teams {channel_id, tenant_id,
// bot_id}, for Webhook anything its receiver understands) and the topic
// names the BotInTheLoopResponseEvent, which the engine completes with the
// run's ids. Timeout gives the wait a deadline; on expiry the run gets a
// BotInTheLoopTimeoutEvent.
func AskBot(question string, user *event.UserIdentity, channel any, opts ...Option) (*event.BotInTheLoopRequestEvent, error) {
	if strings.TrimSpace(question) == "" {
		return nil, fmt.Errorf("%w: BotInTheLoopRequestEvent with a blank question", ErrInvalid)
	}
	if user == nil {
		return nil, fmt.Errorf("%w: BotInTheLoopRequestEvent needs the user asked", ErrInvalid)
	}
	cfg, ok := channel.(json.RawMessage)
	if !ok {
		var err error
		if cfg, err = json.Marshal(channel); err != nil {
			return nil, fmt.Errorf("%w: channel config: %v", ErrInvalid, err)
		}
	}
	if !json.Valid(cfg) || bytes.Equal(bytes.TrimSpace(cfg), []byte("null")) {
		return nil, fmt.Errorf("%w: BotInTheLoopRequestEvent needs a channel config (JSON), got %q", ErrInvalid, cfg)
	}
	req := event.New[event.BotInTheLoopRequestEvent]()
	// The engine stamps created_at when it publishes; a timeout counts
	// from then.
	req.CreatedAt = 0
	req.User, req.Question, req.ChannelConfig = user, question, cfg
	req.Topic = &event.Topic{EventType: event.Str(string(topic.Control)), EventName: event.Str("BotInTheLoopResponseEvent")}
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.set {
		if err := SetTimeout(req, o.timeout); err != nil {
			return nil, err
		}
	}
	return req, nil
}

// The headers of a signed webhook message, in both directions.
const (
	// TimestampHeader holds the signing time in Unix seconds.
	TimestampHeader = "X-Saap-Timestamp"
	// SignatureHeader holds "v1=" and the hex HMAC-SHA256, keyed with the
	// shared secret, of the timestamp, a dot and the body.
	SignatureHeader = "X-Saap-Signature"
)

// DefaultReplayWindow is how far a signed message's timestamp may be from
// the receiver's clock.
const DefaultReplayWindow = 5 * time.Minute

// WebhookQuestion is the JSON body Webhook posts for each question.
type WebhookQuestion struct {
	// RequestEventID names the question; the answer quotes it.
	RequestEventID string `json:"request_event_id"`
	// Question is the text to show.
	Question string `json:"question"`
	// User is who is asked.
	User *event.UserIdentity `json:"user"`
	// ChannelConfig is the request's channel_config as the agent set it.
	ChannelConfig json.RawMessage `json:"channel_config"`
	// RequestEvent is the whole request event.
	RequestEvent json.RawMessage `json:"request_event"`
}

// WebhookAnswer is the JSON body a bot posts to the gateway's bot answer
// route, signed as Webhook signs its questions.
type WebhookAnswer struct {
	// RequestEventID is the request_event_id of the question answered.
	RequestEventID string `json:"request_event_id"`
	// Response is the answer's text.
	Response string `json:"response"`
	// Responder is who answered on the channel.
	Responder event.BotInTheLoopResponderInfo `json:"responder"`
}

// Webhook is a Bot that POSTs each question as a WebhookQuestion to URL,
// signed with Secret (see Sign). The receiving service shows the question
// and posts the answer, signed with the same secret, to the gateway's bot
// answer route.
type Webhook struct {
	// URL receives the questions. Required.
	URL string
	// Secret signs the questions. Required; share it only with the
	// receiving service and the gateway.
	Secret []byte
	// Client sends the requests. Default: a client with a 10 s timeout.
	Client *http.Client
	// Now is the clock (for tests). Default time.Now.
	Now func() time.Time
}

var defaultClient = &http.Client{Timeout: 10 * time.Second}

// Ask implements Bot: one signed POST; a status other than 2xx is an error.
func (w *Webhook) Ask(ctx context.Context, req *event.BotInTheLoopRequestEvent) error {
	if w.URL == "" {
		return errors.New("hitl: webhook: URL is empty")
	}
	if len(w.Secret) == 0 {
		return errors.New("hitl: webhook: Secret is empty")
	}
	if req == nil {
		return errors.New("hitl: webhook: nil request")
	}
	raw, err := event.Marshal(req)
	if err != nil {
		return fmt.Errorf("hitl: webhook: encode request: %w", err)
	}
	body, err := json.Marshal(WebhookQuestion{
		RequestEventID: req.EventID, Question: req.Question, User: req.User,
		ChannelConfig: req.ChannelConfig, RequestEvent: raw,
	})
	if err != nil {
		return fmt.Errorf("hitl: webhook: encode question: %w", err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("hitl: webhook: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	SignHeader(hr.Header, w.Secret, now(), body)
	c := w.Client
	if c == nil {
		c = defaultClient
	}
	resp, err := c.Do(hr)
	if err != nil {
		return fmt.Errorf("hitl: webhook: post question %s: %w", req.EventID, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("hitl: webhook: post question %s: status %d: %s", req.EventID, resp.StatusCode, strings.TrimSpace(string(snippet)))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	return nil
}

// Sign returns the signature of body sent at ts: "v1=" and the hex
// HMAC-SHA256 of "<unix seconds>.<body>" keyed with secret. The timestamp
// is inside the signature so that an old message cannot be sent again
// with a fresh time.
func Sign(secret []byte, ts time.Time, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(strconv.FormatInt(ts.Unix(), 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1=" + hex.EncodeToString(m.Sum(nil))
}

// SignHeader sets TimestampHeader and SignatureHeader of h for body.
func SignHeader(h http.Header, secret []byte, ts time.Time, body []byte) {
	h.Set(TimestampHeader, strconv.FormatInt(ts.Unix(), 10))
	h.Set(SignatureHeader, Sign(secret, ts, body))
}

// ErrSignature is the error of every refused signature: missing, wrong,
// outside the replay window, or seen before.
var ErrSignature = errors.New("hitl: signature refused")

// Verifier checks signed webhook messages: the signature (compared in
// constant time), the timestamp (within Window of the clock), and that the
// same signature was not accepted before within the window. It is safe for
// concurrent use. The memory of seen signatures is per process; behind
// several gateway replicas a replay to another replica still finds its
// question answered and is refused there.
type Verifier struct {
	// Secret is the shared secret. Required.
	Secret []byte
	// Window is the replay window. Default DefaultReplayWindow.
	Window time.Duration
	// Now is the clock (for tests). Default time.Now.
	Now func() time.Time

	mu   sync.Mutex
	seen map[string]time.Time
}

// maxSeen bounds the remembered signatures; beyond it messages are refused
// until old ones leave the window, rather than letting memory grow.
const maxSeen = 1 << 16

// Verify checks the signature headers of body. The returned error wraps
// ErrSignature and says what was wrong.
func (v *Verifier) Verify(h http.Header, body []byte) error {
	if len(v.Secret) == 0 {
		return fmt.Errorf("%w: no secret configured", ErrSignature)
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	window := v.Window
	if window <= 0 {
		window = DefaultReplayWindow
	}
	tsText, sig := h.Get(TimestampHeader), h.Get(SignatureHeader)
	if tsText == "" || sig == "" {
		return fmt.Errorf("%w: %s and %s are required", ErrSignature, TimestampHeader, SignatureHeader)
	}
	secs, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s must be Unix seconds: %q", ErrSignature, TimestampHeader, tsText)
	}
	ts := time.Unix(secs, 0)
	if !hmac.Equal([]byte(sig), []byte(Sign(v.Secret, ts, body))) {
		return fmt.Errorf("%w: %s does not match the body", ErrSignature, SignatureHeader)
	}
	t := now()
	if d := t.Sub(ts); d > window || d < -window {
		return fmt.Errorf("%w: timestamp %s is outside the %s replay window", ErrSignature, ts.UTC().Format(time.RFC3339), window)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.seen == nil {
		v.seen = make(map[string]time.Time)
	}
	if _, dup := v.seen[sig]; dup {
		return fmt.Errorf("%w: this message was received before (replay)", ErrSignature)
	}
	if len(v.seen) >= maxSeen {
		for s, at := range v.seen {
			if d := t.Sub(at); d > window || d < -window {
				delete(v.seen, s)
			}
		}
		if len(v.seen) >= maxSeen {
			return fmt.Errorf("%w: too many messages within the replay window", ErrSignature)
		}
	}
	v.seen[sig] = ts
	return nil
}
