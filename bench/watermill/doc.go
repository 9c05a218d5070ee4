// Package watermill holds benchmarks only: Watermill routers doing the
// three hops of a 3-step run, measured in the same run as this SDK's
// runtime and a raw nats.go loop. It is its own module so that users of
// the SDK do not inherit Watermill.
//
//	cd bench/watermill && go test -run '^$' -bench . -benchtime 2000x
package watermill
