package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/saap-go/agent/internal/jsfault"
)

// DefaultBucket is the JetStream key-value bucket NewKVStore uses unless
// told otherwise.
const DefaultBucket = "saap_gateway"

// KVConfig configures NewKVStore. The zero value is usable.
type KVConfig struct {
	// Bucket is the key-value bucket's name. Default DefaultBucket.
	Bucket string
	// Replicas is the bucket's replica count when the store creates it.
	// Default 1.
	Replicas int
	// Storage is the bucket's storage when the store creates it. Default
	// file storage.
	Storage jetstream.StorageType
}

// KVStore keeps thread membership and HITL questions in a JetStream
// key-value bucket, so they survive a gateway restart and every replica of
// a gateway sees the same state. It implements Threads and Questions.
//
// Keys (every variable part escaped into one key token):
//
//	t.<thread>               members of thread (JSON list)
//	q.<event id>             a question (JSON)
//	e.<thread>.<class>.<run> marker: the run has ended
//	l.<thread>               event id of the thread's latest input or chat question
//	h.probe                  written by the health check, to learn whether writes succeed
//
// Nothing expires by itself: memberships must outlive any restart.
type KVStore struct {
	kv jetstream.KeyValue
}

// NewKVStore opens the bucket of cfg on js, creating it when it does not
// exist yet. Use the JetStream of the NATS server the agents use.
func NewKVStore(ctx context.Context, js jetstream.JetStream, cfg KVConfig) (*KVStore, error) {
	if js == nil {
		return nil, errors.New("gateway: NewKVStore needs a JetStream context")
	}
	if cfg.Bucket == "" {
		cfg.Bucket = DefaultBucket
	}
	kv, err := jsfault.KeyValue(ctx, js, jetstream.KeyValueConfig{
		Bucket:      cfg.Bucket,
		Description: "saap-go gateway: thread membership and open HITL questions",
		History:     1,
		Replicas:    cfg.Replicas,
		Storage:     cfg.Storage,
	})
	if err != nil {
		return nil, fmt.Errorf("gateway: key-value bucket %s: %w", cfg.Bucket, err)
	}
	return &KVStore{kv: kv}, nil
}

// probe writes the health check's key: an error says the bucket cannot
// take writes (such as the server's storage being full).
func (s *KVStore) probe(ctx context.Context) error {
	_, err := s.kv.Put(ctx, "h.probe", []byte("ok"))
	return err
}

func threadKey(thread string) string    { return "t." + escapeKey(thread) }
func questionKey(eventID string) string { return "q." + escapeKey(eventID) }
func lastKey(thread string) string      { return "l." + escapeKey(thread) }
func endedKey(thread, class, run string) string {
	return "e." + escapeKey(thread) + "." + escapeKey(class) + "." + escapeKey(run)
}

// Create implements Threads: the key's atomic creation decides which of
// several racing replicas creates the thread.
func (s *KVStore) Create(ctx context.Context, thread string, members ...string) (bool, error) {
	data, err := json.Marshal(slices.Clone(members))
	if err != nil {
		return false, err
	}
	if members == nil {
		data = []byte("[]")
	}
	_, err = s.kv.Create(ctx, threadKey(thread), data)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("gateway: create thread %s: %w", thread, err)
	}
	return true, nil
}

// IsMember implements Threads.
func (s *KVStore) IsMember(ctx context.Context, thread, user string) (bool, error) {
	members, _, err := s.members(ctx, thread)
	if err != nil {
		return false, err
	}
	return slices.Contains(members, user), nil
}

func (s *KVStore) members(ctx context.Context, thread string) ([]string, uint64, error) {
	e, err := s.kv.Get(ctx, threadKey(thread))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("gateway: read thread %s: %w", thread, err)
	}
	var members []string
	if err := json.Unmarshal(e.Value(), &members); err != nil {
		return nil, 0, fmt.Errorf("gateway: thread %s: stored members: %w", thread, err)
	}
	return members, e.Revision(), nil
}

// AddMember implements Threads, with a compare-and-set so concurrent
// additions are not lost.
func (s *KVStore) AddMember(ctx context.Context, thread, user string) error {
	for {
		members, rev, err := s.members(ctx, thread)
		if err != nil {
			return err
		}
		if slices.Contains(members, user) {
			return nil
		}
		data, _ := json.Marshal(append(members, user))
		if rev == 0 {
			_, err = s.kv.Create(ctx, threadKey(thread), data)
			if errors.Is(err, jetstream.ErrKeyExists) {
				continue
			}
		} else {
			_, err = s.kv.Update(ctx, threadKey(thread), data, rev)
			if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
				continue
			}
		}
		if err != nil {
			return fmt.Errorf("gateway: add %s to thread %s: %w", user, thread, err)
		}
		return nil
	}
}

// Ask implements Questions.
func (s *KVStore) Ask(ctx context.Context, q Question) error {
	q.State = QuestionOpen
	data, err := json.Marshal(q)
	if err != nil {
		return fmt.Errorf("gateway: encode question %s: %w", q.EventID, err)
	}
	_, err = s.kv.Create(ctx, questionKey(q.EventID), data)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("gateway: record question %s: %w", q.EventID, err)
	}
	if chatAnswerable(q.HITLType) {
		if _, err := s.kv.Put(ctx, lastKey(q.Thread), []byte(q.EventID)); err != nil {
			return fmt.Errorf("gateway: record question %s of thread %s: %w", q.EventID, q.Thread, err)
		}
	}
	return nil
}

// LastChatQuestion implements ThreadQuestions.
func (s *KVStore) LastChatQuestion(ctx context.Context, thread string) (Question, bool, error) {
	e, err := s.kv.Get(ctx, lastKey(thread))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Question{}, false, nil
	}
	if err != nil {
		return Question{}, false, fmt.Errorf("gateway: read thread %s: %w", thread, err)
	}
	return s.Question(ctx, string(e.Value()))
}

// Question implements Questions.
func (s *KVStore) Question(ctx context.Context, eventID string) (Question, bool, error) {
	q, _, err := s.question(ctx, eventID)
	if errors.Is(err, ErrQuestionUnknown) {
		return Question{}, false, nil
	}
	return q, err == nil, err
}

func (s *KVStore) question(ctx context.Context, eventID string) (Question, uint64, error) {
	e, err := s.kv.Get(ctx, questionKey(eventID))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Question{}, 0, ErrQuestionUnknown
	}
	if err != nil {
		return Question{}, 0, fmt.Errorf("gateway: read question %s: %w", eventID, err)
	}
	var q Question
	if err := json.Unmarshal(e.Value(), &q); err != nil {
		return Question{}, 0, fmt.Errorf("gateway: question %s: stored value: %w", eventID, err)
	}
	return q, e.Revision(), nil
}

// Settle implements Questions with a compare-and-set on the question's
// revision.
func (s *KVStore) Settle(ctx context.Context, eventID string, from, to QuestionState) (Question, error) {
	for {
		q, rev, err := s.question(ctx, eventID)
		if err != nil {
			return Question{}, err
		}
		if q.State != from {
			return q, &StateError{EventID: eventID, State: q.State}
		}
		q.State = to
		data, err := json.Marshal(q)
		if err != nil {
			return Question{}, fmt.Errorf("gateway: encode question %s: %w", eventID, err)
		}
		_, err = s.kv.Update(ctx, questionKey(eventID), data, rev)
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			continue
		}
		if err != nil {
			return Question{}, fmt.Errorf("gateway: settle question %s: %w", eventID, err)
		}
		return q, nil
	}
}

// EndRun implements Questions.
func (s *KVStore) EndRun(ctx context.Context, thread, class, run string) error {
	if _, err := s.kv.Put(ctx, endedKey(thread, class, run), []byte("1")); err != nil {
		return fmt.Errorf("gateway: mark run %s ended: %w", run, err)
	}
	return nil
}

// RunEnded implements Questions.
func (s *KVStore) RunEnded(ctx context.Context, thread, class, run string) (bool, error) {
	_, err := s.kv.Get(ctx, endedKey(thread, class, run))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("gateway: read run %s: %w", run, err)
	}
	return true, nil
}

// escapeKey turns s into one valid key token: ASCII letters, digits, '-'
// and '_' stay; every other byte becomes "=XX". Dots and wildcards in ids
// can then neither split a key nor reach another key's namespace.
func escapeKey(s string) string {
	if s == "" {
		return "="
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "=%02X", c)
	}
	return b.String()
}
