package redisstore_test

import (
	"context"
	"fmt"
	"os"

	"github.com/saap-go/agent/dispatch"
	"github.com/saap-go/agent/dispatch/redisstore"
)

// Open a store on the Redis named by REDIS_URL and claim a step execution.
func ExampleOpen() {
	ctx := context.Background()
	store, err := redisstore.Open(ctx, os.Getenv("REDIS_URL"), redisstore.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	run := dispatch.RunKey{Class: "RAGAgent", Run: "6650a1b2c3d4e5f601234567"}
	r, err := store.Claim(ctx, run, dispatch.ClaimRequest{Step: "retrieve", Key: "inputs-hash", Max: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Status)
}
