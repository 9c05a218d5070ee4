package process_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/process"
	"github.com/saap-go/agent/step"
)

type welcomeConfig struct {
	Prefix string `json:"prefix"`
}

// welcomeProcess ends at once with an account named after its
// configuration.
func welcomeProcess() *process.Process {
	begin := step.New(func(ctx step.Context, a *Application) (*Onboarded, error) {
		cfg, err := process.Config[welcomeConfig](ctx)
		if err != nil {
			return nil, err
		}
		return &Onboarded{Account: cfg.Prefix + a.Applicant}, nil
	}, step.Name("Begin"))
	return &process.Process{Class: "Welcome", Steps: []*step.Step{begin}}
}

func TestConfiguration(t *testing.T) {
	t.Run("from the platform", func(t *testing.T) {
		h := agenttest.NewProcess(t, welcomeProcess())
		var asked string
		_, err := h.Bus().Subscribe(context.Background(), "aihub.rpc.config.process.Welcome.acme", "", func(m *bus.Msg) {
			asked = string(m.Data)
			_ = bus.Respond(context.Background(), h.Bus(), m,
				[]byte(`{"process_class": "Welcome", "process_id": "acme", "config": {"prefix": "rpc-"}, "found": true, "error": null}`), nil)
		})
		if err != nil {
			t.Fatal(err)
		}
		w := h.Start("acme", &Application{Applicant: "ada"})
		stop, _ := w.Terminal()
		if o, ok := stop.(*Onboarded); !ok || o.Account != "rpc-ada" {
			t.Fatalf("ended with %#v", stop)
		}
		agenttest.Equal(t, asked, `{"process_class":"Welcome","process_id":"acme"}`)
	})
	t.Run("from the start event when nobody answers", func(t *testing.T) {
		h := agenttest.NewProcess(t, welcomeProcess())
		a := &Application{Applicant: "bob"}
		a.ProcessConfig = map[string]json.RawMessage{"prefix": json.RawMessage(`"start-"`)}
		w := h.Start("acme", a)
		stop, _ := w.Terminal()
		if o, ok := stop.(*Onboarded); !ok || o.Account != "start-bob" {
			t.Fatalf("ended with %#v", stop)
		}
	})
}
