package gateway

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
)

// userKey carries the authenticated user through a request's context.
type userKey struct{}

// userHeader is the identity header the gateway sets from the
// authenticated user on every event it forwards.
const userHeader = "X-Aihub-User-Id"

// limits holds the per-user and global limits of a gateway.
type limits struct {
	rate    rate.Limit
	burst   int
	maxRuns int

	mu    sync.Mutex
	users map[string]*rate.Limiter
	runs  map[string]int

	maxBody  int64
	inFlight atomic.Int64

	// Run status reads per user: each is a NATS request to the runners.
	statusRate  rate.Limit
	statusBurst int
	statusUsers map[string]*rate.Limiter

	// Failed authentications per client address.
	authRate   rate.Limit
	authBurst  int
	failures   map[string]*rate.Limiter
	failPruned time.Time
}

// maxFailingAddrs bounds the addresses whose failures are remembered.
const maxFailingAddrs = 1 << 16

func newLimits(cfg Config) *limits {
	l := &limits{burst: cfg.RateBurst, maxRuns: cfg.MaxRunsPerUser, maxBody: cfg.MaxInFlightBody,
		users: make(map[string]*rate.Limiter), runs: make(map[string]int),
		authBurst: cfg.AuthFailureBurst, failures: make(map[string]*rate.Limiter)}
	l.rate = rate.Inf
	if cfg.RateLimit > 0 {
		l.rate = rate.Limit(cfg.RateLimit)
	}
	l.statusRate, l.statusBurst, l.statusUsers = rate.Inf, cfg.StatusBurst, make(map[string]*rate.Limiter)
	if cfg.StatusRateLimit > 0 {
		l.statusRate = rate.Limit(cfg.StatusRateLimit)
	}
	l.authRate = rate.Inf
	if cfg.AuthFailureRate > 0 {
		l.authRate = rate.Limit(cfg.AuthFailureRate)
	}
	return l
}

// authAllowed reports whether addr may try to authenticate now: whether
// one more failure would be within its budget; else how long until it is.
func (l *limits) authAllowed(addr string, now time.Time) (bool, time.Duration) {
	if l.authRate == rate.Inf {
		return true, 0
	}
	l.mu.Lock()
	lim := l.failures[addr]
	l.mu.Unlock()
	if lim == nil {
		return true, 0
	}
	tokens := lim.TokensAt(now)
	if tokens >= 1 {
		return true, 0
	}
	return false, time.Duration((1 - tokens) / float64(l.authRate) * float64(time.Second))
}

// authFailed counts a failed authentication of addr.
func (l *limits) authFailed(addr string, now time.Time) {
	if l.authRate == rate.Inf {
		return
	}
	l.mu.Lock()
	lim := l.failures[addr]
	if lim == nil {
		if len(l.failures) >= maxFailingAddrs && now.Sub(l.failPruned) >= time.Second {
			// Forget addresses whose budget has refilled.
			l.failPruned = now
			for a, x := range l.failures {
				if x.TokensAt(now) >= float64(l.authBurst) {
					delete(l.failures, a)
				}
			}
		}
		if len(l.failures) >= maxFailingAddrs {
			// Memory is bounded; so many failing addresses at once are
			// beyond what a per-address limit can stop anyway.
			l.mu.Unlock()
			return
		}
		lim = rate.NewLimiter(l.authRate, l.authBurst)
		l.failures[addr] = lim
	}
	l.mu.Unlock()
	lim.AllowN(now, 1)
}

// clientAddr is the address whose failures r counts against (see
// addrKey).
func clientAddr(r *http.Request) string { return addrKey(r.RemoteAddr) }

// authThrottled is the refusal of a request from an address that failed
// authentication too often.
func authThrottled(wait time.Duration) *requestError {
	return &requestError{status: http.StatusTooManyRequests, retryAfter: wait,
		msg: fmt.Sprintf("too many failed authentications from this address; retry in %s", wait.Round(time.Second))}
}

// allow takes a token from user's bucket, or says how long until one is
// there.
func (l *limits) allow(user string, now time.Time) (bool, time.Duration) {
	return l.allowIn(l.users, l.rate, l.burst, user, now)
}

// allowStatus is allow for the run status routes, with their own budget.
func (l *limits) allowStatus(user string, now time.Time) (bool, time.Duration) {
	return l.allowIn(l.statusUsers, l.statusRate, l.statusBurst, user, now)
}

func (l *limits) allowIn(users map[string]*rate.Limiter, r rate.Limit, burst int, user string, now time.Time) (bool, time.Duration) {
	if r == rate.Inf {
		return true, 0
	}
	l.mu.Lock()
	lim, ok := users[user]
	if !ok {
		if len(users) >= 4096 {
			// Forget users whose bucket has refilled: they start full again.
			for u, x := range users {
				if x.TokensAt(now) >= float64(burst) {
					delete(users, u)
				}
			}
		}
		lim = rate.NewLimiter(r, burst)
		users[user] = lim
	}
	l.mu.Unlock()
	res := lim.ReserveN(now, 1)
	if !res.OK() {
		return false, time.Second
	}
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return false, d
	}
	return true, 0
}

// startRun counts one more open run-carrying request of user; release
// undoes it. ok is false when user is at MaxRunsPerUser.
func (l *limits) startRun(user string) (release func(), ok bool) {
	if l.maxRuns <= 0 {
		return func() {}, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runs[user] >= l.maxRuns {
		return nil, false
	}
	l.runs[user]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.runs[user]--; l.runs[user] <= 0 {
				delete(l.runs, user)
			}
		})
	}, true
}

// reserveBody reserves n bytes of the global in-flight body budget.
func (l *limits) reserveBody(n int64) (release func(), ok bool) {
	if l.maxBody <= 0 {
		return func() {}, true
	}
	for {
		cur := l.inFlight.Load()
		if cur+n > l.maxBody && cur > 0 {
			return nil, false
		}
		if l.inFlight.CompareAndSwap(cur, cur+n) {
			return func() { l.inFlight.Add(-n) }, true
		}
	}
}

// retryAfter sets the Retry-After header to d, rounded up to seconds.
func retryAfter(w http.ResponseWriter, d time.Duration) {
	s := int(math.Ceil(d.Seconds()))
	if s < 1 {
		s = 1
	}
	w.Header().Set("Retry-After", strconv.Itoa(s))
}

// guard wraps a handler that starts or continues runs: it authenticates
// the caller, applies the per-user rate limit and concurrent-run cap,
// replaces client-sent X-AIHub-* headers by the allowed ones plus the
// gateway's own identity header, and lets the response outlive the
// server's WriteTimeout for as long as the request may wait for its agent.
// chat selects OpenAI-shaped refusals for the chat completions endpoint.
func (g *Gateway) guard(h http.HandlerFunc, chat bool) http.HandlerFunc {
	refuse := func(w http.ResponseWriter, status int, msg string) {
		if chat {
			openAIError(w, status, msg, "")
			return
		}
		writeError(w, status, msg, "")
	}
	fail := g.fail
	if chat {
		fail = g.chatFail
	}
	return g.guardWith(h, refuse, fail)
}

// guardWith is guard with the refusal and error writers of the caller's
// protocol.
func (g *Gateway) guardWith(h http.HandlerFunc, refuse func(http.ResponseWriter, int, string), fail func(http.ResponseWriter, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		user, ok := g.authenticateWith(w, r, fail)
		if !ok {
			return
		}
		if ok, wait := g.limits.allow(user.ID, g.now()); !ok {
			retryAfter(w, wait)
			refuse(w, http.StatusTooManyRequests, fmt.Sprintf("rate limit: user %s sends requests too fast; retry in %s", user.ID, wait.Round(time.Millisecond)))
			return
		}
		release, ok := g.limits.startRun(user.ID)
		if !ok {
			retryAfter(w, time.Second)
			refuse(w, http.StatusTooManyRequests, fmt.Sprintf("user %s has %d requests running, the most allowed at once", user.ID, g.limits.maxRuns))
			return
		}
		defer release()
		g.filterHeaders(r, user)
		// A blocking answer is written only when the agent is done; SSE
		// extends the deadline per event.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(g.cfg.Timeout + time.Minute))
		h(w, r.WithContext(context.WithValue(callerTrace(r), userKey{}, user)))
	}
}

// callerTrace is the request's context carrying the caller's trace
// context (W3C traceparent, or what the installed propagator reads), so
// that the run the request starts continues the caller's trace: the bus
// injects it into every event the gateway publishes. A span the request
// already has (a server middleware's) wins. The caller's baggage is not
// taken (agents must not act on a client's word), nor a tracestate entry
// under the SDK's own key, which names run spans.
func callerTrace(r *http.Request) context.Context {
	ctx := r.Context()
	if trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	sc := trace.SpanContextFromContext(bus.ExtractTrace(ctx, bus.Header(r.Header)))
	if !sc.IsValid() {
		return ctx
	}
	if ts := sc.TraceState(); ts.Get(runStateKey) != "" {
		sc = sc.WithTraceState(ts.Delete(runStateKey))
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}

// runStateKey is the tracestate key under which package semantic names
// the run spans of a trace.
const runStateKey = "saap"

// filterHeaders drops the X-AIHub-* headers of the request that are not in
// Config.ForwardHeaders, and sets the identity header from user: agents
// must not take a client's word for who is asking.
func (g *Gateway) filterHeaders(r *http.Request, user *event.UserIdentity) {
	for k := range r.Header {
		if len(k) > 8 && strings.EqualFold(k[:8], "x-aihub-") && !g.forward[strings.ToLower(k)] {
			delete(r.Header, k)
		}
	}
	r.Header.Set(userHeader, user.ID)
}

// cors applies Config.CORS: allowed origins get the CORS headers, and
// preflight requests are answered here.
func (g *Gateway) cors(w http.ResponseWriter, r *http.Request) (handled bool) {
	c := g.cfg.CORS
	origin := r.Header.Get("Origin")
	if c == nil || origin == "" {
		return false
	}
	allowed := false
	for _, o := range c.AllowOrigins {
		if o == "*" || strings.EqualFold(o, origin) {
			allowed = true
			break
		}
	}
	h := w.Header()
	h.Add("Vary", "Origin")
	if !allowed {
		return false
	}
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Expose-Headers", "X-Thread-Id, X-Display-Id, X-Run-Id, Retry-After, Location")
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept, Accept-Language")
		if c.MaxAge > 0 {
			h.Set("Access-Control-Max-Age", strconv.Itoa(int(c.MaxAge.Seconds())))
		}
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	return false
}

// CORS lets browser pages of other origins call the gateway. Without it
// (the default) the gateway sends no CORS headers, so browsers keep other
// sites' scripts out.
type CORS struct {
	// AllowOrigins lists the allowed origins ("https://app.example.com");
	// "*" allows every origin. Credentials (cookies) are never allowed:
	// the gateway authenticates by the Authorization header.
	AllowOrigins []string
	// MaxAge is how long browsers may cache a preflight answer.
	MaxAge time.Duration
}
