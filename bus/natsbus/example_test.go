package natsbus_test

import (
	"context"
	"fmt"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/internal/natsserver"
)

func ExampleConnect() {
	s, err := natsserver.Start(natsserver.Options{}) // or a real server from natsbus.ConfigFromEnv()
	if err != nil {
		panic(err)
	}
	defer s.Shutdown()
	b, err := natsbus.Connect(natsbus.Config{URL: s.URL()})
	if err != nil {
		panic(err)
	}
	defer b.Close()

	ctx := context.Background()
	_ = b.EnsureStream(ctx, bus.AgentStream("Echo"))
	done := make(chan struct{})
	c, _ := b.Consume(ctx, bus.RunnerConsumer("Echo"), func(d bus.Delivery) {
		fmt.Printf("%s #%d\n", d.Msg().Data, d.Seq())
		_ = d.Ack(ctx)
		close(done)
	})
	defer c.Stop()
	_, _ = b.PublishStream(ctx, &bus.Msg{
		Subject: "agent.Echo.a.t.d.r.control_event.StartEvent.e1",
		Data:    []byte(`{"event_id":"e1"}`),
	}, "e1")
	<-done
	// Output: {"event_id":"e1"} #1
}
