package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/saap-go/agent/store"

	"github.com/redis/go-redis/v9"
)

// Status records:
//
//	<prefix>status:{<class>:<run>}       the run's record (string), expiring with TTL
//	<prefix>{runs:<class>}               sorted set of the class's runs, score: expiry (Unix seconds)
//	<prefix>{runs:<class>}:<thread>      the same for one thread
//
// Members whose score has passed are removed at every write and skipped
// when listing, so the indexes hold no more than the records the TTL keeps.

var _ store.Statuses = (*Store)(nil)

func (s *Store) statusKey(run store.RunKey) string {
	return s.cfg.Prefix + "status:{" + escape(run.Class) + ":" + escape(run.Run) + "}"
}

func (s *Store) runsKey(class, thread string) string {
	k := s.cfg.Prefix + "{runs:" + escape(class) + "}"
	if thread != "" {
		k += ":" + escape(thread)
	}
	return k
}

// noExpiry is the score of index members when the store keeps runs for
// ever (TTL < 0).
const noExpiry = float64(1 << 62)

// PutStatus implements store.Statuses: one pipelined round trip.
func (s *Store) PutStatus(ctx context.Context, run store.RunKey, thread string, value []byte) error {
	if err := checkRun(run); err != nil {
		return err
	}
	if thread == "" {
		return errors.New("redisstore: a status record needs a thread")
	}
	now := time.Now().Unix()
	score, ttl := noExpiry, time.Duration(0)
	if s.ttl > 0 {
		score, ttl = float64(now+s.ttl), time.Duration(s.ttl)*time.Second
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, s.statusKey(run), value, ttl)
		for _, idx := range []string{s.runsKey(run.Class, ""), s.runsKey(run.Class, thread)} {
			p.ZAdd(ctx, idx, redis.Z{Score: score, Member: run.Run})
			p.ZRemRangeByScore(ctx, idx, "-inf", "("+strconv.FormatInt(now, 10))
			if ttl > 0 {
				p.Expire(ctx, idx, ttl)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redisstore: put status of run %s/%s: %w", run.Class, run.Run, err)
	}
	return nil
}

// Status implements store.Statuses.
func (s *Store) Status(ctx context.Context, run store.RunKey) ([]byte, bool, error) {
	if err := checkRun(run); err != nil {
		return nil, false, err
	}
	v, err := s.rdb.Get(ctx, s.statusKey(run)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("redisstore: status of run %s/%s: %w", run.Class, run.Run, err)
	}
	return v, true, nil
}

// ListStatus implements store.Statuses.
func (s *Store) ListStatus(ctx context.Context, class, thread, after string, limit int) ([]store.StatusEntry, error) {
	if class == "" {
		return nil, errors.New("redisstore: listing status records needs a class")
	}
	now := strconv.FormatInt(time.Now().Unix(), 10)
	members, err := s.rdb.ZRangeByScore(ctx, s.runsKey(class, thread), &redis.ZRangeBy{Min: now, Max: "+inf"}).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: listing status records of %s: %w", class, err)
	}
	runs := members[:0]
	for _, r := range members {
		if r > after {
			runs = append(runs, r)
		}
	}
	slices.Sort(runs)
	if limit > 0 && len(runs) > limit {
		runs = runs[:limit]
	}
	cmds := make([]*redis.StringCmd, len(runs))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, r := range runs {
			cmds[i] = p.Get(ctx, s.statusKey(store.RunKey{Class: class, Run: r}))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("redisstore: reading status records of %s: %w", class, err)
	}
	out := make([]store.StatusEntry, 0, len(runs))
	for i, r := range runs {
		v, err := cmds[i].Bytes()
		if errors.Is(err, redis.Nil) {
			continue // expired since listed
		}
		if err != nil {
			return nil, fmt.Errorf("redisstore: status of run %s/%s: %w", class, r, err)
		}
		out = append(out, store.StatusEntry{Run: r, Value: v})
	}
	return out, nil
}
