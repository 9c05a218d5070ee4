package profiles_test

import (
	"context"
	"log"

	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/gateway/profiles"
	"github.com/saap-go/agent/schedule"
	"github.com/saap-go/agent/store/natskv"
)

// A gateway that keeps the agents' profiles: it answers their config RPC,
// serves the admin routes and fires the profiles' schedules. (It needs a
// NATS server, so it does not run as a test.)
func Example() {
	ctx := context.Background()
	b, err := natsbus.Connect(natsbus.Config{URL: "nats://127.0.0.1:4222"})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	st, err := profiles.NewStore(ctx, b.JetStream(), profiles.StoreConfig{})
	if err != nil {
		log.Fatal(err)
	}
	resp, err := profiles.Serve(ctx, b, st, profiles.ResponderOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = resp.Stop() }()

	gw, err := gateway.New(gateway.Config{Bus: b, Auth: gateway.TokenFunc(lookupUser)})
	if err != nil {
		log.Fatal(err)
	}
	if err := profiles.Mount(gw, profiles.Options{Store: st, Admin: profiles.AdminRole("platform-admin")}); err != nil {
		log.Fatal(err)
	}

	state, err := natskv.New(ctx, b.JetStream(), natskv.Config{})
	if err != nil {
		log.Fatal(err)
	}
	s, err := schedule.New(schedule.Config{Bus: b, Store: state, Source: st})
	if err != nil {
		log.Fatal(err)
	}
	go func() { _ = s.Run(ctx) }()
	_ = gw.ListenAndServe(ctx, "127.0.0.1:8080", nil)
}

// lookupUser stands for a real token verifier (an OIDC introspection).
func lookupUser(_ context.Context, token string) (*event.UserIdentity, error) {
	return nil, gateway.ErrUnauthenticated
}
