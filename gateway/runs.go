package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/saap-go/agent/status"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
)

// Run status over HTTP, an extension of this SDK: the gateway asks the
// class's runners (status.Request) and shows a run only to the
// members of its thread.
//
//	GET /api/v1/saap/runs/{class}/{run}                 one run's status
//	GET /api/v1/saap/threads/{thread}/runs?class=C      the thread's runs of class C,
//	    &status=waiting,failed&after=<cursor>&limit=N   filtered and paged

// serveRunStatus answers GET /api/v1/saap/runs/{class}/{run}: 404 for an
// unknown class or run, and the same 404 for a run of a thread the caller
// is not a member of, so that nobody can probe which runs exist or learn
// their threads.
func (g *Gateway) serveRunStatus(w http.ResponseWriter, r *http.Request) {
	user, ok := g.authenticate(w, r)
	if !ok || !g.statusAllowed(w, user) {
		return
	}
	class, run := r.PathValue("class"), r.PathValue("run")
	rq, ok := g.runsRequester(w, class)
	if !ok {
		return
	}
	if err := validToken("run_id", run); err != nil {
		g.fail(w, badRequest("run_id", "%v", err))
		return
	}
	notFound := func() {
		writeError(w, http.StatusNotFound, fmt.Sprintf("run %s of agent class %s is not known", run, class), "run_id")
	}
	st, err := status.Request(r.Context(), rq, class, run)
	if errors.Is(err, status.ErrNotFound) {
		notFound()
		return
	}
	if err != nil {
		g.runsFailed(w, err)
		return
	}
	if err := g.checkMember(r.Context(), st.Thread, user); err != nil {
		var re *requestError
		if errors.As(err, &re) && re.status == http.StatusForbidden {
			notFound()
			return
		}
		g.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// serveThreadRuns answers GET /api/v1/saap/threads/{thread}/runs for members of
// the thread.
func (g *Gateway) serveThreadRuns(w http.ResponseWriter, r *http.Request) {
	user, ok := g.authenticate(w, r)
	if !ok || !g.statusAllowed(w, user) {
		return
	}
	thread := r.PathValue("thread")
	if err := validToken("thread_id", thread); err != nil {
		g.fail(w, badRequest("thread_id", "%v", err))
		return
	}
	if err := g.checkMember(r.Context(), thread, user); err != nil {
		g.fail(w, err)
		return
	}
	q := r.URL.Query()
	class := q.Get("class")
	if class == "" {
		g.fail(w, badRequest("class", "the query needs the agent class: ?class=<name>"))
		return
	}
	rq, ok := g.runsRequester(w, class)
	if !ok {
		return
	}
	query := status.Query{Thread: thread, After: q.Get("after")}
	if s := q.Get("status"); s != "" {
		for _, v := range strings.Split(s, ",") {
			st := status.State(strings.TrimSpace(v))
			if !st.Valid() {
				g.fail(w, badRequest("status", "%q is not a run status (%s)", v, status.StateNames))
				return
			}
			query.States = append(query.States, st)
		}
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > status.MaxPageSize {
			g.fail(w, badRequest("limit", "limit must be a number from 1 to %d, not %q", status.MaxPageSize, s))
			return
		}
		query.Limit = n
	}
	page, err := status.RequestList(r.Context(), rq, class, query)
	if err != nil {
		g.runsFailed(w, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// runsRequester checks that class is known and that the bus can ask its
// runners.
func (g *Gateway) runsRequester(w http.ResponseWriter, class string) (bus.Requester, bool) {
	if _, ok := g.reg.get(class); !ok {
		writeError(w, http.StatusNotFound, g.unknownClass(class), "agent_class")
		return nil, false
	}
	rq, ok := g.bus.(bus.Requester)
	if !ok {
		writeError(w, http.StatusNotImplemented, "gateway: the bus does no request/reply, so run status is not available", "")
		return nil, false
	}
	return rq, true
}

// runsFailed answers a failed status request: 503 when no runner
// answers, 400 for a query a runner refused, 500 otherwise.
func (g *Gateway) runsFailed(w http.ResponseWriter, err error) {
	var re *bus.RemoteError
	switch {
	case errors.Is(err, bus.ErrNoResponders):
		writeError(w, http.StatusServiceUnavailable, "no runner of the class answers run-status requests", "")
	case errors.As(err, &re) && re.Type == status.BadRequestType:
		writeError(w, http.StatusBadRequest, re.Message, "")
	default:
		g.fail(w, err)
	}
}

// statusAllowed answers 429 with Retry-After when user is over the run
// status budget (Config.StatusRateLimit).
func (g *Gateway) statusAllowed(w http.ResponseWriter, user *event.UserIdentity) bool {
	ok, wait := g.limits.allowStatus(user.ID, g.now())
	if ok {
		return true
	}
	retryAfter(w, wait)
	writeError(w, http.StatusTooManyRequests, fmt.Sprintf("user %s: too many run status requests; retry after %s", user.ID, w.Header().Get("Retry-After")+" s"), "")
	return false
}
