package natskv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/topic"
)

// limited is a bucket that refuses, before any I/O, a key whose subject
// would not fit in a NATS protocol line: the server would drop the
// connection and the client close it for good. Escaping can triple the
// length of a run id or key, so a run whose ids are fine on the agent
// subject may still be refused here; the error is permanent
// (topic.ErrSubjectTooLong).
//
// With js set, it writes keys itself: one publish with the expected
// revision, as the client does, without the client's regular-expression
// check of every key (2.5 % of a run's CPU). Keys are checked here, byte by
// byte, against the same alphabet. A conflicting Create or Update goes on
// through the client, which tells a deleted key from a live one.
type limited struct {
	jetstream.KeyValue
	overhead int // bytes of the longest subject around a key: a direct get's
	js       jetstream.JetStream
	nc       *nats.Conn
	timeout  time.Duration // the client's default for a request without a deadline
	put      string        // "$KV.<bucket>."
	// failed, if set, sees every error of a key operation (see
	// Store.lostBucket).
	failed func(error)
}

// fail hands err to l.failed and returns it.
func (l *limited) fail(err error) error {
	if err != nil && l.failed != nil {
		l.failed(err)
	}
	return err
}

func limit(kv jetstream.KeyValue) *limited {
	b := kv.Bucket()
	return &limited{KeyValue: kv, overhead: len("$JS.API.DIRECT.GET.KV_" + b + ".$KV." + b + ".")}
}

// writeDirect makes l write keys itself when the client would publish them
// to "$KV.<bucket>.<key>": the default API prefix, and a bucket that is not
// a mirror.
func (l *limited) writeDirect(js jetstream.JetStream, s jetstream.Stream) *limited {
	o := js.Options()
	if (o.APIPrefix == "" || o.APIPrefix == jetstream.DefaultAPIPrefix) && o.Domain == "" && s.CachedInfo().Config.Mirror == nil {
		l.js, l.nc, l.timeout, l.put = js, js.Conn(), o.DefaultTimeout, "$KV."+l.Bucket()+"."
	}
	return l
}

func (l *limited) check(key string) error {
	if n := l.overhead + len(key); n > bus.MaxWireSubjectLen {
		return fmt.Errorf("kvstore: key in bucket %s: %w", l.Bucket(), &topic.LengthError{Grammar: "kv", Len: n, Max: bus.MaxWireSubjectLen})
	}
	return nil
}

// validKey is the client's rule for keys: tokens of - / _ = and ASCII
// letters and digits, separated by single dots.
func validKey(key string) bool {
	if key == "" || key[0] == '.' || key[len(key)-1] == '.' {
		return false
	}
	for i := 0; i < len(key); i++ {
		switch c := key[i]; {
		case c == '.':
			if key[i-1] == '.' {
				return false
			}
		case c == '-' || c == '/' || c == '_' || c == '=',
			'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		default:
			return false
		}
	}
	return true
}

// publish writes key, expecting its last revision to be rev unless rev is
// negative.
func (l *limited) publish(ctx context.Context, key string, value []byte, rev int64) (uint64, error) {
	if !validKey(key) {
		return 0, jetstream.ErrInvalidKey
	}
	m := &nats.Msg{Subject: l.put + key, Data: value}
	if rev >= 0 {
		m.Header = nats.Header{jetstream.ExpectedLastSubjSeqHeader: {strconv.FormatInt(rev, 10)}}
	}
	if _, ok := ctx.Deadline(); !ok && l.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.timeout)
		defer cancel()
	}
	resp, err := l.nc.RequestMsgWithContext(ctx, m)
	if errors.Is(err, nats.ErrNoResponders) {
		// No stream took it (a leader election): the client waits and
		// tries again.
		m = &nats.Msg{Subject: m.Subject, Header: m.Header, Data: value}
		ack, err := l.js.PublishMsg(ctx, m)
		if err != nil {
			return 0, err
		}
		return ack.Sequence, nil
	}
	if err != nil {
		return 0, err
	}
	return readPubAck(resp.Data)
}

// readPubAck reads the sequence from a stream's answer to a publish,
// {"stream":"KV_b","seq":12}, without decoding it into a struct as the
// client does (2.5 % of a KV run's CPU). Any other answer, an error among
// them, is decoded as the client decodes it, into the client's errors.
func readPubAck(data []byte) (uint64, error) {
	const streamField, seqField = `{"stream":"`, `"seq":`
	if bytes.HasPrefix(data, []byte(streamField)) && !bytes.Contains(data, []byte(`"error"`)) {
		if i := bytes.Index(data, []byte(seqField)); i > len(streamField) {
			var seq uint64
			n := 0
			for _, c := range data[i+len(seqField):] {
				if c < '0' || c > '9' || n == 19 {
					break
				}
				seq, n = seq*10+uint64(c-'0'), n+1
			}
			if end := i + len(seqField) + n; n > 0 && end < len(data) && (data[end] == ',' || data[end] == '}') {
				return seq, nil
			}
		}
	}
	var ack struct {
		Error  *jetstream.APIError `json:"error"`
		Stream string              `json:"stream"`
		Seq    uint64              `json:"seq"`
	}
	if err := json.Unmarshal(data, &ack); err != nil {
		return 0, jetstream.ErrInvalidJSAck
	}
	if ack.Error != nil {
		return 0, fmt.Errorf("nats: %w", ack.Error)
	}
	if ack.Stream == "" {
		return 0, jetstream.ErrInvalidJSAck
	}
	return ack.Seq, nil
}

// conflict reports a write refused for its expected revision.
func conflict(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

func (l *limited) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	if err := l.check(key); err != nil {
		return nil, err
	}
	e, err := l.KeyValue.Get(ctx, key)
	return e, l.fail(err)
}

func (l *limited) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	if err := l.check(key); err != nil {
		return 0, err
	}
	var rev uint64
	var err error
	if l.js != nil {
		rev, err = l.publish(ctx, key, value, -1)
	} else {
		rev, err = l.KeyValue.Put(ctx, key, value)
	}
	return rev, l.fail(err)
}

func (l *limited) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	if err := l.check(key); err != nil {
		return 0, err
	}
	if l.js != nil && len(opts) == 0 {
		rev, err := l.publish(ctx, key, value, 0)
		if err == nil || !conflict(err) {
			return rev, l.fail(err)
		}
	}
	rev, err := l.KeyValue.Create(ctx, key, value, opts...)
	return rev, l.fail(err)
}

func (l *limited) Update(ctx context.Context, key string, value []byte, revision uint64) (uint64, error) {
	if err := l.check(key); err != nil {
		return 0, err
	}
	if l.js != nil && revision <= math.MaxInt64 {
		rev, err := l.publish(ctx, key, value, int64(revision))
		if err == nil || !conflict(err) {
			return rev, l.fail(err)
		}
	}
	rev, err := l.KeyValue.Update(ctx, key, value, revision)
	return rev, l.fail(err)
}

func (l *limited) Delete(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	if err := l.check(key); err != nil {
		return err
	}
	return l.fail(l.KeyValue.Delete(ctx, key, opts...))
}

func (l *limited) ListKeysFiltered(ctx context.Context, filters ...string) (jetstream.KeyLister, error) {
	for _, f := range filters {
		if err := l.check(f); err != nil {
			return nil, err
		}
	}
	return l.KeyValue.ListKeysFiltered(ctx, filters...)
}
