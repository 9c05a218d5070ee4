// Package bustest is the conformance suite every bus.Bus passes, and test
// helpers that give other packages a bus.
//
// Run the suite against an implementation, one subtest per behaviour
// (TestConformance/<impl>/durable/max-deliver, ...):
//
//	func TestConformance(t *testing.T) {
//		t.Run("memory", func(t *testing.T) {
//			bustest.Run(t, bustest.Harness{
//				Features: bustest.AllFeatures(),
//				New: func(t *testing.T, o bustest.Options) *bustest.Target {
//					clk := memory.NewManualClock(time.Now())
//					return &bustest.Target{
//						Bus:     memory.New(memory.Options{Clock: clk, DeadLetters: o.DeadLetters}),
//						Advance: clk.Advance,
//					}
//				},
//			})
//		})
//	}
//
// On buses with a clock (Target.Advance) the suite moves time; on real
// servers it waits for short ack waits (Harness.RealTime, 300 ms). Every
// subtest uses unique stream and subject names and deletes its streams,
// so it can run against a shared server, and checks for leaked goroutines.
// Features lists what an implementation or server version supports;
// missing ones skip their subtests with the reason.
//
// For tests of other packages: NewMemory (in-memory bus), NewNATS (a bus on
// a fresh embedded nats-server) and NewExternalNATS (the server of
// NATS_URL, or a skip).
package bustest
