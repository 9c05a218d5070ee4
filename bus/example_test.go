package bus_test

import (
	"context"
	"fmt"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

func ExamplePublishEvent() {
	ctx := context.Background()
	b := memory.New(memory.Options{Manual: true})
	defer b.Close()
	_ = b.EnsureStream(ctx, bus.AgentStream("Echo"))
	_, _ = b.Subscribe(ctx, topic.StreamSubject("Echo"), "", func(m *bus.Msg) {
		t, _ := topic.ParseAgent(m.Subject)
		fmt.Println(t.Type, t.Name)
	})

	run := topic.Agent{Class: "Echo", ID: "default", Thread: "t1", Display: "d1", Run: "r1"}
	stop := &event.StopEvent{}
	stop.EventID = "65f1c0de0000000000000001"
	ack, err := bus.PublishEvent(ctx, b, run, stop, nil) // control and display: both, control first
	if err != nil {
		panic(err)
	}
	fmt.Println("stored as", ack.Stream, ack.Seq)
	b.DeliverAll(ctx)
	// Output:
	// stored as agent_Echo_stream 1
	// control_event StopEvent
	// display_event StopEvent
}
