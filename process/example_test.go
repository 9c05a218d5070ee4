package process_test

import (
	"net/http"

	"github.com/saap-go/agent/store"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/process"
)

// A Submitter's routes behind the gateway's authentication: the caller a
// token names is checked against each request's Who.
func ExampleSubmitter_Handler() {
	var b bus.Bus      // e.g. natsbus.Connect(...)
	var st store.Store // the store the process runners use
	sub, err := process.NewSubmitter(b, st, onboardingProcess())
	if err != nil {
		return
	}
	auth := gateway.StaticTokens(map[string]event.UserIdentity{"secret-token": *manager})
	http.Handle("/processes/", sub.Handler(auth.Authenticate))
}
