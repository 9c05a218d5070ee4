package dev_test

import (
	"context"
	"log"
	"os"
	"os/signal"

	"github.com/saap-go/agent/dev"
	"github.com/saap-go/agent/internal/devdemo"
)

// Run serves the agents, the gateway and the console on 127.0.0.1:8080
// until Ctrl-C, printing the console's URL, the NATS URL and a curl line.
func ExampleRun() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := dev.Run(ctx, ":8080", &devdemo.Echo{}); err != nil {
		log.Fatal(err)
	}
}
