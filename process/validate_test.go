package process_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/process"
	"github.com/saap-go/agent/step"
)

func TestValidationHints(t *testing.T) {
	var o onboarding
	cases := []struct {
		name  string
		p     *process.Process
		check step.Check
		want  string
	}{
		{"a step taking a control event", &process.Process{Class: "Bad", Steps: []*step.Step{
			step.New(o.Begin), step.New(func(ctx step.Context, s *CheckStop) (*Onboarded, error) { return nil, nil }, step.Name("Odd")),
		}, Routes: onboardingProcess().Routes[:1]}, step.CheckDisplayInput, "CheckStop"},
		{"no start", &process.Process{Class: "Bad", Steps: []*step.Step{step.New(o.Created)},
			Routes: nil}, step.CheckNoStart, "ProcessStartEvent"},
		{"a step taking the stop", &process.Process{Class: "Bad", Steps: []*step.Step{
			step.New(o.Begin), step.New(func(ctx step.Context, s *Onboarded) (*Rejected, error) { return nil, nil }, step.Name("After")),
		}, Routes: onboardingProcess().Routes[:1]}, step.CheckStopInput, "Onboarded"},
		{"work nobody asks for", &process.Process{Class: "Bad", Steps: []*step.Step{
			step.New(func(ctx step.Context, a *Application) (*Onboarded, error) { return nil, nil }, step.Name("Begin")),
			step.New(o.Created),
		}}, step.CheckUnreachable, "Created"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.p.Workflow()
			var ve *step.ValidationError
			if !errors.As(err, &ve) || !ve.Has(c.check) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want a %s problem naming %s, got %v", c.check, c.want, err)
			}
			for _, p := range ve.Problems {
				if p.Hint == "" {
					t.Errorf("problem without hint: %s", p)
				}
			}
		})
	}
}

func TestRouteChecks(t *testing.T) {
	p := onboardingProcess()
	p.Routes = p.Routes[:2] // CreateAccount unrouted
	if _, err := p.Workflow(); err == nil || !strings.Contains(err.Error(), "CreateAccount") {
		t.Fatalf("unrouted request accepted: %v", err)
	}
	p = onboardingProcess()
	p.Routes[1] = process.Human((*ApproveRequest)(nil), process.Who{})
	if _, err := p.Workflow(); err == nil || !strings.Contains(err.Error(), "nobody could submit") {
		t.Fatalf("empty Who accepted: %v", err)
	}
	p = onboardingProcess()
	p.Routes[0] = process.Agent((*CheckDocument)(nil), "Doc.Checker", "x", nil)
	if _, err := p.Workflow(); err == nil {
		t.Fatal("invalid agent class accepted")
	}
	p = onboardingProcess()
	p.Routes[2] = process.Program((*ApproveRequest)(nil), process.Who{IDs: []string{"x"}})
	if _, err := p.Workflow(); err == nil || !strings.Contains(err.Error(), "ProgramWorkRequestEvent") {
		t.Fatalf("a human request routed to a program: %v", err)
	}
}

func TestGraph(t *testing.T) {
	wf, err := onboardingProcess().Workflow()
	if err != nil {
		t.Fatal(err)
	}
	g := wf.Graph()
	var links []string
	for _, l := range g.Links {
		links = append(links, l.Source+" -"+l.EventName+"-> "+l.Target)
	}
	got := strings.Join(links, "\n")
	for _, want := range []string{
		"Start -Application-> Begin",
		"Begin -CheckDocument-> Checked",
		"Checked -Approve-> Approved",
		"Approved -CreateAccount-> Created",
		"Created -Onboarded-> End",
		"Checked -Rejected-> End",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("graph lacks %q:\n%s", want, got)
		}
	}
	agenttestEqual(t, wf.StartEvents(), []string{"Application"})
	_ = event.Name
}

func agenttestEqual(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("got %v, want %v", got, want)
	}
}
