// Command devmode runs an agent in dev mode: the agent, the HTTP gateway and
// the dev console in one process, on an embedded NATS server (or NATS_URL).
//
//	go run ./examples/devmode                # serves on 127.0.0.1:8080
//	go run ./examples/devmode -addr :9090
//
// It prints the console's URL, the NATS URL for the saap command, and a
// curl line. Stop it with Ctrl-C.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/saap-go/agent/dev"
	"github.com/saap-go/agent/internal/devdemo"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "where the gateway and the console listen (loopback only; port 0 picks one)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := dev.Run(ctx, *addr, &devdemo.Echo{}); err != nil {
		fmt.Fprintln(os.Stderr, "devmode:", err)
		os.Exit(1)
	}
}
