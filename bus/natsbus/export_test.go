package natsbus

import "github.com/saap-go/agent/bus"

// Stopping reports whether Stop has begun on c (a Consume result), so a
// test can release a blocked handler only once Stop is waiting for it.
func Stopping(c bus.Consumer) bool { return c.(*consumer).stopping.Load() }

// Probe runs c's check that its consumer still exists on the server, as a
// missed heartbeat does, and waits for its answer.
func Probe(c bus.Consumer) { x := c.(*consumer); x.probe(x.cc); x.probes.Wait() }
