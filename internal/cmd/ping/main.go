// Command ping checks that a NATS server (with JetStream) and a Redis server
// answer, so that CI fails early and clearly when a service is down.
//
// Usage: ping NATS_URL REDIS_URL
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: ping NATS_URL REDIS_URL")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := pingNATS(ctx, os.Args[1]); err != nil {
		fmt.Fprintf(os.Stderr, "NATS at %s does not answer: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	if err := pingRedis(ctx, os.Args[2]); err != nil {
		fmt.Fprintf(os.Stderr, "Redis at %s does not answer: %v\n", os.Args[2], err)
		os.Exit(1)
	}
}

func pingNATS(ctx context.Context, url string) error {
	nc, err := nats.Connect(url, nats.Timeout(5*time.Second))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	info, err := js.AccountInfo(ctx)
	if err != nil {
		return fmt.Errorf("JetStream: %w", err)
	}
	fmt.Printf("NATS %s answers (server %s, JetStream streams %d)\n", url, nc.ConnectedServerVersion(), info.Streams)
	return nil
}

func pingRedis(ctx context.Context, url string) error {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return err
	}
	c := redis.NewClient(opt)
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		return err
	}
	fmt.Printf("Redis %s answers\n", url)
	return nil
}
