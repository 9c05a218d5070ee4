package kvstore

import (
	"context"
	"fmt"

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
type limited struct {
	jetstream.KeyValue
	overhead int // bytes of the longest subject around a key: a direct get's
}

func limit(kv jetstream.KeyValue) jetstream.KeyValue {
	b := kv.Bucket()
	return &limited{KeyValue: kv, overhead: len("$JS.API.DIRECT.GET.KV_" + b + ".$KV." + b + ".")}
}

func (l *limited) check(key string) error {
	if n := l.overhead + len(key); n > bus.MaxWireSubjectLen {
		return fmt.Errorf("kvstore: key in bucket %s: %w", l.Bucket(), &topic.LengthError{Grammar: "kv", Len: n, Max: bus.MaxWireSubjectLen})
	}
	return nil
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
	return l.KeyValue.Put(ctx, key, value)
}

func (l *limited) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	if err := l.check(key); err != nil {
		return 0, err
	}
	return l.KeyValue.Create(ctx, key, value, opts...)
}

func (l *limited) Update(ctx context.Context, key string, value []byte, revision uint64) (uint64, error) {
	if err := l.check(key); err != nil {
		return 0, err
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
