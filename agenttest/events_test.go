package agenttest_test

import "github.com/saap-go/agent/event"

// Flow carriers and payload events of the scenarios.
type (
	A struct {
		event.ControlEvent
		N int `json:"n,omitempty"`
	}
	B struct{ event.ControlEvent }
	C struct{ event.ControlEvent }
	D struct{ event.ControlEvent }
	R struct {
		event.ControlEvent
		N int `json:"n,omitempty"`
	}
	W struct {
		event.ControlEvent
		N int `json:"n,omitempty"`
	}
	X struct{ event.ControlEvent }
	Y struct {
		event.ControlEvent
		Len int `json:"len"`
	}
	P struct{ event.ControlEvent }
	// MyStart and MyStop are custom lifecycle events (scenario 2).
	MyStart struct {
		event.StartEvent
		Payload string `json:"payload"`
	}
	MyStop struct {
		event.StopEvent
		Payload string `json:"payload"`
	}
	// Disp is a display-only event (scenario 25).
	Disp struct {
		event.DisplayEvent
		Text string `json:"text"`
	}
)

func init() {
	event.MustRegister[A]()
	event.MustRegister[B]()
	event.MustRegister[C]()
	event.MustRegister[D]()
	event.MustRegister[R]()
	event.MustRegister[W]()
	event.MustRegister[X]()
	event.MustRegister[Y]()
	event.MustRegister[P]()
	event.MustRegister[MyStart]()
	event.MustRegister[MyStop]()
	event.MustRegister[Disp]()
}
