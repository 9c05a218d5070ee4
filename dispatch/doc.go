// Package dispatch is the engine that turns arriving control events into
// step executions (spec/dispatch.md), independent of the transport: it runs
// on the bus interfaces of package bus and keeps shared state behind Store.
//
// State: a Store holds idempotency claims, execution counters, markers and
// the run and thread contexts, all namespaced by agent class (D5). The
// in-memory MemoryStore serves tests and single-process use; shared stores
// (NATS KV, Redis) must pass the conformance suite in package storetest.
package dispatch
