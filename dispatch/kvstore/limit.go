package kvstore

import (
	"context"
	"errors"
	"fmt"
	"math"

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
	put      string // "$KV.<bucket>."
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
		l.js, l.put = js, "$KV."+l.Bucket()+"."
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
	var ack *jetstream.PubAck
	var err error
	if rev >= 0 {
		m.Header = nats.Header{}
		ack, err = l.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(uint64(rev)))
	} else {
		ack, err = l.js.PublishMsg(ctx, m)
	}
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
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
	return l.KeyValue.Get(ctx, key)
}

func (l *limited) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	if err := l.check(key); err != nil {
		return 0, err
	}
	if l.js != nil {
		return l.publish(ctx, key, value, -1)
	}
	return l.KeyValue.Put(ctx, key, value)
}

func (l *limited) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	if err := l.check(key); err != nil {
		return 0, err
	}
	if l.js != nil && len(opts) == 0 {
		rev, err := l.publish(ctx, key, value, 0)
		if err == nil || !conflict(err) {
			return rev, err
		}
	}
	return l.KeyValue.Create(ctx, key, value, opts...)
}

func (l *limited) Update(ctx context.Context, key string, value []byte, revision uint64) (uint64, error) {
	if err := l.check(key); err != nil {
		return 0, err
	}
	if l.js != nil && revision <= math.MaxInt64 {
		rev, err := l.publish(ctx, key, value, int64(revision))
		if err == nil || !conflict(err) {
			return rev, err
		}
	}
	return l.KeyValue.Update(ctx, key, value, revision)
}

func (l *limited) Delete(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	if err := l.check(key); err != nil {
		return err
	}
	return l.KeyValue.Delete(ctx, key, opts...)
}

func (l *limited) ListKeysFiltered(ctx context.Context, filters ...string) (jetstream.KeyLister, error) {
	for _, f := range filters {
		if err := l.check(f); err != nil {
			return nil, err
		}
	}
	return l.KeyValue.ListKeysFiltered(ctx, filters...)
}
