package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/saap-go/agent/store"

	"github.com/redis/go-redis/v9"
)

// Defaults of Config.
const (
	DefaultPrefix = "saap:"
	// DefaultTTL is the lifetime of run state and markers, as the
	// reference's 30-day expiries.
	DefaultTTL = 30 * 24 * time.Hour
)

// Config says how a Store names and expires its keys. The zero value is
// valid: prefix "saap:", run state and markers kept 30 days after their last
// write, thread context kept until deleted (as the newest reference).
type Config struct {
	// Prefix starts every key; default DefaultPrefix. Stores with different
	// prefixes on one Redis never see each other's state.
	Prefix string
	// TTL is how long a run's state and markers live after their last
	// write; 0 means DefaultTTL, a negative value no expiry.
	TTL time.Duration
	// ThreadTTL is how long a thread context lives after its last write; 0
	// means no expiry.
	ThreadTTL time.Duration
}

func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
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
	return c
}

// Store is a store.Store on Redis (or Valkey). It is safe for concurrent
// use by any number of goroutines and replicas: every read-modify-write is
// one Redis command or one Lua script, and nothing is cached in the process.
type Store struct {
	rdb    redis.UniversalClient
	cfg    Config
	ttl    int64 // seconds; 0: no expiry
	tttl   int64 // thread TTL in seconds; 0: no expiry
	closer func() error
}

var _ store.Store = (*Store)(nil)

// New returns a Store on rdb. The caller keeps ownership of rdb.
func New(rdb redis.UniversalClient, cfg Config) (*Store, error) {
	if rdb == nil {
		return nil, errors.New("redisstore: New needs a Redis client")
	}
	cfg = cfg.withDefaults()
	return &Store{rdb: rdb, cfg: cfg, ttl: seconds(cfg.TTL), tttl: seconds(cfg.ThreadTTL)}, nil
}

// Open connects to the Redis at url (redis://[user:password@]host:port/db,
// the form of REDIS_URL; rediss:// for TLS), checks that it answers, and
// returns a Store on it. Close closes the connection. ctx bounds the check.
func Open(ctx context.Context, url string, cfg Config) (*Store, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redisstore: REDIS_URL: %w", err)
	}
	rdb := redis.NewClient(opt)
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("redisstore: Redis at %s:%s does not answer: %w", opt.Network, opt.Addr, err)
	}
	s, err := New(rdb, cfg)
	if err != nil {
		_ = rdb.Close()
		return nil, err
	}
	s.closer = rdb.Close
	return s, nil
}

// Close closes the connection if Open made it; for a Store made by New it
// does nothing (the caller owns the client).
func (s *Store) Close() error {
	if s.closer == nil {
		return nil
	}
	return s.closer()
}

func seconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	if s := int64((d + time.Second - 1) / time.Second); s > 0 {
		return s
	}
	return 1
}

// Key layout: a run's state is three hashes that share a hash tag (one
// cluster slot, so the Lua scripts may touch them together); DeleteRun
// deletes them by name, with no SCAN. Markers are a fourth hash that
// DeleteRun leaves alone.
//
//	<prefix>{run:<class>:<run>}:claims    field <len(step)>:<step>:<key> → "p" | "d" + outcome JSON
//	<prefix>{run:<class>:<run>}:counts    field <step> → execution count
//	<prefix>{run:<class>:<run>}:ctx       field <key> → run-context value
//	<prefix>{run:<class>:<run>}:markers   field <name> → marker value
//	<prefix>{thread:<class>:<thread>}:ctx field <key> → thread-context value
//
// Class, run and thread ids are escaped (see escape) so that ':', '{' and
// '}' in them can neither merge namespaces nor break the hash tag.
func (s *Store) runKey(run store.RunKey, part string) string {
	return s.cfg.Prefix + "{run:" + escape(run.Class) + ":" + escape(run.Run) + "}:" + part
}

func (s *Store) threadKey(class, thread string) string {
	return s.cfg.Prefix + "{thread:" + escape(class) + ":" + escape(thread) + "}:ctx"
}

// escape replaces '%', ':', '{' and '}' by %XX; everything else, Unicode
// included, is kept (Redis keys are binary-safe).
func escape(s string) string {
	if !strings.ContainsAny(s, "%:{}") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '%', ':', '{', '}':
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func claimField(step, key string) string {
	return strconv.Itoa(len(step)) + ":" + step + ":" + key
}

// claimScript looks the claim up and, if absent and below the limit,
// creates it as pending and takes a slot, atomically.
// KEYS: claims, counts. ARGV: field, step, max, ttl seconds.
// Returns {status, value, count}: 1 existing, 2 limited, 0 claimed.
var claimScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], ARGV[1])
local n = tonumber(redis.call('HGET', KEYS[2], ARGV[2]) or '0')
if v then return {1, v, n} end
local max = tonumber(ARGV[3])
if max > 0 and n >= max then return {2, '', n} end
redis.call('HSET', KEYS[1], ARGV[1], 'p')
n = redis.call('HINCRBY', KEYS[2], ARGV[2], 1)
local ttl = tonumber(ARGV[4])
if ttl > 0 then
  redis.call('EXPIRE', KEYS[1], ttl)
  redis.call('EXPIRE', KEYS[2], ttl)
end
return {0, '', n}
`)

// completeScript overwrites an existing claim only.
// KEYS: claims. ARGV: field, value. Returns 1 if it existed, else 0.
var completeScript = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
`)

// recordScript creates a claim completed, or completes a pending one,
// unless it is completed already; a created claim takes a slot.
// KEYS: claims, counts. ARGV: field, step, value, ttl seconds.
// Returns {status, value}: 0 recorded, 1 completed before (value).
var recordScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v and v ~= 'p' then return {1, v} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
if not v then redis.call('HINCRBY', KEYS[2], ARGV[2], 1) end
local ttl = tonumber(ARGV[4])
if ttl > 0 then
  redis.call('EXPIRE', KEYS[1], ttl)
  redis.call('EXPIRE', KEYS[2], ttl)
end
return {0, ''}
`)

// markerScript sets a marker unless set and returns {created, value}.
// KEYS: markers. ARGV: name, value, ttl seconds, channel, run id.
// A marker set is also published on ARGV[4], with ARGV[5] (the run id), for
// WatchMarker.
var markerScript = redis.NewScript(`
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 1 then
  local ttl = tonumber(ARGV[3])
  if ttl > 0 then redis.call('EXPIRE', KEYS[1], ttl) end
  redis.call('PUBLISH', ARGV[4], ARGV[5])
  return {1, ARGV[2]}
end
return {0, redis.call('HGET', KEYS[1], ARGV[1])}
`)

// Claim implements store.Store.
func (s *Store) Claim(ctx context.Context, run store.RunKey, req store.ClaimRequest) (store.ClaimResult, error) {
	if err := checkRun(run); err != nil {
		return store.ClaimResult{}, err
	}
	if req.Step == "" || req.Key == "" {
		return store.ClaimResult{}, fmt.Errorf("redisstore: claim needs a step and a key (step %q, key %q)", req.Step, req.Key)
	}
	max := req.Max
	if max < 0 {
		max = 0
	}
	res, err := claimScript.Run(ctx, s.rdb,
		[]string{s.runKey(run, "claims"), s.runKey(run, "counts")},
		claimField(req.Step, req.Key), req.Step, max, s.ttl).Slice()
	if err != nil {
		return store.ClaimResult{}, fmt.Errorf("redisstore: claim %s/%s: %w", req.Step, req.Key, err)
	}
	if len(res) != 3 {
		return store.ClaimResult{}, fmt.Errorf("redisstore: claim script returned %d values", len(res))
	}
	status, _ := res[0].(int64)
	value, _ := res[1].(string)
	n, _ := res[2].(int64)
	switch status {
	case 0:
		return store.ClaimResult{Status: store.Claimed, Count: n}, nil
	case 2:
		return store.ClaimResult{Status: store.Limited, Count: n}, nil
	}
	if value == "p" {
		return store.ClaimResult{Status: store.Pending, Count: n}, nil
	}
	var o store.Outcome
	if !strings.HasPrefix(value, "d") || json.Unmarshal([]byte(value[1:]), &o) != nil {
		return store.ClaimResult{}, fmt.Errorf("redisstore: claim %s/%s holds malformed data", req.Step, req.Key)
	}
	return store.ClaimResult{Status: store.Done, Outcome: o, Count: n}, nil
}

// Complete implements store.Store.
func (s *Store) Complete(ctx context.Context, run store.RunKey, step, key string, o store.Outcome) error {
	if err := checkRun(run); err != nil {
		return err
	}
	if step == "" || key == "" {
		return fmt.Errorf("redisstore: complete needs a step and a key (step %q, key %q)", step, key)
	}
	data, err := json.Marshal(o)
	if err != nil {
		return err
	}
	ok, err := completeScript.Run(ctx, s.rdb, []string{s.runKey(run, "claims")},
		claimField(step, key), "d"+string(data)).Int()
	if err != nil {
		return fmt.Errorf("redisstore: complete %s/%s: %w", step, key, err)
	}
	if ok == 0 {
		return fmt.Errorf("redisstore: claim %s/%s of run %s/%s: %w", step, key, run.Class, run.Run, store.ErrNotFound)
	}
	return nil
}

// Record implements store.Store: one script, one round trip.
func (s *Store) Record(ctx context.Context, run store.RunKey, step, key string, o store.Outcome) (store.ClaimResult, error) {
	if err := checkRun(run); err != nil {
		return store.ClaimResult{}, err
	}
	if step == "" || key == "" {
		return store.ClaimResult{}, fmt.Errorf("redisstore: record needs a step and a key (step %q, key %q)", step, key)
	}
	data, err := json.Marshal(o)
	if err != nil {
		return store.ClaimResult{}, err
	}
	res, err := recordScript.Run(ctx, s.rdb,
		[]string{s.runKey(run, "claims"), s.runKey(run, "counts")},
		claimField(step, key), step, "d"+string(data), s.ttl).Slice()
	if err != nil {
		return store.ClaimResult{}, fmt.Errorf("redisstore: record %s/%s: %w", step, key, err)
	}
	if len(res) != 2 {
		return store.ClaimResult{}, fmt.Errorf("redisstore: record script returned %d values", len(res))
	}
	status, _ := res[0].(int64)
	value, _ := res[1].(string)
	if status == 0 {
		return store.ClaimResult{Status: store.Claimed}, nil
	}
	var prev store.Outcome
	if !strings.HasPrefix(value, "d") || json.Unmarshal([]byte(value[1:]), &prev) != nil {
		return store.ClaimResult{}, fmt.Errorf("redisstore: claim %s/%s holds malformed data", step, key)
	}
	return store.ClaimResult{Status: store.Done, Outcome: prev}, nil
}

// Count implements store.Store.
func (s *Store) Count(ctx context.Context, run store.RunKey, step string) (int64, error) {
	if err := checkRun(run); err != nil {
		return 0, err
	}
	if step == "" {
		return 0, errors.New("redisstore: count needs a step")
	}
	n, err := s.rdb.HGet(ctx, s.runKey(run, "counts"), step).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("redisstore: count %s: %w", step, err)
	}
	return n, nil
}

// SetMarker implements store.Store.
func (s *Store) SetMarker(ctx context.Context, run store.RunKey, name, value string) (string, bool, error) {
	if err := checkRun(run); err != nil {
		return "", false, err
	}
	if name == "" {
		return "", false, fmt.Errorf("redisstore: marker of run %s/%s needs a name", run.Class, run.Run)
	}
	res, err := markerScript.Run(ctx, s.rdb, []string{s.runKey(run, "markers")}, name, value, s.ttl, s.markerChannel(run.Class, name), run.Run).Slice()
	if err != nil {
		return "", false, fmt.Errorf("redisstore: set marker %s: %w", name, err)
	}
	if len(res) != 2 {
		return "", false, fmt.Errorf("redisstore: marker script returned %d values", len(res))
	}
	created, _ := res[0].(int64)
	current, _ := res[1].(string)
	return current, created == 1, nil
}

// Marker implements store.Store.
func (s *Store) Marker(ctx context.Context, run store.RunKey, name string) (string, bool, error) {
	if err := checkRun(run); err != nil {
		return "", false, err
	}
	if name == "" {
		return "", false, fmt.Errorf("redisstore: marker of run %s/%s needs a name", run.Class, run.Run)
	}
	v, err := s.rdb.HGet(ctx, s.runKey(run, "markers"), name).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("redisstore: marker %s: %w", name, err)
	}
	return v, true, nil
}

// hash returns the hash of scope sc and its TTL in seconds.
func (s *Store) hash(sc store.Scope) (string, int64, error) {
	if sc.Class == "" || sc.ID == "" {
		return "", 0, fmt.Errorf("redisstore: %s scope needs a class and an id (class %q, id %q)", sc.Kind, sc.Class, sc.ID)
	}
	switch sc.Kind {
	case store.RunScope:
		return s.runKey(store.RunKey{Class: sc.Class, Run: sc.ID}, "ctx"), s.ttl, nil
	case store.ThreadScope:
		return s.threadKey(sc.Class, sc.ID), s.tttl, nil
	}
	return "", 0, fmt.Errorf("redisstore: invalid scope kind %d", int(sc.Kind))
}

func (s *Store) hashField(sc store.Scope, key string) (string, int64, error) {
	h, ttl, err := s.hash(sc)
	if err != nil {
		return "", 0, err
	}
	if key == "" {
		return "", 0, fmt.Errorf("redisstore: empty key in %s scope %s/%s", sc.Kind, sc.Class, sc.ID)
	}
	return h, ttl, nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, sc store.Scope, key string) ([]byte, bool, error) {
	h, _, err := s.hashField(sc, key)
	if err != nil {
		return nil, false, err
	}
	v, err := s.rdb.HGet(ctx, h, key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("redisstore: get %q: %w", key, err)
	}
	return v, true, nil
}

// Set implements store.Store. It renews the scope's TTL, as the
// reference renews a key's expiry on every set.
func (s *Store) Set(ctx context.Context, sc store.Scope, key string, value []byte) error {
	h, ttl, err := s.hashField(sc, key)
	if err != nil {
		return err
	}
	if ttl > 0 {
		// One round trip; the pair needs no transaction, as the next write
		// renews the expiry anyway.
		_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, h, key, value)
			p.Expire(ctx, h, time.Duration(ttl)*time.Second)
			return nil
		})
	} else {
		err = s.rdb.HSet(ctx, h, key, value).Err()
	}
	if err != nil {
		return fmt.Errorf("redisstore: set %q: %w", key, err)
	}
	return nil
}

// SetMany implements store.Contexts: one HSET of every field (and
// the expiry) in one round trip.
func (s *Store) SetMany(ctx context.Context, sc store.Scope, entries []store.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	h, ttl, err := s.hash(sc)
	if err != nil {
		return err
	}
	args := make([]any, 0, 2*len(entries))
	for _, en := range entries {
		if en.Key == "" {
			return fmt.Errorf("redisstore: empty key in %s scope %s/%s", sc.Kind, sc.Class, sc.ID)
		}
		args = append(args, en.Key, en.Value)
	}
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, h, args...)
		if ttl > 0 {
			p.Expire(ctx, h, time.Duration(ttl)*time.Second)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redisstore: set %d keys: %w", len(entries), err)
	}
	return nil
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, sc store.Scope, key string) error {
	h, _, err := s.hashField(sc, key)
	if err != nil {
		return err
	}
	if err := s.rdb.HDel(ctx, h, key).Err(); err != nil {
		return fmt.Errorf("redisstore: delete %q: %w", key, err)
	}
	return nil
}

// Keys implements store.Store.
func (s *Store) Keys(ctx context.Context, sc store.Scope) ([]string, error) {
	h, _, err := s.hash(sc)
	if err != nil {
		return nil, err
	}
	keys, err := s.rdb.HKeys(ctx, h).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: keys of %s scope %s/%s: %w", sc.Kind, sc.Class, sc.ID, err)
	}
	slices.Sort(keys)
	return keys, nil
}

// Incr implements store.Store with HINCRBY, which refuses a value that
// is not a decimal integer without changing it.
func (s *Store) Incr(ctx context.Context, sc store.Scope, key string, delta int64) (int64, error) {
	h, ttl, err := s.hashField(sc, key)
	if err != nil {
		return 0, err
	}
	var incr *redis.IntCmd
	if ttl > 0 {
		_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			incr = p.HIncrBy(ctx, h, key, delta)
			p.Expire(ctx, h, time.Duration(ttl)*time.Second)
			return nil
		})
	} else {
		incr = s.rdb.HIncrBy(ctx, h, key, delta)
	}
	if incr.Err() != nil {
		err = incr.Err()
	}
	if err != nil {
		if strings.Contains(err.Error(), "not an integer") {
			return 0, fmt.Errorf("redisstore: incr %s %q: %w", sc.Kind, key, store.ErrNotInteger)
		}
		return 0, fmt.Errorf("redisstore: incr %q: %w", key, err)
	}
	return incr.Val(), nil
}

// DeleteRun implements store.Store: it deletes the run's claim, counter
// and context hashes by name. The markers hash is kept.
func (s *Store) DeleteRun(ctx context.Context, run store.RunKey) error {
	if err := checkRun(run); err != nil {
		return err
	}
	if err := s.rdb.Del(ctx, s.runKey(run, "claims"), s.runKey(run, "counts"), s.runKey(run, "ctx")).Err(); err != nil {
		return fmt.Errorf("redisstore: deleting run %s/%s: %w", run.Class, run.Run, err)
	}
	return nil
}

func checkRun(run store.RunKey) error {
	if run.Class == "" || run.Run == "" {
		return fmt.Errorf("redisstore: run key needs a class and a run id (class %q, run %q)", run.Class, run.Run)
	}
	return nil
}
