package dev

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/saap-go/agent"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/internal/natsserver"
	_ "github.com/saap-go/agent/store/redis" // dev mode honours REDIS_URL as agents do
)

// User is the identity the dev gateway gives every request.
var User = event.UserIdentity{ID: "dev-user", Name: "Developer", Email: "dev@localhost", Roles: []string{"user"}}

// Instance is the agent_id the printed curl line and the console address.
const Instance = "dev"

// Config configures Start. The zero value serves on 127.0.0.1:8080.
type Config struct {
	// Addr is where the gateway and console listen. An address without a
	// host (":8080") binds to 127.0.0.1; port 0 picks a free port.
	// Default "127.0.0.1:8080".
	Addr string
	// Out receives the banner printed at start. Default os.Stderr; io.Discard
	// silences it.
	Out io.Writer
	// Logger receives the runners' and the gateway's logs. Default: warnings
	// and errors to stderr.
	Logger *slog.Logger
	// Options are added to every agent's runner (after the dev mode's own:
	// the NATS server and Standalone).
	Options []agent.Option
}

// Server is a running dev environment: the NATS server, the agents'
// runners, the gateway and the console.
type Server struct {
	url     string
	natsURL string
	classes []string
	gw      *gateway.Gateway
	bus     *natsbus.Bus
	stop    context.CancelFunc
	done    chan struct{}
	closers []func()
	err     error
}

// Run starts the agents with Start and serves until ctx is done, then shuts
// everything down and returns nil, or the error that stopped it early.
func Run(ctx context.Context, addr string, agents ...agent.Agent) error {
	s, err := Start(ctx, Config{Addr: addr}, agents...)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-s.done:
	}
	return s.Close()
}

// Start starts the NATS server (unless NATS_URL names one), runs every
// agent, waits until the gateway has discovered each class, and serves the
// gateway and the console on c.Addr. It returns once everything answers;
// Close stops it. ctx bounds the start only.
func Start(ctx context.Context, c Config, agents ...agent.Agent) (s *Server, err error) {
	if len(agents) == 0 {
		return nil, errors.New("dev: no agent given")
	}
	if c.Addr == "" {
		c.Addr = "127.0.0.1:8080"
	}
	if c.Out == nil {
		c.Out = os.Stderr
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s = &Server{stop: stop, done: make(chan struct{})}
	defer func() {
		if err != nil {
			_ = s.Close()
		}
	}()

	cfg, err := natsbus.ConfigFromEnv()
	if err != nil {
		return s, fmt.Errorf("dev: NATS settings: %w", err)
	}
	if cfg.URL == "" {
		srv, err := natsserver.Start(natsserver.Options{})
		if err != nil {
			return s, fmt.Errorf("dev: embedded NATS server: %w", err)
		}
		s.closers = append(s.closers, srv.Shutdown)
		cfg = natsbus.Config{URL: srv.URL()}
	}
	s.natsURL = cfg.URL

	// Every runner joins the same server; each stops when runCtx ends.
	for _, a := range agents {
		opts := append([]agent.Option{agent.WithNATS(cfg.URL), agent.Standalone(), agent.WithLogger(c.Logger)}, c.Options...)
		r, err := agent.New(a, opts...)
		if err != nil {
			return s, fmt.Errorf("dev: %w", err)
		}
		ended := make(chan error, 1)
		go func() { ended <- r.Run(runCtx) }()
		s.closers = append(s.closers, func() {
			stop()
			if err := <-ended; err != nil {
				c.Logger.Error("dev: agent runner", "class", r.Class(), "err", err)
			}
		})
		select {
		case <-r.Ready():
		case err := <-ended:
			ended <- err
			return s, fmt.Errorf("dev: agent %s: %w", r.Class(), err)
		case <-ctx.Done():
			return s, ctx.Err()
		}
		s.classes = append(s.classes, r.Class())
	}

	cfg.Name, cfg.Logger = "saap-dev-gateway", c.Logger
	if s.bus, err = natsbus.Connect(cfg); err != nil {
		return s, fmt.Errorf("dev: gateway: %w", err)
	}
	s.closers = append(s.closers, func() { _ = s.bus.Close() })
	s.gw, err = gateway.New(gateway.Config{
		Bus: s.bus, Auth: gateway.Anonymous(User), Logger: c.Logger,
		// The console reopens a thread of the timeline with its history.
		History: gateway.NewMemoryHistory(gateway.HistoryLimits{}),
		// One developer clicking around is no abuse to guard against.
		RateLimit: -1, MaxRunsPerUser: -1,
		DiscoveryWindow: 2 * time.Second,
	})
	if err != nil {
		return s, err
	}
	if _, err := s.gw.Discover(ctx, s.classes...); err != nil {
		return s, fmt.Errorf("dev: discovering the agents: %w", err)
	}

	ln, err := net.Listen("tcp", gateway.LoopbackAddr(c.Addr))
	if err != nil {
		return s, fmt.Errorf("dev: listen %s: %w", c.Addr, err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		_ = ln.Close()
		return s, fmt.Errorf("dev: refusing to serve on %s, which other machines can reach: dev mode lets anyone in; use a loopback address", ln.Addr())
	}
	s.url = "http://" + ln.Addr().String()
	srv := gateway.NewServer(s.handler(), gateway.ServerConfig{})
	srv.BaseContext = func(net.Listener) context.Context { return runCtx }
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	gwDone := make(chan struct{})
	go func() { defer close(gwDone); _ = s.gw.Run(runCtx) }()
	go func() {
		select {
		case err := <-served:
			s.err = fmt.Errorf("dev: serve: %w", err)
			close(s.done)
		case <-runCtx.Done():
		}
	}()
	// Closed in reverse: the HTTP server first, then the bus and runners.
	s.closers = append(s.closers, func() {
		stop()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
		<-gwDone
	})
	s.banner(c.Out)
	return s, nil
}

func (s *Server) banner(w io.Writer) {
	fmt.Fprintf(w, "saap dev: %s\n", strings.Join(s.classes, ", "))
	fmt.Fprintf(w, "  console  %s/dev/\n", s.url)
	fmt.Fprintf(w, "  gateway  %s\n", s.url)
	fmt.Fprintf(w, "  NATS     %s   (NATS_URL=%s saap agents)\n", s.natsURL, s.natsURL)
	fmt.Fprintf(w, "  try      %s\n", s.Curl(s.classes[0]))
}

// Curl is a curl command line that sends "Hello" to class through the
// gateway's streaming endpoint.
func (s *Server) Curl(class string) string {
	return fmt.Sprintf(`curl -N %s/agents/%s/%s/UserMessageEvent/stream -d '{"messages":[{"role":"user","content":"Hello"}]}'`, s.url, class, Instance)
}

// URL is the gateway's base URL, e.g. http://127.0.0.1:8080.
func (s *Server) URL() string { return s.url }

// ConsoleURL is the dev console's URL.
func (s *Server) ConsoleURL() string { return s.url + "/dev/" }

// NATSURL is the NATS server the agents and the gateway use.
func (s *Server) NATSURL() string { return s.natsURL }

// Classes are the agent classes served, in the order given.
func (s *Server) Classes() []string { return append([]string(nil), s.classes...) }

// Gateway is the gateway serving the agents.
func (s *Server) Gateway() *gateway.Gateway { return s.gw }

// Close stops the HTTP server, the gateway, the runners and the embedded
// NATS server, and waits for them. It returns the error that stopped the
// server early, if any.
func (s *Server) Close() error {
	s.stop()
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}
