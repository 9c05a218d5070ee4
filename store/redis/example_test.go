package redis_test

import (
	"context"
	"fmt"
	"os"

	"github.com/saap-go/agent/store"
	redisstore "github.com/saap-go/agent/store/redis"
)

// Open a store on the Redis named by REDIS_URL and claim a step execution.
func ExampleOpen() {
	ctx := context.Background()
	st, err := redisstore.Open(ctx, os.Getenv("REDIS_URL"), redisstore.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	run := store.RunKey{Class: "RAGAgent", Run: "6650a1b2c3d4e5f601234567"}
	r, err := st.Claim(ctx, run, store.ClaimRequest{Step: "retrieve", Key: "inputs-hash", Max: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Status)
}
