// Package memory is an in-memory bus.Bus with the observable semantics of
// NATS and JetStream, for tests and for running steps without a server.
//
// It keeps per-stream sequences, matches subjects exactly as NATS does
// (a published literal "*" token is matched only by "*" or ">" in a
// pattern), shares core messages among queue-group members, and gives
// durable consumers their positions, ack waits, Nak delays, MaxDeliver and
// MaxAckPending. Stream publishes are de-duplicated on their msg id within
// the stream's window, and reach core subscribers too, as on a server.
// It passes the same conformance suite (package bustest) as the NATS bus.
//
// Time comes from a Clock. With a *ManualClock nothing expires until the
// test calls Advance, so redelivery tests need no sleeps:
//
//	clk := memory.NewManualClock(time.Unix(0, 0))
//	b := memory.New(memory.Options{Clock: clk})
//	...
//	clk.Advance(30 * time.Second) // ack waits expire; redeliveries start
//
// By default deliveries run on goroutines, one per subscription or
// consumer member, serially, as nats.go runs callbacks. With Manual set,
// nothing is delivered until the test calls Deliver (one delivery, core or
// durable, in global publish order, in the calling goroutine) or DeliverAll.
// A handler may publish, settle or subscribe while it runs: what it causes
// is queued behind what is pending. This makes a whole agent run a
// deterministic sequence of calls:
//
//	b := memory.New(memory.Options{Clock: clk, Manual: true})
//	... publish a start event ...
//	for b.Deliver(ctx) {
//		// inspect state between deliveries
//	}
//
// Request on a Manual bus calls the responders at once in the calling
// goroutine, since a caller blocked in Request could not call Deliver.
//
// A publish is copied once; the stream, subscribers, deliveries and NextMsg
// then share that copy's header and data, so receivers must treat them as
// read-only (see bus.Msg), as they should on any bus.
package memory
