// Command saap-mcp serves the agents on a NATS server to an MCP host
// (Claude Desktop, an IDE) over stdio: the host starts it, and every agent
// class becomes a tool, called as one configured user.
//
// Usage (in the host's MCP server configuration):
//
//	NATS_URL=nats://127.0.0.1:4222 saap-mcp -user-id ada -user-name Ada -user-email ada@example.com -agent-id default
//
// It discovers the classes once at start (-discovery-window), then serves
// until the host closes its standard input. The NATS connection is
// configured as for saap-gateway (NATS_URL, NATS_TOKEN, NATS_CREDS, ...).
// Logs go to standard error: standard output carries the protocol.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/gateway/mcp"
)

func main() {
	var user event.UserIdentity
	var agentID string
	var window time.Duration
	flag.StringVar(&user.ID, "user-id", "", "id of the user the tool calls are made as (required)")
	flag.StringVar(&user.Name, "user-name", "", "that user's name")
	flag.StringVar(&user.Email, "user-email", "", "that user's email")
	flag.StringVar(&agentID, "agent-id", "default", "agent id the tools address")
	flag.DurationVar(&window, "discovery-window", 5*time.Second, "how long discovery collects the classes' answers")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(log, &user, agentID, window); err != nil {
		fmt.Fprintln(os.Stderr, "saap-mcp:", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger, user *event.UserIdentity, agentID string, window time.Duration) error {
	if user.ID == "" {
		return errors.New("-user-id is required: the tool calls act as that user")
	}
	user.Roles = []string{"user"}
	cfg, err := natsbus.ConfigFromEnv()
	if err != nil {
		return err
	}
	if cfg.URL == "" {
		return errors.New("NATS_URL (or NATS_ENDPOINT) is not set: name the NATS server the agents use")
	}
	cfg.Name, cfg.Logger = "saap-mcp", log
	b, err := natsbus.Connect(cfg)
	if err != nil {
		return err
	}
	defer b.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	gw, err := gateway.New(gateway.Config{Bus: b, Auth: gateway.Anonymous(*user), Logger: log, DiscoveryWindow: window})
	if err != nil {
		return err
	}
	names, err := gw.Discover(ctx)
	if err != nil {
		return err
	}
	log.Info("saap-mcp: serving over stdio", "classes", names)
	return mcp.ServeStdio(ctx, gw, user, mcp.Options{AgentID: agentID})
}
