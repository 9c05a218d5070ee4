package natskv_test

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/saap-go/agent/internal/natsserver"
	"github.com/saap-go/agent/store"
	"github.com/saap-go/agent/store/natskv"
)

func ExampleNew() {
	srv, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown()
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)

	ctx := context.Background()
	st, err := natskv.New(ctx, js, natskv.Config{})
	if err != nil {
		panic(err)
	}
	run := store.RunKey{Class: "RAGAgent", Run: "6650a1b2c3d4e5f601234567"}
	first, _ := st.Claim(ctx, run, store.ClaimRequest{Step: "retrieve", Key: "inputs-hash", Max: 3})
	again, _ := st.Claim(ctx, run, store.ClaimRequest{Step: "retrieve", Key: "inputs-hash", Max: 3})
	fmt.Println(first.Status, first.Count)
	fmt.Println(again.Status, again.Count)
	// Output:
	// claimed 1
	// pending 1
}
