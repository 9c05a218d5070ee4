// Command devecho runs the developer tools' test agent (devdemo.Echo) in dev
// mode, for the saap command's process tests.
//
//	devecho -addr 127.0.0.1:0
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
		fmt.Fprintln(os.Stderr, "devecho:", err)
		os.Exit(1)
	}
}
