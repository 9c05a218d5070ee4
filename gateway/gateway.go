package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/files"
	"github.com/saap-go/agent/hitl"
	"github.com/saap-go/agent/topic"
)

// Bus is what the gateway needs from a transport: core publish for
// discovery requests and user echoes, JetStream publish for the events it
// sends to agents, and core subscriptions for the display events it streams
// back. Every bus.Bus satisfies it.
type Bus interface {
	bus.Publisher
	bus.StreamPublisher
	bus.Subscriber
}

// Config configures a Gateway. Only Bus is required.
type Config struct {
	// Bus carries events to and from the agents.
	Bus Bus
	// Auth authenticates requests. Required unless AllowAnonymous is used
	// through Anonymous(...).
	Auth Authenticator
	// Threads keeps thread membership. Default: NewMemoryThreads(), which
	// forgets every thread when the process ends; use NewKVStore for a
	// gateway that restarts or runs as several replicas.
	Threads Threads
	// History keeps each thread's messages: the user's, as the gateway
	// publishes them, and the agents' answers, as it follows the runs.
	// With it, a start event whose messages list is empty gets the
	// thread's history, a request may ask for the history before its
	// messages (reconstruct_history), and members read it at
	// GET /api/v1/saap/threads/{thread}/messages. Default nil: no history
	// is kept. NewJetStreamHistory keeps it on the agents' NATS server,
	// for restarts and replicas.
	History History
	// Questions keeps the HITL questions seen in threads. Default: Threads
	// when it implements Questions too (as *KVStore does), else
	// NewMemoryQuestions().
	Questions Questions
	// DiscoveryPeriod is the time between discovery cycles of Run.
	// Default 60 s, as the reference.
	DiscoveryPeriod time.Duration
	// DiscoveryWindow is how long a cycle collects answers. Default 10 s.
	DiscoveryWindow time.Duration
	// Timeout bounds how long a request waits for its terminal event (the
	// reference waits forever). Default 5 minutes.
	Timeout time.Duration
	// KeepAlive is the interval of SSE keep-alive comments. Default 15 s.
	KeepAlive time.Duration
	// MaxBody is the largest request body accepted, in bytes. Default 1 MiB.
	MaxBody int64
	// MaxInFlightBody bounds the bytes of all request bodies being read at
	// once; beyond it requests get 503 with Retry-After. Default 64 MiB;
	// negative: no bound.
	MaxInFlightBody int64
	// RateLimit is how many requests per second each user may send to the
	// endpoints that start runs or answer questions; beyond it requests get
	// 429 with Retry-After. Default 2; negative: no limit.
	RateLimit float64
	// RateBurst is how many such requests a user may send at once after
	// being idle. Default 10.
	RateBurst int
	// AuthFailureRate throttles guessing: each client address may fail
	// authentication (or sign a bot answer wrongly) AuthFailureBurst times
	// at once, and then once per 1/AuthFailureRate seconds; beyond that
	// its requests get 429 with Retry-After before their credentials are
	// checked, until a failure is allowed again. Successful requests never
	// count. The address is the connection's, an IPv6 one taken by its
	// /64: behind a proxy every client shares the proxy's. Default 0.2
	// (one every 5 s); negative: no limit.
	AuthFailureRate float64
	// AuthFailureBurst is how many failures an address may cause at once.
	// Default 10.
	AuthFailureBurst int
	// StatusRateLimit is how many run status requests per second each user
	// may send (GET /api/v1/saap/runs/..., .../threads/{thread}/runs); each
	// is a request to the class's runners. Beyond it requests get 429 with
	// Retry-After. Default 10; negative: no limit.
	StatusRateLimit float64
	// StatusBurst is how many status requests a user may send at once
	// after being idle. Default 20.
	StatusBurst int
	// MaxRunsPerUser bounds the requests each user has open at once on
	// those endpoints (a streaming request stays open until its run
	// pauses or ends); beyond it requests get 429. Default 8; negative: no
	// bound.
	MaxRunsPerUser int
	// ForwardHeaders lists the X-AIHub-* request headers passed on to
	// agents (case-insensitive). The others are dropped: agents would take
	// them for the platform's word. The gateway always sets
	// X-AIHub-User-Id to the authenticated user. Default none.
	ForwardHeaders []string
	// CORS allows browser pages of other origins. Default nil: no CORS.
	CORS *CORS
	// Server holds the timeouts and connection cap ListenAndServe uses
	// (see NewServer).
	Server ServerConfig
	// AllowAnonymousRemote lets ListenAndServe serve an Anonymous
	// authenticator on an address other machines can reach. Without it
	// such a gateway only serves on loopback.
	AllowAnonymousRemote bool
	// DefaultAgentID is the agent id the OpenAI endpoint talks to when a
	// request's model names only the agent class, as GET /v1/models lists
	// it. Default "default".
	DefaultAgentID string
	// Locale is the locale put into start events when the request's
	// Accept-Language names none of de, en, fr, it. Default "de".
	Locale string
	// Bot, if set, receives every bot-in-the-loop question the discovered
	// classes ask (while Run runs; of several replicas one delivers each).
	// hitl.Webhook posts them to a URL.
	Bot hitl.Bot
	// BotSecret enables POST /api/v1/bitl/answers, where a bot channel
	// posts its answers (a hitl.WebhookAnswer) signed with this secret as
	// hitl.Sign describes. Empty: the route answers 404.
	BotSecret []byte
	// BotReplayWindow is how far a bot answer's timestamp may be from the
	// gateway's clock. Default hitl.DefaultReplayWindow.
	BotReplayWindow time.Duration
	// Files keeps the files users upload (POST /api/v1/saap/files) and
	// their messages reference: files.NewMemory, or objstore.New for the
	// bus's JetStream Object Store. Nil: no upload routes, and references
	// in messages go to the agents unchecked.
	Files files.Store
	// MaxFileSize is the largest file accepted, in bytes; larger uploads
	// get 413. Default DefaultMaxFileSize (10 MiB).
	MaxFileSize int64
	// FileTypes lists the content types uploads may have, as sniffed from
	// their content; others get 415. Default DefaultFileTypes.
	FileTypes []string
	// Scanner, if set, inspects every upload before it is stored (a virus
	// scanner); a *files.RejectedError it returns gets 422 with the
	// reason.
	Scanner files.Scanner
	// Logger receives the gateway's logs. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock (for tests). Default time.Now.
	Now func() time.Time
}

// Gateway turns HTTP requests into protocol events and streams the answers
// back. It is an http.Handler; Run adds the periodic discovery.
type Gateway struct {
	cfg     Config
	bus     Bus
	auth    Authenticator
	threads Threads
	// questions keeps the HITL questions seen and which runs ended.
	questions Questions
	// botVerifier checks bot answers; nil without a BotSecret.
	botVerifier *hitl.Verifier
	limits      *limits
	forward     map[string]bool
	log         *slog.Logger
	reg         registry
	mux         *http.ServeMux
	chats       *openRequests
	// health checks JetStream; nil on a bus without it.
	health *jsHealth
}

// New returns a gateway serving no class until discovery (Discover, Run) or
// AddClass registers some.
func New(cfg Config) (*Gateway, error) {
	if cfg.Bus == nil {
		return nil, errors.New("gateway: Config.Bus is required")
	}
	if cfg.Auth == nil {
		return nil, errors.New("gateway: Config.Auth is required (use gateway.Anonymous for local development)")
	}
	if cfg.Threads == nil {
		cfg.Threads = NewMemoryThreads()
	}
	if cfg.DiscoveryPeriod <= 0 {
		cfg.DiscoveryPeriod = 60 * time.Second
	}
	if cfg.DiscoveryWindow <= 0 {
		cfg.DiscoveryWindow = 10 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Minute
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 15 * time.Second
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 1 << 20
	}
	if cfg.Questions == nil {
		if q, ok := cfg.Threads.(Questions); ok {
			cfg.Questions = q
		} else {
			cfg.Questions = NewMemoryQuestions()
		}
	}
	if cfg.MaxInFlightBody == 0 {
		cfg.MaxInFlightBody = 64 << 20
	}
	if cfg.RateLimit == 0 {
		cfg.RateLimit = 2
	}
	if cfg.RateBurst <= 0 {
		cfg.RateBurst = 10
	}
	if cfg.StatusRateLimit == 0 {
		cfg.StatusRateLimit = 10
	}
	if cfg.StatusBurst <= 0 {
		cfg.StatusBurst = 20
	}
	if cfg.AuthFailureRate == 0 {
		cfg.AuthFailureRate = 0.2
	}
	if cfg.AuthFailureBurst <= 0 {
		cfg.AuthFailureBurst = 10
	}
	if cfg.MaxRunsPerUser == 0 {
		cfg.MaxRunsPerUser = 8
	}
	if cfg.DefaultAgentID == "" {
		cfg.DefaultAgentID = "default"
	}
	if cfg.MaxFileSize <= 0 {
		cfg.MaxFileSize = DefaultMaxFileSize
	}
	if cfg.FileTypes == nil {
		cfg.FileTypes = DefaultFileTypes
	}
	if cfg.Locale == "" {
		cfg.Locale = "de"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	g := &Gateway{
		cfg:       cfg,
		bus:       cfg.Bus,
		auth:      cfg.Auth,
		threads:   cfg.Threads,
		questions: cfg.Questions,
		limits:    newLimits(cfg),
		forward:   make(map[string]bool),
		log:       cfg.Logger,
		reg:       registry{classes: make(map[string]*Class), changed: make(chan struct{})},
		chats:     &openRequests{m: make(map[string]openRequest)},
	}
	if len(cfg.BotSecret) > 0 {
		g.botVerifier = &hitl.Verifier{Secret: cfg.BotSecret, Window: cfg.BotReplayWindow, Now: cfg.Now}
	}
	for _, h := range cfg.ForwardHeaders {
		g.forward[strings.ToLower(h)] = true
	}
	if j, ok := cfg.Bus.(natsbus.JetStreamer); ok && j.JetStream() != nil {
		g.health = &jsHealth{js: j.JetStream(), ttl: healthTTL, room: func() int64 { return 1 << 20 }}
		if mp, ok := cfg.Bus.(interface{ MaxPayload() int }); ok {
			g.health.room = func() int64 { return int64(mp.MaxPayload()) }
		}
		for _, s := range []any{cfg.Threads, cfg.Questions} {
			if p, ok := s.(interface{ probe(context.Context) error }); ok {
				g.health.probe = p.probe
				break
			}
		}
	}
	g.routes()
	return g, nil
}

func (g *Gateway) now() time.Time { return g.cfg.Now() }

func (g *Gateway) routes() {
	m := http.NewServeMux()
	for _, prefix := range []string{
		"/api/v1/{tenant}/agents/classes/{class}/instances/{id}/{event}",
		"/agents/{class}/{id}/{event}",
	} {
		m.HandleFunc("POST "+prefix, g.guard(func(w http.ResponseWriter, r *http.Request) { g.serveAgent(w, r, false) }, false))
		m.HandleFunc("POST "+prefix+"/stream", g.guard(func(w http.ResponseWriter, r *http.Request) { g.serveAgent(w, r, true) }, false))
	}
	for _, prefix := range []string{"/v1", "/api/v1/{tenant}/openai"} {
		m.HandleFunc("POST "+prefix+"/chat/completions", g.guard(g.serveChat, true))
		m.HandleFunc("GET "+prefix+"/models", g.serveModels)
		m.HandleFunc("GET "+prefix+"/models/{model...}", g.serveModel)
		// Anything else under the OpenAI prefix gets an OpenAI-shaped 404
		// or 405, which OpenAI clients can show.
		m.HandleFunc(prefix+"/", g.openAINotFound)
		m.HandleFunc(prefix+"/chat/completions", g.openAINotAllowed("POST"))
		m.HandleFunc(prefix+"/models", g.openAINotAllowed("GET"))
	}
	m.HandleFunc("GET /api/v1/health", g.serveHealth)
	m.HandleFunc("POST /api/v1/bitl/answers", g.serveBotAnswer)
	m.HandleFunc("GET /api/v1/saap/runs/{class}/{run}", g.serveRunStatus)
	m.HandleFunc("POST /api/v1/saap/runs/{class}/{run}/cancel", g.serveRunCancel)
	m.HandleFunc("GET /api/v1/saap/threads/{thread}/runs", g.serveThreadRuns)
	m.HandleFunc("POST /api/v1/saap/files", g.guard(g.serveUpload, false))
	m.HandleFunc("GET /api/v1/saap/files/{file}", g.serveFile)
	m.HandleFunc("DELETE /api/v1/saap/files/{file}", g.serveFileDelete)
	m.HandleFunc("GET /api/v1/saap/threads/{thread}/messages", g.serveThreadMessages)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path), "")
	})
	g.mux = m
}

// ServeHTTP implements http.Handler.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g.cors(w, r) {
		return
	}
	g.mux.ServeHTTP(w, r)
}

// serveHealth answers 200 while the bus is usable and 503 when its
// connection is down or closed, or JetStream is unavailable or out of
// storage (see jsHealth), so a load balancer stops sending requests that
// could only fail and an operator sees why.
func (g *Gateway) serveHealth(w http.ResponseWriter, r *http.Request) {
	if c, ok := g.bus.(natsbus.Conner); ok {
		if nc := c.Conn(); nc == nil || nc.Status() != nats.CONNECTED {
			status := "closed"
			if nc != nil {
				status = strings.ToLower(nc.Status().String())
			}
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "nats": status})
			return
		}
		if g.health != nil {
			if p := g.health.check(r.Context()); p != "" {
				writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "nats": "connected", "jetstream": p})
				return
			}
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "nats": "connected"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// Run runs a discovery cycle every DiscoveryPeriod until ctx is done, then
// returns nil. Meanwhile it watches the discovered classes' HITL requests
// and stops, so questions asked while no request follows their thread can
// still be answered. It does not serve HTTP: mount the gateway on a server of
// your own, or use ListenAndServe.
func (g *Gateway) Run(ctx context.Context) error {
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		g.newQuestionWatch().run(ctx)
	}()
	g.discoverLoop(ctx)
	<-watched
	return nil
}

// ListenAndServe serves the gateway on addr and runs discovery until ctx is
// done, then shuts the server down gracefully (open streams get up to 5 s to
// end) and returns nil. ready, if not nil, is called with the bound address
// once the listener is open (addr may use port 0).
func (g *Gateway) ListenAndServe(ctx context.Context, addr string, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("gateway: listen %s: %w", addr, err)
	}
	if _, anon := g.auth.(anonymous); anon && !g.cfg.AllowAnonymousRemote && !isLoopback(ln.Addr()) {
		_ = ln.Close()
		return fmt.Errorf("gateway: refusing to serve anonymous access on %s, which other machines can reach: "+
			"listen on a loopback address (127.0.0.1), configure authentication, or allow it explicitly (Config.AllowAnonymousRemote)", ln.Addr())
	}
	srv := NewServer(g, g.cfg.Server)
	srv.BaseContext = func(net.Listener) context.Context { return ctx }
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		_ = g.Run(ctx)
	}()
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	if ready != nil {
		ready(ln.Addr())
	}
	var result error
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		result = fmt.Errorf("gateway: serve: %w", err)
	}
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil && result == nil {
		result = fmt.Errorf("gateway: shutdown: %w", err)
	}
	<-loopDone
	return result
}

// errorBody is the JSON of every error answer of the agent endpoints, shaped
// like the reference's FastAPI errors ({"detail": ...}) plus the offending
// field where there is one.
type errorBody struct {
	Detail string `json:"detail"`
	Field  string `json:"field,omitempty"`
}

func writeError(w http.ResponseWriter, status int, detail, field string) {
	writeJSON(w, status, errorBody{Detail: detail, Field: field})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		data = []byte(`{"detail":"gateway: cannot encode the answer"}`)
	}
	writeRaw(w, status, data)
}

func writeRaw(w http.ResponseWriter, status int, data []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

func validToken(name, v string) error {
	if err := topic.ValidateToken(name, v); err != nil {
		return err
	}
	return nil
}
