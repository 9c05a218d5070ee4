// Command saap-gateway serves the HTTP gateway for the agents on a NATS
// server: it discovers their classes, serves their endpoints (SSE and
// blocking) and the OpenAI-compatible /v1/chat/completions, and the open
// protocols: AG-UI (POST /agui/{Class}/{agent_id}), MCP over streamable
// HTTP (/mcp), A2A (/a2a/{Class}/{agent_id} and its agent card) and the
// platform UI's WebSocket stream (/events/ws); and the submission routes
// of the process classes found at start (/processes/...).
//
// Usage:
//
//	NATS_URL=nats://127.0.0.1:4222 saap-gateway -addr 127.0.0.1:8080 -tokens tokens.json
//
// tokens.json maps bearer tokens to users:
//
//	{"s3cret": {"id": "ada", "name": "Ada", "email": "ada@example.com", "roles": ["user"]}}
//
// -anonymous accepts every request as one development user instead; it is
// refused on an address other machines can reach unless
// -allow-anonymous-remote is given too. An address without a host (":8080")
// binds to 127.0.0.1. Thread membership and open HITL questions are kept in
// the JetStream key-value bucket -kv-bucket on the agents' NATS server, so
// they survive restarts and are shared by replicas. The NATS connection is
// configured by NATS_URL (or NATS_ENDPOINT), NATS_TOKEN, NATS_CREDS,
// NATS_NKEY_SEED and NATS_TLS_*. SAAP_BOT_SECRET enables the bot answer
// route (POST /api/v1/bitl/answers), and with -bot-webhook URL the
// bot-in-the-loop questions are posted, signed, to URL. -scheduler fires
// the profiles' cron schedules (package schedule; -schedules FILE lists
// them, else they are read from the profiles with -profiles, else from the
// state store). -profiles keeps the agents' profiles in the JetStream
// key-value bucket -profiles-kv-bucket, answers the agents' config RPC from
// them (aihub.rpc.config.agent.*.*, as the platform's API does) and serves
// the admin routes under /api/v1/saap/profiles and /api/v1/saap/schedules
// to users with the -admin-role role (default admin) or is_sys_admin.
// SIGINT or SIGTERM shut the server down gracefully.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/files/objstore"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/gateway/a2a"
	"github.com/saap-go/agent/gateway/agui"
	"github.com/saap-go/agent/gateway/mcp"
	"github.com/saap-go/agent/gateway/ws"
	"github.com/saap-go/agent/hitl"
	"github.com/saap-go/agent/process"
	"github.com/saap-go/agent/schedule"
	"github.com/saap-go/agent/store/natskv"
)

// options are the command's flags.
type options struct {
	addr, tokens, bucket        string
	historyStream               string
	historyAge                  time.Duration
	historyPerThread            int64
	anonymous, anonymousRemote  bool
	period, window, timeout     time.Duration
	rate                        float64
	burst, runs, conns, perAddr int
	cors, forward               string
	botWebhook                  string
	filesBucket                 string
	maxFileSize                 int64
	sched                       schedulerOptions
	profiles                    profileOptions
}

func main() {
	var o options
	flag.StringVar(&o.addr, "addr", "127.0.0.1:8080", "address to serve HTTP on (no host: 127.0.0.1)")
	flag.StringVar(&o.tokens, "tokens", "", "JSON file mapping bearer tokens to users")
	flag.BoolVar(&o.anonymous, "anonymous", false, "accept every request as a development user (unsafe; loopback only)")
	flag.BoolVar(&o.anonymousRemote, "allow-anonymous-remote", false, "allow -anonymous on an address other machines can reach")
	flag.DurationVar(&o.period, "discovery-period", 60*time.Second, "time between discovery cycles")
	flag.DurationVar(&o.window, "discovery-window", 10*time.Second, "how long a discovery cycle collects answers")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "how long a request waits for its terminal event")
	flag.StringVar(&o.bucket, "kv-bucket", gateway.DefaultBucket, "JetStream key-value bucket for threads and questions")
	flag.StringVar(&o.historyStream, "history-stream", gateway.DefaultHistoryStream, "JetStream stream keeping thread history (\"\": keep none)")
	flag.DurationVar(&o.historyAge, "history-max-age", 90*24*time.Hour, "drop thread history older than this (negative: never)")
	flag.Int64Var(&o.historyPerThread, "history-max-per-thread", 10000, "messages of history kept per thread (negative: no bound)")
	flag.Float64Var(&o.rate, "rate", 2, "requests per second each user may send to start runs or answer (negative: no limit)")
	flag.IntVar(&o.burst, "burst", 10, "requests a user may send at once after being idle")
	flag.IntVar(&o.runs, "max-runs-per-user", 8, "requests each user may have open at once (negative: no limit)")
	flag.IntVar(&o.conns, "max-conns", 1024, "connections open at once")
	flag.IntVar(&o.perAddr, "max-conns-per-addr", 64, "connections open at once from one client address (IPv6: per /64; negative: no limit)")
	flag.StringVar(&o.cors, "cors-origins", "", "comma-separated origins allowed by CORS (\"*\": any); default none")
	flag.StringVar(&o.forward, "forward-headers", "", "comma-separated X-AIHub-* request headers passed on to agents; default none")
	flag.StringVar(&o.botWebhook, "bot-webhook", "", "URL the bot-in-the-loop questions are posted to, signed with SAAP_BOT_SECRET")
	flag.StringVar(&o.filesBucket, "files-bucket", "", "JetStream Object Store bucket for the files users upload (POST /api/v1/saap/files); default none: no uploads")
	flag.Int64Var(&o.maxFileSize, "max-file-size", gateway.DefaultMaxFileSize, "largest file users may upload, in bytes")
	o.sched.register(flag.CommandLine)
	o.profiles.register(flag.CommandLine)
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(log, o); err != nil {
		fmt.Fprintln(os.Stderr, "saap-gateway:", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger, o options) error {
	auth, err := authenticator(o.tokens, o.anonymous)
	if err != nil {
		return err
	}
	addr := gateway.LoopbackAddr(o.addr)
	if o.anonymous && !o.anonymousRemote && !loopbackHost(addr) {
		return fmt.Errorf("-anonymous on %s would let anyone who reaches it act as the development user: "+
			"listen on 127.0.0.1, use -tokens, or add -allow-anonymous-remote", addr)
	}
	cfg, err := natsbus.ConfigFromEnv()
	if err != nil {
		return err
	}
	if cfg.URL == "" {
		return errors.New("NATS_URL (or NATS_ENDPOINT) is not set: name the NATS server the agents use")
	}
	cfg.Name, cfg.Logger = "saap-gateway", log
	b, err := natsbus.Connect(cfg)
	if err != nil {
		return err
	}
	defer b.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	storeCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	store, err := gateway.NewKVStore(storeCtx, b.JetStream(), gateway.KVConfig{Bucket: o.bucket})
	if err != nil {
		cancel()
		return err
	}
	var history gateway.History
	if o.historyStream != "" {
		h, err := gateway.NewJetStreamHistory(storeCtx, b.JetStream(), gateway.HistoryConfig{Stream: o.historyStream,
			Limits: gateway.HistoryLimits{MaxAge: o.historyAge, MaxPerThread: o.historyPerThread}})
		if err != nil {
			cancel()
			return err
		}
		history = h
	}
	cancel()
	gcfg := gateway.Config{
		Bus: b, Auth: auth, Logger: log, Threads: store, History: history,
		DiscoveryPeriod: o.period, DiscoveryWindow: o.window, Timeout: o.timeout,
		RateLimit: o.rate, RateBurst: o.burst, MaxRunsPerUser: o.runs,
		ForwardHeaders:       list(o.forward),
		Server:               gateway.ServerConfig{MaxConns: o.conns, MaxConnsPerAddr: o.perAddr},
		AllowAnonymousRemote: o.anonymousRemote,
	}
	if o.filesBucket != "" {
		filesCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		fs, err := objstore.New(filesCtx, b.JetStream(), objstore.Config{Bucket: o.filesBucket})
		cancel()
		if err != nil {
			return err
		}
		gcfg.Files, gcfg.MaxFileSize = fs, o.maxFileSize
	}
	// The secret comes from the environment, not a flag: flags show in ps.
	if secret := os.Getenv("SAAP_BOT_SECRET"); secret != "" {
		gcfg.BotSecret = []byte(secret)
		if o.botWebhook != "" {
			gcfg.Bot = &hitl.Webhook{URL: o.botWebhook, Secret: gcfg.BotSecret}
		}
	} else if o.botWebhook != "" {
		return errors.New("-bot-webhook needs SAAP_BOT_SECRET, the secret the questions and answers are signed with")
	}
	if origins := list(o.cors); len(origins) > 0 {
		gcfg.CORS = &gateway.CORS{AllowOrigins: origins, MaxAge: 10 * time.Minute}
	}
	gw, err := gateway.New(gcfg)
	if err != nil {
		return err
	}
	agui.Mount(gw)
	mcp.Mount(gw, mcp.Options{})
	ws.Mount(gw, ws.Options{})
	a2a.Mount(gw, a2a.Config{})
	if err := mountProcesses(ctx, gw, b, o.window, log); err != nil {
		return err
	}
	prof, err := startProfiles(ctx, gw, b, &o.profiles, log)
	if err != nil {
		return err
	}
	var profileSource schedule.Source
	if prof != nil {
		profileSource = prof
	}
	if err := startScheduler(ctx, b, &o.sched, profileSource, log); err != nil {
		return err
	}
	return gw.ListenAndServe(ctx, addr, func(a net.Addr) {
		fmt.Printf("saap-gateway listening on http://%s (NATS %s)\n", a, cfg.URL)
	})
}

// mountProcesses serves the submission routes of the process classes that
// answer discovery at start, with the callers checked against each work
// request. Processes started later need a restart of the gateway.
func mountProcesses(ctx context.Context, gw *gateway.Gateway, b *natsbus.Bus, wait time.Duration, log *slog.Logger) error {
	answers, err := process.Discover(ctx, b, wait)
	if err != nil {
		return fmt.Errorf("discover processes: %w", err)
	}
	if len(answers) == 0 {
		return nil
	}
	st, err := natskv.New(ctx, b.JetStream(), natskv.Config{})
	if err != nil {
		return fmt.Errorf("process state store: %w", err)
	}
	sub, err := process.NewSubmitterFromDiscovery(b, st, answers...)
	if err != nil {
		return err
	}
	identify := func(r *http.Request) (*event.UserIdentity, error) {
		if u, ok := gateway.UserFrom(r.Context()); ok {
			return u, nil
		}
		return nil, gateway.ErrUnauthenticated
	}
	gw.Mount("/processes/", gw.Guard(sub.Handler(identify), nil))
	log.Info("saap-gateway: process submissions", "classes", sub.Classes())
	return nil
}

// loopbackHost reports whether addr's host is a loopback IP or localhost.
func loopbackHost(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func list(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func authenticator(tokens string, anonymous bool) (gateway.Authenticator, error) {
	switch {
	case tokens != "" && anonymous:
		return nil, errors.New("-tokens and -anonymous exclude each other")
	case anonymous:
		return gateway.Anonymous(event.UserIdentity{ID: "dev-user", Name: "Developer", Email: "dev@localhost", Roles: []string{"user"}}), nil
	case tokens == "":
		return nil, errors.New("no authentication: give -tokens FILE (or -anonymous for local development)")
	}
	data, err := os.ReadFile(tokens)
	if err != nil {
		return nil, err
	}
	var users map[string]event.UserIdentity
	if err := json.Unmarshal(data, &users); err != nil {
		return nil, fmt.Errorf("%s: %w", tokens, err)
	}
	for tok, u := range users {
		if tok == "" || u.ID == "" {
			return nil, fmt.Errorf("%s: every entry needs a token and a user id", tokens)
		}
	}
	return gateway.StaticTokens(users), nil
}
