package schedule

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/store"
	"github.com/saap-go/agent/topic"
)

// Defaults of Config, the reference scheduler's.
const (
	DefaultTick    = 30 * time.Second
	DefaultLease   = 2 * time.Minute
	DefaultCatchUp = 15 * time.Minute
)

// Bus is what a Scheduler needs of a transport: a fenced stream publish
// and the class streams. Every bus.Bus is one.
type Bus interface {
	bus.StreamPublisher
	EnsureStream(ctx context.Context, cfg bus.StreamConfig) error
}

// Store is what a Scheduler needs of a state store: claims and contexts.
// Every store.Store is one.
type Store interface {
	store.Runs
	store.Contexts
}

// Clock is the scheduler's time source; tests give a fake one.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed.
	After(d time.Duration) <-chan time.Time
}

type wallClock struct{}

func (wallClock) Now() time.Time                         { return time.Now() }
func (wallClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Config configures a Scheduler. Bus, Store and Source are required.
type Config struct {
	Bus    Bus
	Store  Store
	Source Source
	// Name names the scheduler's state in the store (default "default").
	// Schedulers of one name on one store elect one leader and share the
	// claims; another name is an independent scheduler.
	Name string
	// Tick is the time between two looks at the schedules (default 30 s):
	// how late an occurrence may fire.
	Tick time.Duration
	// Lease is the leader lease (default 2 m), at least twice Tick. A
	// leader that dies is replaced within about one and a half leases.
	Lease time.Duration
	// CatchUp is how far back a leader fires occurrences it missed (after
	// downtime or a hand-over); older ones are skipped and logged. Default
	// 15 m; at least Tick.
	CatchUp time.Duration
	// Online, if set, says whether a class has runners to take its runs; an
	// occurrence of a class that is not online is skipped and logged, as
	// the reference does. Nil fires every schedule: the start event waits in
	// the class's stream until a runner takes it.
	Online func(class string) bool
	// OnTick, if set, is called after every tick with its report.
	OnTick func(Report)
	// Clock defaults to the wall clock.
	Clock Clock
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Holder names this scheduler in the lease and must be unique among
	// the schedulers of one Name; default host, pid and a random part.
	Holder string
}

// Report is what one tick did.
type Report struct {
	// Time is the tick's now.
	Time time.Time
	// Leader tells whether this scheduler held the lease; a follower does
	// nothing else.
	Leader bool
	// Fired counts the start events this tick published.
	Fired int
	// Skipped counts occurrences older than the catch-up window (up to
	// 10,000 a schedule), Offline those of classes that were not online:
	// neither fires, ever.
	Skipped, Offline int
	// Failed counts occurrences whose claim or publish failed: the next
	// ticks try them again while they are within the catch-up window
	// (then they count as Skipped).
	Failed int
	// Invalid counts schedules that did not compile.
	Invalid int
}

// Scheduler publishes a CronStartEvent for every occurrence of every
// schedule of its Source, exactly once however many schedulers run on the
// same store. See the package documentation for how.
type Scheduler struct {
	cfg   Config
	ns    string
	state store.Scope
	log   *slog.Logger

	leader atomic.Bool

	mu      sync.Mutex // serialises ticks; guards what follows
	key     []byte
	streams map[string]bool
	specs   map[Cron]spec
	held    map[int64]bool // lease slots this scheduler holds
}

// New checks cfg and returns a Scheduler; Run starts it.
func New(cfg Config) (*Scheduler, error) {
	if cfg.Bus == nil || cfg.Store == nil || cfg.Source == nil {
		return nil, errors.New("schedule: New needs a Bus, a Store and a Source")
	}
	if cfg.Name == "" {
		cfg.Name = "default"
	}
	if cfg.Tick == 0 {
		cfg.Tick = DefaultTick
	}
	if cfg.Lease == 0 {
		cfg.Lease = max(DefaultLease, 2*cfg.Tick)
	}
	if cfg.CatchUp == 0 {
		cfg.CatchUp = max(DefaultCatchUp, cfg.Tick)
	}
	switch {
	case cfg.Tick < 0:
		return nil, fmt.Errorf("schedule: Tick %v is negative", cfg.Tick)
	case cfg.Lease < 2*cfg.Tick:
		return nil, fmt.Errorf("schedule: Lease %v must be at least twice Tick %v, or a leader cannot renew it in time", cfg.Lease, cfg.Tick)
	case cfg.CatchUp < cfg.Tick:
		return nil, fmt.Errorf("schedule: CatchUp %v is shorter than Tick %v: every tick would skip occurrences", cfg.CatchUp, cfg.Tick)
	}
	if cfg.Clock == nil {
		cfg.Clock = wallClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Holder == "" {
		host, _ := os.Hostname()
		var r [4]byte
		_, _ = rand.Read(r[:])
		cfg.Holder = fmt.Sprintf("%s-%d-%x", host, os.Getpid(), r)
	}
	ns := namespace(cfg.Name)
	return &Scheduler{
		cfg: cfg, ns: ns, state: store.ThreadContext(ns, "state"),
		log:     cfg.Logger.With("scheduler", cfg.Name),
		streams: map[string]bool{}, specs: map[Cron]spec{}, held: map[int64]bool{},
	}, nil
}

// Run ticks until ctx is done, then returns nil. A tick that fails is
// logged and the next one tries again. Run on every replica that may
// schedule: one of them leads at a time.
func (s *Scheduler) Run(ctx context.Context) error {
	for {
		if _, err := s.Tick(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("schedule: tick failed", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.cfg.Clock.After(s.cfg.Tick):
		}
	}
}

// Leader reports whether the last tick held the lease.
func (s *Scheduler) Leader() bool { return s.leader.Load() }

// Holder returns the name this scheduler holds the lease under.
func (s *Scheduler) Holder() string { return s.cfg.Holder }

// Tick does one round: it takes or renews the lease and, as leader, fires
// the occurrences since the watermark (the end of the last round), at most
// CatchUp back, and moves the watermark. Run calls it every Tick; a caller
// that drives the scheduler itself may call it instead.
func (s *Scheduler) Tick(ctx context.Context) (Report, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Clock.Now().UTC()
	r := Report{Time: now}
	lead, err := s.lead(ctx, now)
	s.leader.Store(lead && err == nil)
	if err != nil {
		return r, err
	}
	r.Leader = lead
	if !lead {
		s.report(r)
		return r, nil
	}
	wm, ok, err := s.watermark(ctx)
	if err != nil {
		return r, err
	}
	if !ok {
		// First round ever: start from now rather than from the epoch.
		s.log.Info("schedule: watermark initialised; the first window starts now", "at", now)
		err := s.setTime(ctx, "watermark", now)
		s.report(r)
		return r, err
	}
	if wm.After(now) {
		s.log.Warn("schedule: the watermark is ahead of this clock; nothing fires until the clock passes it (clock skew between replicas?)",
			"watermark", wm, "now", now)
	}
	list, serr := s.cfg.Source.Schedules(ctx)
	if serr != nil {
		if len(list) == 0 {
			return r, fmt.Errorf("schedule: source: %w", serr)
		}
		s.log.Warn("schedule: the source skipped schedules", "error", serr)
	}
	start, earliest := wm, now.Add(-s.cfg.CatchUp)
	clamped := start.Before(earliest)
	if clamped {
		start = earliest
	}
	failed, retried, err := s.retry(ctx, list, earliest, &r)
	if err != nil {
		return r, err
	}
	for _, sc := range list {
		sp, err := s.compile(sc)
		if err != nil {
			r.Invalid++
			s.log.Error("schedule: skipping an invalid schedule", "class", sc.Class, "agent_id", sc.AgentID, "error", err)
			continue
		}
		if clamped {
			if n := len(sp.between(wm, earliest, maxCounted)); n > 0 {
				r.Skipped += n
				s.log.Warn("schedule: skipped occurrences older than the catch-up window", "class", sc.Class, "agent_id", sc.AgentID,
					"skipped", n, "from", wm, "to", earliest, "catch_up", s.cfg.CatchUp)
			}
		}
		due := sp.between(start, now, 0)
		if len(due) > 0 && s.cfg.Online != nil && !s.cfg.Online(sc.Class) {
			r.Offline += len(due)
			s.log.Warn("schedule: skipped occurrences of a class that is not online", "class", sc.Class, "agent_id", sc.AgentID, "skipped", len(due))
			continue
		}
		for _, occ := range due {
			fired, err := s.fire(ctx, sc, occ)
			if fired {
				r.Fired++
			}
			if err != nil {
				if ctx.Err() != nil {
					// Stopping: the watermark stays, and whoever ticks next
					// covers this window again.
					return r, ctx.Err()
				}
				r.Failed++
				s.log.Warn("schedule: occurrence not fired; the next tick tries again", "class", sc.Class, "agent_id", sc.AgentID,
					"scheduled_for", occ, "error", err)
				failed = append(failed, retryEntry{Class: sc.Class, AgentID: sc.AgentID, At: occ})
			}
		}
	}
	if retried || len(failed) > 0 {
		if err := s.setRetries(ctx, failed); err != nil {
			return r, err
		}
	}
	if err := s.setTime(ctx, "watermark", now); err != nil {
		return r, err
	}
	s.prune(ctx, now)
	if r.Fired+r.Skipped+r.Offline+r.Failed+r.Invalid > 0 {
		s.log.Info("schedule: tick", "schedules", len(list), "fired", r.Fired, "skipped", r.Skipped, "offline", r.Offline,
			"failed", r.Failed, "invalid", r.Invalid)
	}
	s.report(r)
	return r, nil
}

// retryEntry is an occurrence whose claim or publish failed; the next
// ticks try it again while it is within the catch-up window. The list is
// kept in the store, so a new leader goes on with it.
type retryEntry struct {
	Class   string    `json:"agent_class"`
	AgentID string    `json:"agent_id"`
	At      time.Time `json:"at"`
}

// maxRetries bounds the retry list; past it the oldest entries are given
// up (and logged).
const maxRetries = 1000

// retry fires the occurrences that failed before and returns those that
// fail again, and whether there was a retry list. One older than earliest,
// or of a schedule no longer listed, is given up.
func (s *Scheduler) retry(ctx context.Context, list []Schedule, earliest time.Time, r *Report) ([]retryEntry, bool, error) {
	v, ok, err := s.cfg.Store.Get(ctx, s.state, "retry")
	if err != nil || !ok {
		return nil, false, err
	}
	var entries []retryEntry
	if err := json.Unmarshal(v, &entries); err != nil {
		s.log.Error("schedule: the stored retry list is malformed; dropping it", "error", err)
		return nil, true, nil
	}
	listed := map[string]Schedule{}
	for _, sc := range list {
		listed[sc.key()] = sc
	}
	var failed []retryEntry
	for _, e := range entries {
		sc, ok := listed[Schedule{Class: e.Class, AgentID: e.AgentID}.key()]
		if !ok || !e.At.After(earliest) { // the window is open at its start
			r.Skipped++
			s.log.Warn("schedule: gave up an occurrence that could not be fired", "class", e.Class, "agent_id", e.AgentID,
				"scheduled_for", e.At, "still_scheduled", ok)
			continue
		}
		fired, err := s.fire(ctx, sc, e.At)
		if fired {
			r.Fired++
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, true, ctx.Err()
			}
			r.Failed++
			s.log.Warn("schedule: occurrence not fired again; the next tick tries again", "class", e.Class, "agent_id", e.AgentID,
				"scheduled_for", e.At, "error", err)
			failed = append(failed, e)
		}
	}
	return failed, true, nil
}

func (s *Scheduler) setRetries(ctx context.Context, failed []retryEntry) error {
	if len(failed) == 0 {
		return s.cfg.Store.Delete(ctx, s.state, "retry")
	}
	if n := len(failed) - maxRetries; n > 0 {
		s.log.Warn("schedule: too many occurrences failing; giving up the oldest", "given_up", n)
		failed = failed[n:]
	}
	data, err := json.Marshal(failed)
	if err != nil {
		return err
	}
	return s.cfg.Store.Set(ctx, s.state, "retry", data)
}

// maxCounted bounds the count of skipped occurrences: a watermark a year
// old need not enumerate a year of minutes to say that many were lost.
const maxCounted = 10_000

func (s *Scheduler) report(r Report) {
	if s.cfg.OnTick != nil {
		s.cfg.OnTick(r)
	}
}

func (s *Scheduler) compile(sc Schedule) (spec, error) {
	if err := topic.ValidateToken("agent_class", sc.Class); err != nil {
		return spec{}, err
	}
	if err := topic.ValidateToken("agent_id", sc.AgentID); err != nil {
		return spec{}, err
	}
	if sp, ok := s.specs[sc.Cron]; ok {
		return sp, nil
	}
	sp, err := sc.Cron.compile()
	if err != nil {
		return spec{}, err
	}
	if len(s.specs) > 10_000 {
		clear(s.specs)
	}
	s.specs[sc.Cron] = sp
	return sp, nil
}

// The lease is a sequence of slots of Lease each, aligned on the Unix
// epoch; whoever records itself first for a slot leads during it. A
// leader records itself for the next slot in the second half of its own,
// before any follower tries, so it keeps leading; a follower tries only
// the slot it is in, so a dead leader's lease runs out at the end of the
// last slot it took. Records are creates, atomic in every store; two
// leaders at once (clock skew) cost a duplicate try, never a duplicate
// run, because every occurrence is claimed and fenced on its own.

func (s *Scheduler) slot(t time.Time) int64 { return t.UnixNano() / int64(s.cfg.Lease) }

func (s *Scheduler) slotStart(k int64) time.Time { return time.Unix(0, k*int64(s.cfg.Lease)) }

// lead reports whether this scheduler holds the slot of now, renewing
// ahead of its end.
func (s *Scheduler) lead(ctx context.Context, now time.Time) (bool, error) {
	k := s.slot(now)
	for old := range s.held {
		if old < k-1 {
			delete(s.held, old)
		}
	}
	if !s.held[k] {
		ok, err := s.take(ctx, k)
		if err != nil || !ok {
			return false, err
		}
	}
	if s.slotStart(k+1).Sub(now) <= s.cfg.Lease/2 && !s.held[k+1] {
		if _, err := s.take(ctx, k+1); err != nil {
			s.log.Warn("schedule: lease not renewed", "error", err)
		}
	}
	return true, nil
}

// take records this scheduler for slot k unless another holds it.
func (s *Scheduler) take(ctx context.Context, k int64) (bool, error) {
	run := store.RunKey{Class: s.ns, Run: "lease." + hour(s.slotStart(k))}
	res, err := s.cfg.Store.Record(ctx, run, "leader", strconv.FormatInt(k, 10), store.Outcome{Message: s.cfg.Holder})
	if err != nil {
		return false, fmt.Errorf("schedule: lease: %w", err)
	}
	mine := res.Status == store.Claimed || res.Outcome.Message == s.cfg.Holder
	if mine {
		if !s.held[k] && !s.held[k-1] {
			s.log.Info("schedule: leading", "holder", s.cfg.Holder, "until", s.slotStart(k+1))
		}
		s.held[k] = true
	}
	return mine, nil
}

func hour(t time.Time) string { return strconv.FormatInt(t.Unix()/3600, 10) }

// fire claims occurrence occ of sc and publishes its start event. A claim
// left pending by a scheduler that died, or held by one running now, is
// published again: the event's subject is derived from the occurrence, and
// the stream refuses a second message on it, so the run starts once.
func (s *Scheduler) fire(ctx context.Context, sc Schedule, occ time.Time) (bool, error) {
	run := store.RunKey{Class: s.ns, Run: "fired." + hour(occ)}
	key := sc.Class + "." + sc.AgentID + "." + strconv.FormatInt(occ.Unix(), 10)
	res, err := s.cfg.Store.Claim(ctx, run, store.ClaimRequest{Step: "fire", Key: key})
	if err != nil {
		return false, fmt.Errorf("claim: %w", err)
	}
	if res.Status == store.Done {
		return false, nil
	}
	fresh, err := s.publish(ctx, sc, occ)
	if err != nil {
		return false, err
	}
	if err := s.cfg.Store.Complete(ctx, run, "fire", key, store.Outcome{Message: s.cfg.Holder}); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fresh, fmt.Errorf("complete claim: %w", err)
	}
	return fresh, nil
}

// publish sends the CronStartEvent of occ to sc's profile, as the
// platform's scheduler does (no user, scheduled_for in UTC), and reports
// whether the stream took it (false: it held it already).
func (s *Scheduler) publish(ctx context.Context, sc Schedule, occ time.Time) (bool, error) {
	if !s.streams[sc.Class] {
		if err := s.cfg.Bus.EnsureStream(ctx, bus.AgentStream(sc.Class)); err != nil {
			return false, fmt.Errorf("stream of %s: %w", sc.Class, err)
		}
		s.streams[sc.Class] = true
	}
	key, err := s.idKey(ctx)
	if err != nil {
		return false, err
	}
	unix := strconv.FormatInt(occ.Unix(), 10)
	e := event.New[event.CronStartEvent]()
	e.EventID = deriveID(key, occ, "event", sc.Class, sc.AgentID, unix)
	e.CreatedAt = s.cfg.Clock.Now().UnixNano()
	e.ScheduledFor = occ.UTC()
	t := topic.Agent{
		Class: sc.Class, ID: sc.AgentID,
		Thread:  deriveID(key, time.Time{}, "thread", sc.Class, sc.AgentID),
		Display: deriveID(key, occ, "display", sc.Class, sc.AgentID, unix),
		Run:     deriveID(key, occ, "run", sc.Class, sc.AgentID, unix),
		Type:    topic.Control, Name: event.Name(e), EventID: e.EventID,
	}
	subj, err := t.Subject()
	if err != nil {
		return false, err
	}
	data, err := event.Marshal(e)
	if err != nil {
		return false, err
	}
	ack, err := s.cfg.Bus.PublishNew(ctx, &bus.Msg{Subject: subj, Data: data}, e.EventID)
	if err != nil {
		return false, fmt.Errorf("publish %s: %w", subj, err)
	}
	if !ack.Duplicate {
		s.log.Info("schedule: started a scheduled run", "class", sc.Class, "agent_id", sc.AgentID, "scheduled_for", occ,
			"thread", t.Thread, "run", t.Run)
	}
	return !ack.Duplicate, nil
}

// idKey returns the key the ids of scheduled runs are derived with. Ids
// must be the same on every scheduler (that is what makes a second publish
// a duplicate) and unguessable (a thread id is what a user would need to
// read a profile's runs), so they are keyed with a secret kept in the
// store: the first scheduler creates it, atomically, and the others read
// it.
func (s *Scheduler) idKey(ctx context.Context) ([]byte, error) {
	if s.key != nil {
		return s.key, nil
	}
	v, ok, err := s.cfg.Store.Get(ctx, s.state, "id-key")
	if err != nil {
		return nil, fmt.Errorf("schedule: id key: %w", err)
	}
	if !ok {
		var r [32]byte
		_, _ = rand.Read(r[:])
		mine := hex.EncodeToString(r[:])
		// The create elects one key; the copy in the thread context, which
		// does not expire, is what later schedulers read.
		res, err := s.cfg.Store.Record(ctx, store.RunKey{Class: s.ns, Run: "keys"}, "id-key", "1", store.Outcome{Message: mine})
		if err != nil {
			return nil, fmt.Errorf("schedule: id key: %w", err)
		}
		if res.Status != store.Claimed {
			mine = res.Outcome.Message
		}
		if err := s.cfg.Store.Set(ctx, s.state, "id-key", []byte(mine)); err != nil {
			return nil, fmt.Errorf("schedule: id key: %w", err)
		}
		v = []byte(mine)
	}
	key, err := hex.DecodeString(string(v))
	if err != nil || len(key) < 16 {
		return nil, errors.New("schedule: the stored id key is malformed")
	}
	s.key = key
	return key, nil
}

// deriveID returns an ObjectId-shaped id (24 lower-hex characters): the
// Unix seconds of t, if set, then an HMAC of parts under key.
func deriveID(key []byte, t time.Time, parts ...string) string {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	sum := m.Sum(nil)
	var b [12]byte
	if t.IsZero() {
		copy(b[:], sum)
	} else {
		binary.BigEndian.PutUint32(b[:4], uint32(t.Unix()))
		copy(b[4:], sum)
	}
	return hex.EncodeToString(b[:])
}

func (s *Scheduler) watermark(ctx context.Context) (time.Time, bool, error) {
	v, ok, err := s.cfg.Store.Get(ctx, s.state, "watermark")
	if err != nil || !ok {
		return time.Time{}, false, err
	}
	t, err := time.Parse(time.RFC3339Nano, string(v))
	if err != nil {
		s.log.Error("schedule: the stored watermark is malformed; starting from now", "value", string(v))
		return time.Time{}, false, nil
	}
	return t.UTC(), true, nil
}

func (s *Scheduler) setTime(ctx context.Context, key string, t time.Time) error {
	return s.cfg.Store.Set(ctx, s.state, key, []byte(t.UTC().Format(time.RFC3339Nano)))
}

// retention is how long claims and lease records are kept: well past the
// catch-up window, so that no occurrence a leader may still fire has lost
// its claim.
func (s *Scheduler) retention() time.Duration { return 4*s.cfg.CatchUp + 2*time.Hour }

// prune deletes the claims and lease records of the hours past retention,
// a few hours per tick; the store's own expiry is the backstop.
func (s *Scheduler) prune(ctx context.Context, now time.Time) {
	cutoff := now.Add(-s.retention()).Unix() / 3600
	v, ok, err := s.cfg.Store.Get(ctx, s.state, "pruned")
	if err != nil {
		return
	}
	from, perr := strconv.ParseInt(string(v), 10, 64)
	if !ok || perr != nil || from > cutoff {
		from = cutoff
	}
	h := from
	for ; h < cutoff && h < from+24; h++ {
		for _, part := range []string{"fired.", "lease."} {
			if err := s.cfg.Store.DeleteRun(ctx, store.RunKey{Class: s.ns, Run: part + strconv.FormatInt(h, 10)}); err != nil {
				s.log.Warn("schedule: pruning old claims failed", "error", err)
				return
			}
		}
	}
	if !ok || h != from {
		_ = s.cfg.Store.Set(ctx, s.state, "pruned", []byte(strconv.FormatInt(h, 10)))
	}
}
