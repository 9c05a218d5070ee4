package natsbus

import "github.com/saap-go/agent/bus"

// Stopping reports whether Stop has begun on c (a Consume result), so a
// test can release a blocked handler only once Stop is waiting for it.
func Stopping(c bus.Consumer) bool { return c.(*consumer).stopping.Load() }
