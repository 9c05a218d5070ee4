package agent_test

import (
	"strings"
	"testing"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/config"
	"github.com/saap-go/agent/event"
)

// answeredText returns the text of the run's Answered event in the stream:
// the configuration the step saw.
func answeredText(t *testing.T, c bus.Bus, class, run string) string {
	t.Helper()
	for _, e := range controlEvents(t, c, class, run) {
		if a, ok := e.(*Answered); ok {
			return a.Text
		}
	}
	t.Fatal("no Answered in the stream")
	return ""
}

// With neither NATS_URL nor NATS_ENDPOINT the runner starts its own
// embedded server, which no platform can reach: it is standalone without
// being told, and runs use the defaults.
func TestEmbeddedServerIsStandalone(t *testing.T) {
	noExternal(t)
	t.Setenv(agent.EnvStandalone, "")
	class := uniqueClass("AutoStandalone")
	r := startRunner(t, &standaloneConfigured{&configured{linear{class: class}}}, quiet(t))
	if i := r.Info(); !i.Embedded || !i.Standalone {
		t.Fatalf("Info %+v, want the embedded server, standalone", i)
	}
	c := client(t, r.Info().NATSURL)
	w := watch(t, c, class)
	run := newRun(class, "wiki")
	publish(t, c, run, userMessage("hi"), nil)
	if term := w.terminal(t, run.Run); !event.IsStop(term) {
		t.Fatalf("terminal %s; events %s (want the defaults, no config request)", event.Name(term), names(w.of(run.Run)))
	}
	if got := answeredText(t, c, class, run.Run); !strings.Contains(got, `"model":"gpt-default"`) {
		t.Errorf("step saw %s, want the defaults", got)
	}
}

// Joined to a NATS server where no platform answers the configuration
// request, the run ends with an ExceptionEvent that says so and names the
// remedies.
func TestNoConfigResponderNamesRemedy(t *testing.T) {
	t.Setenv(agent.EnvStandalone, "")
	s := embedded(t) // started apart and passed as a URL: not the embedded default
	c := client(t, s.URL())
	class := uniqueClass("NoPlatform")
	w := watch(t, c, class)
	r := startRunner(t, &configured{linear{class: class}}, agent.WithNATS(s.URL()), quiet(t))
	if r.Info().Standalone {
		t.Fatalf("Info %+v: a runner joined to a NATS server is not standalone by itself", r.Info())
	}
	run := newRun(class, "wiki")
	publish(t, c, run, userMessage("hi"), nil)
	term := w.terminal(t, run.Run)
	exc, ok := term.(*event.ExceptionEvent)
	if !ok {
		t.Fatalf("terminal %s, want an ExceptionEvent", event.Name(term))
	}
	for _, want := range []string{"no platform answered", "agent.Standalone()", agent.EnvStandalone + "=1"} {
		if !strings.Contains(exc.Message, want) {
			t.Errorf("exception %q does not contain %q", exc.Message, want)
		}
	}
}

// SAAP_STANDALONE=1 makes a runner joined to a real server standalone.
func TestStandaloneEnv(t *testing.T) {
	t.Setenv(agent.EnvStandalone, "1")
	s := embedded(t)
	c := client(t, s.URL())
	class := uniqueClass("EnvStandalone")
	reqs := respondConfig(t, c, class, func(req config.Request) any { return found(req, map[string]any{"model": "remote"}) })
	w := watch(t, c, class)
	r := startRunner(t, &standaloneConfigured{&configured{linear{class: class}}}, agent.WithNATS(s.URL()), quiet(t))
	if !r.Info().Standalone {
		t.Errorf("Info %+v, want standalone", r.Info())
	}
	run := newRun(class, "x")
	publish(t, c, run, userMessage("hi"), nil)
	if term := w.terminal(t, run.Run); !event.IsStop(term) {
		t.Fatalf("terminal %s", names(w.of(run.Run)))
	}
	if got := answeredText(t, c, class, run.Run); !strings.Contains(got, `"model":"gpt-default"`) {
		t.Errorf("step saw %s, want the defaults", got)
	}
	if len(*reqs) != 0 {
		t.Errorf("runner sent %d config requests with %s=1", len(*reqs), agent.EnvStandalone)
	}
}
