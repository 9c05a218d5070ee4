package process_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/process"
	"github.com/saap-go/agent/topic"
)

// submitServer runs the onboarding runner and serves its submission
// routes; X-User "mia" is the manager, anyone else the intern.
func submitServer(t *testing.T) (*natsEnv, *process.Submitter, *httptest.Server) {
	t.Helper()
	env := newNATS(t, "")
	st := kv(t, env.b)
	startRunner(t, onboardingProcess(), process.WithBus(env.b), process.WithStore(st), process.WithConfigTimeout(time.Second))
	sub, err := process.NewSubmitter(env.b, st, onboardingProcess())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sub.Handler(func(r *http.Request) (*event.UserIdentity, error) {
		if r.Header.Get("X-User") == "mia" {
			return manager, nil
		}
		return intern, nil
	}))
	t.Cleanup(srv.Close)
	return env, sub, srv
}

// postJSON posts body as user and decodes the JSON answer.
func postJSON(t *testing.T, url, user string, body []byte) (int, map[string]string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("X-User", user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]string
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// TestStartTakesNoClientIdentity: the user of a start posted over HTTP is
// the authenticated caller and its event id is the Submitter's, so a
// caller can neither speak for another user nor reach another user's
// walkthrough by re-posting its start's id.
func TestStartTakesNoClientIdentity(t *testing.T) {
	env, _, srv := submitServer(t)
	starts := feed(t, env.b, "process.Onboarding.acme.*.work.Application.*")
	url := srv.URL + "/processes/Onboarding/acme/walkthroughs"
	const chosen = "6650f0c2a1b2c3d4e5f60711"
	forged, _ := json.Marshal(manager)
	body := []byte(`{"event_id": "` + chosen + `", "created_at": 1, "user": ` + string(forged) +
		`, "process_config": {}, "applicant": "ada", "fail": "", "_event_name": "Application"}`)

	code, ian := postJSON(t, url, "ian", body)
	if code != http.StatusAccepted {
		t.Fatalf("start: %d %v", code, ian)
	}
	if ian["event_id"] == chosen || !event.IsObjectID(ian["event_id"]) {
		t.Fatalf("the start kept the client's event id: %v", ian)
	}
	m := next(t, starts, ".work.Application.")
	pt, err := topic.ParseProcess(m.Subject)
	if err != nil || pt.EventID != ian["event_id"] || pt.Walkthrough != ian["walkthrough_id"] {
		t.Fatalf("stored start %s (%v), answer %v", m.Subject, err, ian)
	}
	var stored struct {
		EventID string              `json:"event_id"`
		User    *event.UserIdentity `json:"user"`
	}
	if err := json.Unmarshal(m.Data, &stored); err != nil {
		t.Fatal(err)
	}
	if stored.EventID != ian["event_id"] || stored.User == nil || stored.User.ID != intern.ID {
		t.Fatalf("stored start: event id %s, user %+v; want %s by %s", stored.EventID, stored.User, ian["event_id"], intern.ID)
	}

	// Mia re-posts Ian's start under its id: she gets a walkthrough of her own.
	again := bytes.Replace(body, []byte(chosen), []byte(ian["event_id"]), 1)
	code, mia := postJSON(t, url, "mia", again)
	if code != http.StatusAccepted {
		t.Fatalf("second start: %d %v", code, mia)
	}
	if mia["walkthrough_id"] == ian["walkthrough_id"] || mia["event_id"] == ian["event_id"] {
		t.Fatalf("a re-posted start id gave another user's walkthrough: %v and %v", ian, mia)
	}
	m = next(t, starts, ".work.Application.")
	if pt, _ := topic.ParseProcess(m.Subject); pt.Walkthrough != mia["walkthrough_id"] {
		t.Fatalf("second start stored as %s, answer %v", m.Subject, mia)
	}
}

// awaitApproval starts a walkthrough of instance acme over HTTP, answers
// its document check as the agent, and returns the walkthrough, its
// start's event id and the id of the approval request it then asks.
func awaitApproval(t *testing.T, env *natsEnv, srv *httptest.Server) (walk, start, req string) {
	t.Helper()
	agents := feed(t, env.b, "agent.DocChecker.>")
	reqs := feed(t, env.b, "process.Onboarding.acme.*.work_request.ApproveRequest.*")
	code, ans := postJSON(t, srv.URL+"/processes/Onboarding/acme/walkthroughs", "ian", readFile(t, "in-application-start.json"))
	if code != http.StatusAccepted {
		t.Fatalf("start: %d %v", code, ans)
	}
	at, err := topic.ParseAgent(next(t, agents, ".control_event.CheckStart.").Subject)
	if err != nil {
		t.Fatal(err)
	}
	at.Name, at.EventID = "CheckStop", event.NewID()
	subj, _ := at.Subject()
	stop := bytes.Replace(readFile(t, "in-agent-stop.json"), []byte("6650f0c2a1b2c3d4e5f60702"), []byte(at.EventID), 1)
	pub(t, env.b, subj, stop)
	for {
		pt, _ := topic.ParseProcess(next(t, reqs, ".ApproveRequest.").Subject)
		if pt.Walkthrough == ans["walkthrough_id"] {
			return pt.Walkthrough, ans["event_id"], pt.EventID
		}
	}
}

// approvals are the Approval events the stream holds for walk.
func approvals(t *testing.T, env *natsEnv, walk string) []*bus.StoredMsg {
	t.Helper()
	ms, err := bus.ReadAll(context.Background(), env.b, topic.ProcessStreamName("Onboarding"),
		"process.Onboarding.acme."+walk+".work.Approval.*")
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// TestWorkIDCannotWedge: work submitted under an event id the stream has
// seen (here the walkthrough's own start) is stored under an id of the
// Submitter's, so the request is answered by a stored event and the
// walkthrough goes on, over HTTP and in Go alike.
func TestWorkIDCannotWedge(t *testing.T) {
	env, sub, srv := submitServer(t)
	next3 := feed(t, env.b, "process.Onboarding.acme.*.work_request.CreateAccount.*")

	walk, start, req := awaitApproval(t, env, srv)
	approval := bytes.ReplaceAll(readFile(t, "in-human-approval.json"), []byte("REQUEST_ID"), []byte(req))
	approval = bytes.Replace(approval, []byte("6650f0c2a1b2c3d4e5f60703"), []byte(start), 1)
	code, ans := postJSON(t, srv.URL+"/processes/Onboarding/acme/walkthroughs/"+walk+"/work", "mia", approval)
	if code != http.StatusAccepted {
		t.Fatalf("approval: %d %v", code, ans)
	}
	ms := approvals(t, env, walk)
	if len(ms) != 1 || ans["event_id"] == start {
		t.Fatalf("answered 202 %v, but the stream holds %d approvals", ans, len(ms))
	}
	if pt, _ := topic.ParseProcess(ms[0].Subject); pt.EventID != ans["event_id"] {
		t.Fatalf("stored approval %s, answer %v", ms[0].Subject, ans)
	}
	if pt, _ := topic.ParseProcess(next(t, next3, ".CreateAccount.").Subject); pt.Walkthrough != walk {
		t.Fatalf("account requested for walkthrough %s, want %s", pt.Walkthrough, walk)
	}

	// In Go: the same, and a retry of the same answer stays harmless.
	walk, start, req = awaitApproval(t, env, srv)
	approve := func() *Approval {
		a := &Approval{Approved: true}
		a.EventID, a.InResponseTo = start, &req
		return a
	}
	for range 2 {
		if err := sub.Submit(context.Background(), "Onboarding", "acme", walk, approve(), manager); err != nil {
			t.Fatal(err)
		}
	}
	if ms := approvals(t, env, walk); len(ms) != 1 {
		t.Fatalf("Submit returned nil, but the stream holds %d approvals", len(ms))
	}
	if pt, _ := topic.ParseProcess(next(t, next3, ".CreateAccount.").Subject); pt.Walkthrough != walk {
		t.Fatalf("account requested for walkthrough %s, want %s", pt.Walkthrough, walk)
	}
}

// TestStartUnderTakenID: a start given an event id that another event of
// the stream holds is not reported as started, for nothing was stored;
// the same start again is.
func TestStartUnderTakenID(t *testing.T) {
	env, sub, srv := submitServer(t)
	_, start, _ := awaitApproval(t, env, srv)
	app := func(id string) *Application {
		a := &Application{Applicant: "bea"}
		a.EventID = id
		return a
	}
	ctx := context.Background()
	if walk, err := sub.Start(ctx, "Onboarding", "other", app(start), program); !errors.Is(err, process.ErrDuplicateID) {
		t.Fatalf("a start under a taken id gave walkthrough %q, err %v", walk, err)
	}
	own := event.NewID()
	w1, err := sub.Start(ctx, "Onboarding", "other", app(own), program)
	if err != nil {
		t.Fatal(err)
	}
	if w2, err := sub.Start(ctx, "Onboarding", "other", app(own), program); err != nil || w2 != w1 {
		t.Fatalf("the same start again: %q %v, want %q", w2, err, w1)
	}
}
