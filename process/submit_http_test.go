package process_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/process"
	"github.com/saap-go/agent/topic"
)

// submitServer runs the onboarding runner and serves its submission
// routes; X-User "mia" is the manager, anyone else the intern.
func submitServer(t *testing.T) (*natsEnv, *httptest.Server) {
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
	return env, srv
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
	env, srv := submitServer(t)
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
