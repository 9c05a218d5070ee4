// Package faults is the SDK's fault suite: it starts real processes (a
// nats-server that is killed and restarted, a three-node NATS cluster that
// loses a node, the agent under test and its replicas, a TCP
// proxy that cuts the state store off, the gateway) and checks that under
// each fault nothing is lost and nothing is duplicated: every run ends,
// completed or with an ExceptionEvent and a dead letter; no event id is in
// the stream twice; no connection is left closed.
//
// The package holds only tests and the helper commands they build. By
// default the scenarios use short numbers, so that `go test ./...` stays
// quick; -faults.long runs the full ones (200 runs, a 60 s store outage):
//
//	go test ./faults -v -faults.long
//
// `go test -short` skips the suite; so does a machine without the go
// command (the helpers are built with it).
package faults
