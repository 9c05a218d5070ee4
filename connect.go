package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	neturl "net/url"
	"os"

	"github.com/saap-go/agent/store"
	memstore "github.com/saap-go/agent/store/memory"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/internal/embedhook"
	"github.com/saap-go/agent/store/natskv"
)

// EnvRedisURL names the Redis server that keeps run state when set
// (redis://[user:password@]host:port/db).
const EnvRedisURL = "REDIS_URL"

// connect returns the bus: the one given with WithBus, or a connection to
// the configured server, or to an embedded server it starts.
func (r *Runner) connect(ctx context.Context, res *resources, info *Info) (bus.Bus, error) {
	if r.o.bus != nil {
		return r.o.bus, nil
	}
	cfg, err := natsbus.ConfigFromEnv()
	if err != nil {
		return nil, fmt.Errorf("agent: NATS settings: %w", err)
	}
	if r.o.natsSet {
		cfg.URL = r.o.natsURL
	}
	if cfg.URL == "" {
		if embedhook.Start == nil {
			return nil, fmt.Errorf("agent: no NATS server is configured (set %s or use WithNATS), and no embedded one is linked: add import _ %q to start one",
				natsbus.EnvURL, "github.com/saap-go/agent/embedded")
		}
		srv, err := embedhook.Start(r.o.dataDir)
		if err != nil {
			return nil, fmt.Errorf("agent: embedded NATS server: %w", err)
		}
		res.add(func() error { srv.Shutdown(); return nil })
		cfg.URL = srv.URL()
		cfg.Token, cfg.CredsFile, cfg.NKeySeedFile = "", "", ""
		cfg.TLSCert, cfg.TLSKey, cfg.TLSCA = "", "", ""
		info.Embedded = true
		r.log.Info("started an embedded NATS server", "url", cfg.URL, "dir", srv.Dir())
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cfg.Name = "saap-agent " + r.class
	cfg.Logger = r.log
	cfg.Replicas = r.o.replicas
	b, err := natsbus.Connect(cfg)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	res.add(b.Close)
	info.NATSURL = cfg.URL
	return b, nil
}

// openStore returns the state store: the one given with WithStore, Redis
// (WithRedis or REDIS_URL), JetStream KV on the bus's connection, or, for a
// bus that is not NATS, an in-memory store.
func (r *Runner) openStore(ctx context.Context, res *resources, b bus.Bus, info *Info) (store.Store, error) {
	if r.o.store != nil {
		info.Store = "custom"
		return r.o.store, nil
	}
	url := r.o.redisURL
	if !r.o.redisSet {
		url = os.Getenv(EnvRedisURL)
	}
	if url != "" {
		if u, err := neturl.Parse(url); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") {
			return nil, fmt.Errorf("agent: state store: %s (or WithRedis) must be a redis:// or rediss:// URL", EnvRedisURL)
		}
		// Through the store registry: the Redis client is linked only by
		// programs that import store/redis.
		s, err := store.Open(ctx, url)
		if err != nil {
			return nil, fmt.Errorf("agent: state store: %w", err)
		}
		if c, ok := s.(io.Closer); ok {
			res.add(c.Close)
		}
		info.Store = "redis"
		return s, nil
	}
	if js, ok := b.(natsbus.JetStreamer); ok {
		cfg := natskv.Config{Replicas: r.o.replicas}
		s, err := natskv.New(ctx, js.JetStream(), cfg)
		if err != nil {
			return nil, fmt.Errorf("agent: state store: %w", err)
		}
		changed, err := leaderReads(ctx, js.JetStream(), r.log,
			"KV_"+natskv.DefaultBucket, "KV_"+natskv.DefaultBucket+natskv.ThreadBucketSuffix)
		if err != nil {
			return nil, fmt.Errorf("agent: state store: %w", err)
		}
		if changed {
			// A bucket handle keeps the read path it was opened with.
			if s, err = natskv.New(ctx, js.JetStream(), cfg); err != nil {
				return nil, fmt.Errorf("agent: state store: %w", err)
			}
		}
		info.Store = "jetstream-kv"
		return s, nil
	}
	r.log.Warn("the bus is not NATS: run state is kept in memory and lost on exit (use WithStore)")
	info.Store = "memory"
	return memstore.New(), nil
}

// leaderReads makes the state buckets that keep more than one copy answer
// reads from their leader only, and reports whether it changed one. By
// default every copy of a bucket answers reads ("direct get"), and a copy
// that lags the leader answers with a value older than the last
// acknowledged write: a replica could then miss the configuration that
// another replica stored when it handled the run's start a moment earlier,
// and end the run (seen in the fault suite's cluster test). Reads from the
// leader cost a request to one server instead of any, and need the
// $JS.API.STREAM.MSG.GET permission on the bucket's stream (see
// docs/scaling.md).
func leaderReads(ctx context.Context, js jetstream.JetStream, log *slog.Logger, streams ...string) (bool, error) {
	changed := false
	for _, name := range streams {
		s, err := js.Stream(ctx, name)
		if err != nil {
			return changed, fmt.Errorf("stream %s: %w", name, err)
		}
		c := s.CachedInfo().Config
		if c.Replicas <= 1 || !c.AllowDirect {
			continue
		}
		c.AllowDirect = false
		if _, err := js.UpdateStream(ctx, c); err != nil {
			return changed, fmt.Errorf("stream %s keeps %d copies and lets each answer reads, which may then be stale; "+
				"turning that off (allow_direct false) failed: %w", name, c.Replicas, err)
		}
		log.Info("state bucket now read from its leader only: its copies may lag", "stream", name, "replicas", c.Replicas)
		changed = true
	}
	return changed, nil
}
