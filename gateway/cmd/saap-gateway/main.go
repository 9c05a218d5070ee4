// Command saap-gateway serves the HTTP gateway for the agents on a NATS
// server: it discovers their classes, serves their endpoints (SSE and
// blocking) and the OpenAI-compatible /v1/chat/completions.
//
// Usage:
//
//	NATS_URL=nats://127.0.0.1:4222 saap-gateway -addr :8080 -tokens tokens.json
//
// tokens.json maps bearer tokens to users:
//
//	{"s3cret": {"id": "ada", "name": "Ada", "email": "ada@example.com", "roles": ["user"]}}
//
// -anonymous accepts every request as one development user instead (never
// expose such a gateway). The NATS connection is configured by NATS_URL (or
// NATS_ENDPOINT), NATS_TOKEN, NATS_CREDS, NATS_NKEY_SEED and NATS_TLS_*.
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
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
)

func main() {
	addr := flag.String("addr", ":8080", "address to serve HTTP on")
	tokens := flag.String("tokens", "", "JSON file mapping bearer tokens to users")
	anonymous := flag.Bool("anonymous", false, "accept every request as a development user (unsafe)")
	period := flag.Duration("discovery-period", 60*time.Second, "time between discovery cycles")
	window := flag.Duration("discovery-window", 10*time.Second, "how long a discovery cycle collects answers")
	timeout := flag.Duration("timeout", 5*time.Minute, "how long a request waits for its terminal event")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(log, *addr, *tokens, *anonymous, *period, *window, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "saap-gateway:", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger, addr, tokens string, anonymous bool, period, window, timeout time.Duration) error {
	auth, err := authenticator(tokens, anonymous)
	if err != nil {
		return err
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
	gw, err := gateway.New(gateway.Config{
		Bus: b, Auth: auth, Logger: log,
		DiscoveryPeriod: period, DiscoveryWindow: window, Timeout: timeout,
	})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return gw.ListenAndServe(ctx, addr, func(a net.Addr) {
		fmt.Printf("saap-gateway listening on http://%s (NATS %s)\n", a, cfg.URL)
	})
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
