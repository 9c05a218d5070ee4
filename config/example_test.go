package config_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/config"
	"github.com/saap-go/agent/internal/natsserver"
	"github.com/saap-go/agent/topic"
)

// Settings is an agent's typed configuration.
type Settings struct {
	Model       string  `json:"model"`
	Temperature float64 `json:"temperature"`
}

// Validate lets Merge report bad values by field name.
func (s Settings) Validate() error {
	if s.Temperature < 0 || s.Temperature > 2 {
		return config.Invalid("temperature", "must be between 0 and 2")
	}
	return nil
}

func ExampleLoad() {
	srv, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown()
	b, err := natsbus.Connect(natsbus.Config{URL: srv.URL()})
	if err != nil {
		panic(err)
	}
	defer b.Close()
	ctx := context.Background()

	// The platform's API answers config requests; here a stand-in that
	// stores a temperature for every instance.
	sub, _ := b.Subscribe(ctx, topic.ConfigRequests(topic.KindAgent), "", func(m *bus.Msg) {
		var req config.Request
		_ = json.Unmarshal(m.Data, &req)
		reply, _ := json.Marshal(config.Reply{
			AgentClass: req.AgentClass, AgentID: req.AgentID,
			Config: json.RawMessage(`{"temperature": 0.7}`), Found: true,
		})
		_ = bus.Respond(ctx, b, m, reply, nil)
	})
	defer sub.Unsubscribe()

	defaults := Settings{Model: "gpt-4o", Temperature: 0.2}
	cfg, err := config.Load(ctx, config.NewClient(b), "RAGAgent", "wiki", defaults)
	fmt.Printf("%+v %v\n", cfg, err)

	// Without the platform: the defaults.
	cfg, err = config.Load(ctx, config.Standalone(), "RAGAgent", "wiki", defaults)
	fmt.Printf("%+v %v\n", cfg, err)

	// A value that fails validation is reported by field, not by value.
	_, err = config.Merge(defaults, json.RawMessage(`{"temperature": 9}`))
	fmt.Println(err)
	// Output:
	// {Model:gpt-4o Temperature:0.7} <nil>
	// {Model:gpt-4o Temperature:0.2} <nil>
	// config: invalid configuration: temperature: must be between 0 and 2
}
