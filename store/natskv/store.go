package natskv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/saap-go/agent/store"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/saap-go/agent/internal/jsfault"
)

// Defaults of Config.
const (
	DefaultBucket = "saap_state"
	// DefaultTTL is the lifetime of run state and markers, as the
	// reference's 30-day Redis expiries.
	DefaultTTL = 30 * 24 * time.Hour
	// ThreadBucketSuffix is appended to Bucket to name the thread bucket.
	ThreadBucketSuffix = "_threads"
)

// Config says where and how a Store keeps its state. The zero value is
// valid: buckets saap_state and saap_state_threads on file storage, run
// state kept 30 days, thread context kept until deleted.
type Config struct {
	// Bucket holds claims, counters, markers and run contexts; default
	// DefaultBucket. Agent classes may share a bucket: keys are namespaced
	// by class.
	Bucket string
	// ThreadBucket holds thread contexts; default Bucket+ThreadBucketSuffix.
	// It is a separate bucket because thread context has no TTL.
	ThreadBucket string
	// TTL is the MaxAge of Bucket: a key expires TTL after its last write.
	// 0 means DefaultTTL; a negative value means no expiry.
	TTL time.Duration
	// ThreadTTL is the MaxAge of ThreadBucket; 0 means no expiry.
	ThreadTTL time.Duration
	// Storage is where the buckets keep their data; the zero value is file
	// storage, which survives a server restart.
	Storage jetstream.StorageType
	// Replicas is the buckets' replication factor in a cluster; 0 means 1.
	Replicas int
}

func (c Config) withDefaults() Config {
	if c.Bucket == "" {
		c.Bucket = DefaultBucket
	}
	if c.ThreadBucket == "" {
		c.ThreadBucket = c.Bucket + ThreadBucketSuffix
	}
	switch {
	case c.TTL == 0:
		c.TTL = DefaultTTL
	case c.TTL < 0:
		c.TTL = 0
	}
	if c.ThreadTTL < 0 {
		c.ThreadTTL = 0
	}
	if c.Replicas <= 0 {
		c.Replicas = 1
	}
	return c
}

// Store is a store.Store on JetStream key-value buckets. It is safe for
// concurrent use by any number of goroutines and replicas: claims are KV
// creates, counters and Incr are compare-and-set loops on the key's
// revision, and nothing is cached in the process.
type Store struct {
	state   jetstream.KeyValue
	threads jetstream.KeyValue
	// stateStream is the stream behind the state bucket; DeleteRun purges a
	// subject of it.
	stateStream jetstream.Stream
	// nc is the connection of the JetStream context: a marker watch is
	// live while it has not reconnected.
	nc *nats.Conn

	// revs remembers the revision this process last wrote to a claim or
	// counter key, so the next compare-and-set can skip reading it first.
	// A stale hint only costs the read it tried to save: every write still
	// checks the revision on the server.
	// js and buckets recreate a bucket deleted under the store; lost
	// reports it (see Lost).
	js      jetstream.JetStream
	buckets []jetstream.KeyValueConfig
	lostMu  sync.Mutex
	checked time.Time // of the last lostBucket check
	lost    chan error

	revs  capped[string, revHint]
	idx   capped[string, struct{}]    // thread index entries this process wrote (PutStatus)
	seeds capped[store.RunKey, *seed] // run seeds written or read here (see seed)
}

// revHint is a key's revision as this process wrote it, and for a counter
// the count it wrote.
type revHint struct {
	rev uint64
	n   int64
}

var _ store.Store = (*Store)(nil)

// New opens the buckets named by cfg, creating them if absent, and returns
// a Store on them. Existing buckets are used as they are, even if their
// settings differ from cfg. ctx bounds the set-up.
func New(ctx context.Context, js jetstream.JetStream, cfg Config) (*Store, error) {
	if js == nil {
		return nil, errors.New("kvstore: New needs a JetStream context")
	}
	cfg = cfg.withDefaults()
	buckets := []jetstream.KeyValueConfig{{
		Bucket:      cfg.Bucket,
		Description: "saap-go agent run state: claims, counters, markers, run context",
		History:     1,
		TTL:         cfg.TTL,
		Storage:     cfg.Storage,
		Replicas:    cfg.Replicas,
	}, {
		Bucket:      cfg.ThreadBucket,
		Description: "saap-go agent thread context",
		History:     1,
		TTL:         cfg.ThreadTTL,
		Storage:     cfg.Storage,
		Replicas:    cfg.Replicas,
	}}
	state, err := openBucket(ctx, js, buckets[0])
	if err != nil {
		return nil, err
	}
	threads, err := openBucket(ctx, js, buckets[1])
	if err != nil {
		return nil, err
	}
	stream, err := js.Stream(ctx, "KV_"+cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("kvstore: stream of bucket %s: %w", cfg.Bucket, err)
	}
	s := &Store{state: limit(state).writeDirect(js, stream), threads: limit(threads), stateStream: stream, nc: js.Conn(),
		js: js, buckets: buckets, lost: make(chan error, len(buckets))}
	s.state.(*limited).failed = s.lostBucket
	s.threads.(*limited).failed = s.lostBucket
	return s, nil
}

// LostBucketError reports a bucket of the store that was deleted on the
// server and recreated empty: what it held is gone.
type LostBucketError struct {
	Bucket string
	// State is true for the run-state bucket (claims, counters, markers,
	// run contexts), false for the thread bucket.
	State bool
}

func (e *LostBucketError) Error() string {
	return fmt.Sprintf("kvstore: bucket %s was deleted on the server and is recreated empty", e.Bucket)
}

// Lost reports, with a *LostBucketError, each time the store found one of
// its buckets deleted (on an operation that failed for it) and recreated
// it. One report per bucket waits to be taken; later ones are dropped
// meanwhile.
func (s *Store) Lost() <-chan error { return s.lost }

// lostBucket checks, after an operation failed as on a missing stream,
// whether a bucket of s was deleted, and if so recreates it: writes fail
// until then, and the operation's retry (a redelivery) then works.
func (s *Store) lostBucket(err error) {
	if !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, jetstream.ErrNoStreamResponse) &&
		!errors.Is(err, jetstream.ErrStreamNotFound) && !errors.Is(err, jetstream.ErrBucketNotFound) {
		return
	}
	s.lostMu.Lock()
	defer s.lostMu.Unlock()
	if time.Since(s.checked) < time.Second {
		// A leader election fails many operations at once: one check
		// a second is enough, and the operations' retries come later.
		return
	}
	s.checked = time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, cfg := range s.buckets {
		if _, err := s.js.Stream(ctx, "KV_"+cfg.Bucket); !errors.Is(err, jetstream.ErrStreamNotFound) {
			continue // there, or unknown: a leader election answers no-responders too
		}
		if _, err := openBucket(ctx, s.js, cfg); err != nil {
			continue // the next failure tries again
		}
		// What this process remembers of the bucket is gone with it.
		s.revs.clear()
		s.idx.clear()
		s.seeds.clear()
		select {
		case s.lost <- &LostBucketError{Bucket: cfg.Bucket, State: i == 0}:
		default:
		}
	}
}

func openBucket(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := jsfault.KeyValue(ctx, js, cfg)
	if err != nil {
		return nil, fmt.Errorf("kvstore: bucket %s: %w", cfg.Bucket, err)
	}
	return kv, nil
}

// maxCAS bounds a compare-and-set loop. Every round some writer wins, so
// only a livelock bug or thousands of writers on one key reach it.
const maxCAS = 10000

var errContention = errors.New("kvstore: too much contention on one key")

// claim values.
type claimValue struct {
	Done    bool          `json:"done"`
	Outcome store.Outcome `json:"outcome"`
}

var pendingClaim = []byte(`{"done":false}`)

// counterValue is a step's execution counter. For a limited step it also
// lists the claim keys that took a slot: a claim's slot is reserved in the
// counter first and the claim key created after, so a crash between the two
// leaves the key listed, and the next Claim of that key finishes the job
// (reporting Pending) instead of taking a second slot.
type counterValue struct {
	N    int64    `json:"n"`
	Keys []string `json:"keys,omitempty"`
}

// Claim implements store.Store.
func (s *Store) Claim(ctx context.Context, run store.RunKey, req store.ClaimRequest) (store.ClaimResult, error) {
	if err := checkRun(run); err != nil {
		return store.ClaimResult{}, err
	}
	if req.Step == "" || req.Key == "" {
		return store.ClaimResult{}, fmt.Errorf("kvstore: claim needs a step and a key (step %q, key %q)", req.Step, req.Key)
	}
	ck := claimKey(run.Class, run.Run, req.Step, req.Key)
	nk := counterKey(run.Class, run.Run, req.Step)
	for range maxCAS {
		if req.Max <= 0 {
			// Unlimited: the claim key decides the winner and the counter
			// follows, so a new claim costs a create and one counter update.
			// A crash in between under-counts by one, which no limit
			// depends on.
			rev, err := s.state.Create(ctx, ck, pendingClaim)
			if err == nil {
				s.revs.put(ck, revHint{rev: rev})
				n, err := s.bumpCounter(ctx, nk)
				if err != nil {
					return store.ClaimResult{}, err
				}
				return store.ClaimResult{Status: store.Claimed, Count: n}, nil
			}
			if !errors.Is(err, jetstream.ErrKeyExists) {
				return store.ClaimResult{}, fmt.Errorf("kvstore: creating claim: %w", err)
			}
			if res, ok, err := s.existingClaim(ctx, ck, nk); err != nil || ok {
				return res, err
			}
			continue // deleted in between: try again
		}
		if res, ok, err := s.existingClaim(ctx, ck, nk); err != nil || ok {
			return res, err
		}
		cnt, rev, err := s.counter(ctx, nk)
		if err != nil {
			return store.ClaimResult{}, err
		}
		if slices.Contains(cnt.Keys, req.Key) {
			// The slot is reserved: the claim is being created, or its
			// creator crashed. Either way it is a claimed execution.
			if _, err := s.state.Create(ctx, ck, pendingClaim); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
				return store.ClaimResult{}, fmt.Errorf("kvstore: creating claim: %w", err)
			}
			continue // report what the claim key holds now
		}
		if cnt.N >= req.Max {
			return store.ClaimResult{Status: store.Limited, Count: cnt.N}, nil
		}
		next := counterValue{N: cnt.N + 1, Keys: append(cnt.Keys, req.Key)}
		ok, err := s.casCounter(ctx, nk, next, rev)
		if err != nil {
			return store.ClaimResult{}, err
		}
		if !ok {
			continue
		}
		if _, err := s.state.Create(ctx, ck, pendingClaim); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
			return store.ClaimResult{}, fmt.Errorf("kvstore: creating claim: %w", err)
		}
		return store.ClaimResult{Status: store.Claimed, Count: next.N}, nil
	}
	return store.ClaimResult{}, errContention
}

// existingClaim reports the claim at ck if it exists.
func (s *Store) existingClaim(ctx context.Context, ck, nk string) (store.ClaimResult, bool, error) {
	e, err := s.state.Get(ctx, ck)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return store.ClaimResult{}, false, nil
	}
	if err != nil {
		return store.ClaimResult{}, false, fmt.Errorf("kvstore: reading claim: %w", err)
	}
	var v claimValue
	if err := json.Unmarshal(e.Value(), &v); err != nil {
		return store.ClaimResult{}, false, fmt.Errorf("kvstore: claim %s holds malformed data: %w", ck, err)
	}
	cnt, _, err := s.counter(ctx, nk)
	if err != nil {
		return store.ClaimResult{}, false, err
	}
	if v.Done {
		return store.ClaimResult{Status: store.Done, Outcome: v.Outcome, Count: cnt.N}, true, nil
	}
	return store.ClaimResult{Status: store.Pending, Count: cnt.N}, true, nil
}

// counter reads the counter at nk and its revision (0 if absent).
func (s *Store) counter(ctx context.Context, nk string) (counterValue, uint64, error) {
	e, err := s.state.Get(ctx, nk)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return counterValue{}, 0, nil
	}
	if err != nil {
		return counterValue{}, 0, fmt.Errorf("kvstore: reading counter: %w", err)
	}
	var v counterValue
	if err := json.Unmarshal(e.Value(), &v); err != nil {
		return counterValue{}, 0, fmt.Errorf("kvstore: counter %s holds malformed data: %w", nk, err)
	}
	return v, e.Revision(), nil
}

// casCounter writes v at nk if its revision is still rev (0: absent). It
// reports false when another writer came first.
func (s *Store) casCounter(ctx context.Context, nk string, v counterValue, rev uint64) (bool, error) {
	ok, _, err := s.writeCounter(ctx, nk, v, rev)
	return ok, err
}

// writeCounter is casCounter that also returns the new revision.
func (s *Store) writeCounter(ctx context.Context, nk string, v counterValue, rev uint64) (bool, uint64, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return false, 0, err
	}
	var nrev uint64
	if rev == 0 {
		nrev, err = s.state.Create(ctx, nk, data)
	} else {
		nrev, err = s.state.Update(ctx, nk, data, rev)
	}
	switch {
	case err == nil:
		return true, nrev, nil
	case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyRevisionMismatch):
		return false, 0, nil
	}
	return false, 0, fmt.Errorf("kvstore: writing counter: %w", err)
}

// bumpCounter adds one to the counter at nk and returns the new count. Its
// first try needs no read: a create when this process knows of no counter
// (the step's first execution in the run), else an update at the revision
// it wrote last.
func (s *Store) bumpCounter(ctx context.Context, nk string) (int64, error) {
	if n, ok, err := s.bumpBlind(ctx, nk); err != nil || ok {
		return n, err
	}
	for range maxCAS {
		cnt, rev, err := s.counter(ctx, nk)
		if err != nil {
			return 0, err
		}
		cnt.N++
		ok, err := s.casCounter(ctx, nk, cnt, rev)
		if err != nil {
			return 0, err
		}
		if ok {
			return cnt.N, nil
		}
	}
	return 0, errContention
}

// bumpBlind tries bumpCounter's write without reading the counter; ok is
// false when another writer came first or the hint went stale. Any other
// error is returned: the write may have landed, so retrying could count
// twice.
func (s *Store) bumpBlind(ctx context.Context, nk string) (int64, bool, error) {
	// Only unlimited counters come here, so the value is just the count
	// (no reserved keys to keep).
	h, _ := s.revs.get(nk) // zero: no counter known, create it
	ok, rev, err := s.writeCounter(ctx, nk, counterValue{N: h.n + 1}, h.rev)
	if err != nil || !ok {
		s.revs.drop(nk)
		return 0, false, err
	}
	s.revs.put(nk, revHint{rev: rev, n: h.n + 1})
	return h.n + 1, true, nil
}

// Complete implements store.Store.
func (s *Store) Complete(ctx context.Context, run store.RunKey, step, key string, o store.Outcome) error {
	if err := checkRun(run); err != nil {
		return err
	}
	if step == "" || key == "" {
		return fmt.Errorf("kvstore: complete needs a step and a key (step %q, key %q)", step, key)
	}
	ck := claimKey(run.Class, run.Run, step, key)
	data, err := json.Marshal(claimValue{Done: true, Outcome: o})
	if err != nil {
		return err
	}
	// The claim as this process created it: update it without reading. A
	// mismatch (completed, deleted or re-created since) falls back to the
	// read below.
	if h, ok := s.revs.get(ck); ok {
		s.revs.drop(ck)
		if _, err := s.state.Update(ctx, ck, data, h.rev); err == nil {
			return nil
		}
	}
	for range maxCAS {
		e, err := s.state.Get(ctx, ck)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return fmt.Errorf("kvstore: claim %s/%s of run %s/%s: %w", step, key, run.Class, run.Run, store.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("kvstore: reading claim: %w", err)
		}
		// Updating at the read revision keeps a concurrent DeleteRun from
		// being undone by this write.
		_, err = s.state.Update(ctx, ck, data, e.Revision())
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return fmt.Errorf("kvstore: completing claim: %w", err)
		}
	}
	return errContention
}

// Record implements store.Store: one create of the claim key, holding
// the outcome. It writes no counter: the claim keys of a step without a
// limit are its count (see Count).
func (s *Store) Record(ctx context.Context, run store.RunKey, step, key string, o store.Outcome) (store.ClaimResult, error) {
	if err := checkRun(run); err != nil {
		return store.ClaimResult{}, err
	}
	if step == "" || key == "" {
		return store.ClaimResult{}, fmt.Errorf("kvstore: record needs a step and a key (step %q, key %q)", step, key)
	}
	ck := claimKey(run.Class, run.Run, step, key)
	data, err := json.Marshal(claimValue{Done: true, Outcome: o})
	if err != nil {
		return store.ClaimResult{}, err
	}
	for range maxCAS {
		_, err := s.state.Create(ctx, ck, data)
		if err == nil {
			return store.ClaimResult{Status: store.Claimed}, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return store.ClaimResult{}, fmt.Errorf("kvstore: recording claim: %w", err)
		}
		e, err := s.state.Get(ctx, ck)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // deleted in between: try again
		}
		if err != nil {
			return store.ClaimResult{}, fmt.Errorf("kvstore: reading claim: %w", err)
		}
		var v claimValue
		if err := json.Unmarshal(e.Value(), &v); err != nil {
			return store.ClaimResult{}, fmt.Errorf("kvstore: claim %s holds malformed data: %w", ck, err)
		}
		if v.Done {
			return store.ClaimResult{Status: store.Done, Outcome: v.Outcome}, nil
		}
		// Pending: an execution Claim counted; complete it at the read
		// revision, so that a concurrent DeleteRun is not undone.
		if _, err := s.state.Update(ctx, ck, data, e.Revision()); err == nil {
			return store.ClaimResult{Status: store.Claimed}, nil
		} else if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return store.ClaimResult{}, fmt.Errorf("kvstore: recording claim: %w", err)
		}
	}
	return store.ClaimResult{}, errContention
}

// Count implements store.Store. A limited step's counter is the
// count. Otherwise the step's claim keys are: Record creates a claim and
// no counter, and Claim creates the claim before it bumps the counter, so
// for a step without a limit there are never fewer keys than executions
// counted. That costs a listing of the step's claim keys; the engine asks
// only for the counts of limited steps.
func (s *Store) Count(ctx context.Context, run store.RunKey, step string) (int64, error) {
	if err := checkRun(run); err != nil {
		return 0, err
	}
	if step == "" {
		return 0, errors.New("kvstore: count needs a step")
	}
	cnt, _, err := s.counter(ctx, counterKey(run.Class, run.Run, step))
	if err != nil || len(cnt.Keys) > 0 {
		return cnt.N, err
	}
	names, err := listKeys(ctx, s.state, runPrefix(run.Class, run.Run)+"c."+escape(step)+".*")
	if err != nil {
		return 0, fmt.Errorf("kvstore: counting claims of %s: %w", step, err)
	}
	return max(cnt.N, int64(len(names))), nil
}

// SetMarker implements store.Store.
func (s *Store) SetMarker(ctx context.Context, run store.RunKey, name, value string) (string, bool, error) {
	if err := checkRun(run); err != nil {
		return "", false, err
	}
	if name == "" {
		return "", false, fmt.Errorf("kvstore: marker of run %s/%s needs a name", run.Class, run.Run)
	}
	mk := markerKey(run.Class, run.Run, name)
	for range maxCAS {
		_, err := s.state.Create(ctx, mk, []byte(value))
		if err == nil {
			return value, true, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return "", false, fmt.Errorf("kvstore: setting marker %s: %w", name, err)
		}
		e, err := s.state.Get(ctx, mk)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // expired in between: try again
		}
		if err != nil {
			return "", false, fmt.Errorf("kvstore: reading marker %s: %w", name, err)
		}
		return string(e.Value()), false, nil
	}
	return "", false, errContention
}

// Marker implements store.Store.
func (s *Store) Marker(ctx context.Context, run store.RunKey, name string) (string, bool, error) {
	if err := checkRun(run); err != nil {
		return "", false, err
	}
	if name == "" {
		return "", false, fmt.Errorf("kvstore: marker of run %s/%s needs a name", run.Class, run.Run)
	}
	e, err := s.state.Get(ctx, markerKey(run.Class, run.Run, name))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("kvstore: reading marker %s: %w", name, err)
	}
	return string(e.Value()), true, nil
}

// bucketKey returns the bucket and the full key of key in scope sc.
func (s *Store) bucketKey(sc store.Scope, key string) (jetstream.KeyValue, string, error) {
	kv, prefix, err := s.scope(sc)
	if err != nil {
		return nil, "", err
	}
	if key == "" {
		return nil, "", fmt.Errorf("kvstore: empty key in %s scope %s/%s", sc.Kind, sc.Class, sc.ID)
	}
	return kv, prefix + escape(key), nil
}

func (s *Store) scope(sc store.Scope) (jetstream.KeyValue, string, error) {
	if sc.Class == "" || sc.ID == "" {
		return nil, "", fmt.Errorf("kvstore: %s scope needs a class and an id (class %q, id %q)", sc.Kind, sc.Class, sc.ID)
	}
	switch sc.Kind {
	case store.RunScope:
		return s.state, runContextPrefix(sc.Class, sc.ID), nil
	case store.ThreadScope:
		return s.threads, threadPrefix(sc.Class, sc.ID), nil
	}
	return nil, "", fmt.Errorf("kvstore: invalid scope kind %d", int(sc.Kind))
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, sc store.Scope, key string) ([]byte, bool, error) {
	kv, k, err := s.bucketKey(sc, key)
	if err != nil {
		return nil, false, err
	}
	if sc.Kind == store.RunScope {
		v, _, ok, err := s.runGet(ctx, store.RunKey{Class: sc.Class, Run: sc.ID}, k, key)
		return v, ok, err
	}
	e, err := kv.Get(ctx, k)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("kvstore: get %q: %w", key, err)
	}
	return slices.Clone(e.Value()), true, nil
}

// Set implements store.Store.
func (s *Store) Set(ctx context.Context, sc store.Scope, key string, value []byte) error {
	kv, k, err := s.bucketKey(sc, key)
	if err != nil {
		return err
	}
	if _, err := kv.Put(ctx, k, value); err != nil {
		return fmt.Errorf("kvstore: set %q: %w", key, err)
	}
	return nil
}

// SetMany implements store.Contexts. A run context's first batch is
// one write, its seed (see seed); other batches' puts go out concurrently,
// so a batch costs about one round trip.
func (s *Store) SetMany(ctx context.Context, sc store.Scope, entries []store.Entry) error {
	kv, prefix, err := s.scope(sc)
	if err != nil {
		return err
	}
	for _, en := range entries {
		if en.Key == "" {
			return fmt.Errorf("kvstore: empty key in %s scope %s/%s", sc.Kind, sc.Class, sc.ID)
		}
		if err := kv.(*limited).check(prefix + escape(en.Key)); err != nil {
			return err
		}
	}
	if sc.Kind == store.RunScope && len(entries) > 1 {
		if done, err := s.writeSeed(ctx, store.RunKey{Class: sc.Class, Run: sc.ID}, entries); err != nil || done {
			return err
		}
	}
	errs := make([]error, len(entries))
	var wg sync.WaitGroup
	for i, en := range entries {
		wg.Go(func() {
			if _, err := kv.Put(ctx, prefix+escape(en.Key), en.Value); err != nil {
				errs[i] = fmt.Errorf("kvstore: set %q: %w", en.Key, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, sc store.Scope, key string) error {
	kv, k, err := s.bucketKey(sc, key)
	if err != nil {
		return err
	}
	if err := kv.Delete(ctx, k); err != nil {
		return fmt.Errorf("kvstore: delete %q: %w", key, err)
	}
	return nil
}

// Keys implements store.Store. It reads only the scope's keys (one
// filtered watch), however large the bucket.
func (s *Store) Keys(ctx context.Context, sc store.Scope) ([]string, error) {
	kv, prefix, err := s.scope(sc)
	if err != nil {
		return nil, err
	}
	var sd *seed
	if sc.Kind == store.RunScope {
		if sd, err = s.readSeed(ctx, store.RunKey{Class: sc.Class, Run: sc.ID}); err != nil {
			return nil, err
		}
	}
	var names []string
	var deleted map[string]uint64
	if sd == nil {
		names, err = listKeys(ctx, kv, prefix+">")
	} else {
		names, deleted, err = listKeysAndDeletes(ctx, kv, prefix+">", prefix)
	}
	if err != nil {
		return nil, fmt.Errorf("kvstore: listing %s scope %s/%s: %w", sc.Kind, sc.Class, sc.ID, err)
	}
	keys := make([]string, 0, len(names))
	for _, n := range names {
		k, err := unescape(strings.TrimPrefix(n, prefix))
		if err != nil {
			return nil, fmt.Errorf("kvstore: key %q: %w", n, err)
		}
		keys = append(keys, k)
	}
	keys = seededKeys(keys, sd, deleted)
	slices.Sort(keys)
	return slices.Compact(keys), nil
}

// listKeysAndDeletes returns the live keys matching filter, and the keys
// whose last write is a delete (unescaped, without prefix) with its
// revision.
func listKeysAndDeletes(ctx context.Context, kv jetstream.KeyValue, filter, prefix string) ([]string, map[string]uint64, error) {
	w, err := kv.WatchFiltered(ctx, []string{filter}, jetstream.MetaOnly())
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = w.Stop() }()
	var live []string
	deleted := make(map[string]uint64)
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return nil, nil, errors.New("kvstore: key listing ended early")
			}
			if e == nil {
				return live, deleted, nil
			}
			if e.Operation() == jetstream.KeyValuePut {
				live = append(live, e.Key())
				continue
			}
			if k, err := unescape(strings.TrimPrefix(e.Key(), prefix)); err == nil {
				deleted[k] = e.Revision()
			}
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

// listKeys returns the live keys matching filter.
func listKeys(ctx context.Context, kv jetstream.KeyValue, filter string) ([]string, error) {
	lister, err := kv.ListKeysFiltered(ctx, filter)
	if err != nil {
		return nil, err
	}
	defer func() { _ = lister.Stop() }()
	var out []string
	for k := range lister.Keys() {
		out = append(out, k)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Incr implements store.Store.
func (s *Store) Incr(ctx context.Context, sc store.Scope, key string, delta int64) (int64, error) {
	kv, k, err := s.bucketKey(sc, key)
	if err != nil {
		return 0, err
	}
	for range maxCAS {
		var n int64
		var rev uint64
		var cur []byte
		found := false
		if sc.Kind == store.RunScope {
			if cur, rev, found, err = s.runGet(ctx, store.RunKey{Class: sc.Class, Run: sc.ID}, k, key); err != nil {
				return 0, err
			}
		} else {
			e, err := kv.Get(ctx, k)
			switch {
			case errors.Is(err, jetstream.ErrKeyNotFound):
			case err != nil:
				return 0, fmt.Errorf("kvstore: incr %q: %w", key, err)
			default:
				cur, rev, found = e.Value(), e.Revision(), true
			}
		}
		if found {
			if n, err = strconv.ParseInt(string(cur), 10, 64); err != nil {
				return 0, fmt.Errorf("kvstore: incr %s %q: %w", sc.Kind, key, store.ErrNotInteger)
			}
		}
		n += delta
		val := strconv.AppendInt(nil, n, 10)
		if rev == 0 {
			_, err = kv.Create(ctx, k, val)
		} else {
			_, err = kv.Update(ctx, k, val, rev)
		}
		switch {
		case err == nil:
			return n, nil
		case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyRevisionMismatch):
			continue
		}
		return 0, fmt.Errorf("kvstore: incr %q: %w", key, err)
	}
	return 0, errContention
}

// DeleteRun implements store.Store: one purge of the run's subject
// removes its claims, counters and run context; markers live elsewhere.
func (s *Store) DeleteRun(ctx context.Context, run store.RunKey) error {
	if err := checkRun(run); err != nil {
		return err
	}
	s.seeds.drop(run)
	subject := "$KV." + s.state.Bucket() + "." + runPrefix(run.Class, run.Run) + ">"
	if err := s.stateStream.Purge(ctx, jetstream.WithPurgeSubject(subject)); err != nil {
		return fmt.Errorf("kvstore: deleting run %s/%s: %w", run.Class, run.Run, err)
	}
	return nil
}

func checkRun(run store.RunKey) error {
	if run.Class == "" || run.Run == "" {
		return fmt.Errorf("kvstore: run key needs a class and a run id (class %q, run %q)", run.Class, run.Run)
	}
	return nil
}
