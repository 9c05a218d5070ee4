package profiles

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/schedule"
)

// DefaultAdminRole is the role that makes a user an administrator of
// profiles by default.
const DefaultAdminRole = "admin"

// Prefix is where Mount serves the profile routes; the schedules are at
// SchedulesPath.
const (
	Prefix        = "/api/v1/saap/profiles"
	SchedulesPath = "/api/v1/saap/schedules"
)

// AdminRole returns the admin check that accepts the users whose identity
// has role among its roles, or is_sys_admin set.
func AdminRole(role string) func(*event.UserIdentity) bool {
	return func(u *event.UserIdentity) bool {
		if u == nil {
			return false
		}
		if u.IsSysAdmin != nil && *u.IsSysAdmin {
			return true
		}
		return slices.Contains(u.Roles, role)
	}
}

// Options configure Mount. Store is required.
type Options struct {
	Store *Store
	// Admin decides who may read and change profiles. Default
	// AdminRole(DefaultAdminRole). Everybody else gets 403, whatever the
	// profile, so a non-admin cannot even learn which profiles exist.
	Admin func(*event.UserIdentity) bool
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Mount serves the admin routes of profiles and their schedules on gw,
// authenticated by gw (401) and open to administrators only (403):
//
//	GET    /api/v1/saap/profiles                         every profile
//	GET    /api/v1/saap/profiles/{class}                 the profiles of a class
//	POST   /api/v1/saap/profiles/{class}                 create one (body: the configuration, with agent_id); 201
//	GET    /api/v1/saap/profiles/{class}/{id}            one profile; its revision in the ETag
//	PUT    /api/v1/saap/profiles/{class}/{id}            replace its configuration; If-Match: the revision read
//	DELETE /api/v1/saap/profiles/{class}/{id}            remove it; If-Match optional
//	GET    /api/v1/saap/profiles/{class}/{id}/schedule   its schedule (the "cron" field), or null
//	PUT    /api/v1/saap/profiles/{class}/{id}/schedule   set it (body: the cron object, or null to remove); If-Match
//	GET    /api/v1/saap/schedules                        every profile's schedule
//
// A configuration is checked against the discovery answer of its class
// (Check): 400 names what does not fit, 404 answers an unknown profile or
// a class the gateway has not discovered (for writes), 409 a revision
// that is no longer the profile's (somebody saved in between) or a
// profile that exists already, 428 a write without a revision. A second
// Mount on the same gateway fails: its routes are taken.
func Mount(gw *gateway.Gateway, o Options) (err error) {
	if gw == nil || o.Store == nil {
		return errors.New("profiles: Mount needs a gateway and a Store")
	}
	if o.Admin == nil {
		o.Admin = AdminRole(DefaultAdminRole)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	a := &admin{gw: gw, st: o.Store, isAdmin: o.Admin, log: o.Logger}
	m := http.NewServeMux()
	m.HandleFunc("GET "+Prefix, a.list)
	m.HandleFunc("GET "+Prefix+"/{class}", a.list)
	m.HandleFunc("POST "+Prefix+"/{class}", a.create)
	m.HandleFunc("GET "+Prefix+"/{class}/{id}", a.get)
	m.HandleFunc("PUT "+Prefix+"/{class}/{id}", a.replace)
	m.HandleFunc("DELETE "+Prefix+"/{class}/{id}", a.delete)
	m.HandleFunc("GET "+Prefix+"/{class}/{id}/schedule", a.getSchedule)
	m.HandleFunc("PUT "+Prefix+"/{class}/{id}/schedule", a.putSchedule)
	m.HandleFunc("GET "+SchedulesPath, a.schedules)
	h := gw.Authenticated(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := gateway.UserFrom(r.Context())
		if !a.isAdmin(u) {
			writeError(w, http.StatusForbidden, "profiles are for administrators only", "")
			return
		}
		m.ServeHTTP(w, r)
	}))
	defer func() {
		// The gateway's mux refuses a route that is taken by panicking.
		if p := recover(); p != nil {
			err = fmt.Errorf("profiles: Mount: %v", p)
		}
	}()
	gw.Mount(Prefix, h)
	gw.Mount(Prefix+"/", h)
	gw.Mount(SchedulesPath, h)
	return nil
}

type admin struct {
	gw      *gateway.Gateway
	st      *Store
	isAdmin func(*event.UserIdentity) bool
	log     *slog.Logger
}

type errorBody struct {
	Detail string `json:"detail"`
	Field  string `json:"field,omitempty"`
}

func writeError(w http.ResponseWriter, status int, detail, field string) {
	writeJSON(w, status, errorBody{Detail: detail, Field: field})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		status, data = http.StatusInternalServerError, []byte(`{"detail":"profiles: cannot encode the answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// badRequest marks an error of the request itself.
type badRequest struct {
	field string
	err   error
}

func (e *badRequest) Error() string { return e.err.Error() }
func (e *badRequest) Unwrap() error { return e.err }

func invalid(field, format string, args ...any) error {
	return &badRequest{field: field, err: fmt.Errorf(format, args...)}
}

// fail answers err with its status.
func (a *admin) fail(w http.ResponseWriter, err error) {
	var br *badRequest
	switch {
	case errors.As(err, &br):
		writeError(w, http.StatusBadRequest, err.Error(), br.field)
	case errors.Is(err, ErrInvalid):
		writeError(w, http.StatusBadRequest, err.Error(), "config")
	case errors.Is(err, ErrNotFound):
		writeError(w, http.StatusNotFound, err.Error(), "")
	case errors.Is(err, ErrExists), errors.Is(err, ErrConflict):
		writeError(w, http.StatusConflict, err.Error(), "revision")
	case errors.Is(err, errNoRevision):
		writeError(w, http.StatusPreconditionRequired, err.Error(), "revision")
	case errors.Is(err, errUnknownClass):
		writeError(w, http.StatusNotFound, err.Error(), "agent_class")
	default:
		a.log.Error("profiles: request failed", "error", err)
		writeError(w, http.StatusInternalServerError, "profiles: the profile store failed; see the gateway's log", "")
	}
}

var (
	errNoRevision   = errors.New("profiles: a change needs the revision it was made from: send If-Match with the ETag of the profile you read (or ?revision=)")
	errUnknownClass = errors.New("profiles: unknown agent class")
)

// ids reads and checks the path's class and agent id.
func ids(r *http.Request) (class, id string, err error) {
	class, id = r.PathValue("class"), r.PathValue("id")
	if id == "" {
		id = "x" // a class-only route
	}
	if err := ValidateIDs(class, id); err != nil {
		return "", "", &badRequest{field: "path", err: err}
	}
	return class, r.PathValue("id"), nil
}

// class returns the discovered class called name, whose schema a
// configuration must fit.
func (a *admin) class(name string) (*gateway.Class, error) {
	for _, c := range a.gw.Classes() {
		if c.Name() == name {
			return c, nil
		}
	}
	return nil, fmt.Errorf("%w %.80q: no runner of it has answered discovery, so its configuration schema is not known", errUnknownClass, name)
}

// revision reads the revision a change is based on: If-Match ("12" or 12)
// or ?revision=12; 0 when none is given.
func revision(r *http.Request) (uint64, error) {
	v := r.URL.Query().Get("revision")
	if h := r.Header.Get("If-Match"); h != "" {
		v = strings.Trim(strings.TrimPrefix(strings.TrimSpace(h), "W/"), `"`)
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n == 0 {
		return 0, invalid("revision", "revision %.40q is not a positive integer (send the ETag of the profile you read)", v)
	}
	return n, nil
}

func writeProfile(w http.ResponseWriter, status int, p Profile) {
	w.Header().Set("ETag", strconv.Quote(strconv.FormatUint(p.Revision, 10)))
	writeJSON(w, status, p)
}

// body reads the request's configuration object.
func body(r *http.Request) (map[string]json.RawMessage, error) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, invalid("body", "body: %v", err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil || obj == nil {
		return nil, invalid("body", "body: must be a JSON object (the profile's configuration)")
	}
	return obj, nil
}

func (a *admin) list(w http.ResponseWriter, r *http.Request) {
	class := r.PathValue("class")
	if class != "" {
		if _, _, err := ids(r); err != nil {
			a.fail(w, err)
			return
		}
	}
	list, err := a.st.List(r.Context(), class)
	if err != nil && list == nil {
		a.fail(w, err)
		return
	}
	if err != nil {
		a.log.Warn("profiles: some stored profiles do not decode", "error", err)
	}
	writeJSON(w, http.StatusOK, map[string]any{"profiles": list})
}

func (a *admin) get(w http.ResponseWriter, r *http.Request) {
	class, id, err := ids(r)
	if err == nil {
		var p Profile
		if p, err = a.st.Get(r.Context(), class, id); err == nil {
			writeProfile(w, http.StatusOK, p)
			return
		}
	}
	a.fail(w, err)
}

// checked validates obj as a configuration of (class, id).
func (a *admin) checked(class, id string, obj map[string]json.RawMessage) (json.RawMessage, error) {
	c, err := a.class(class)
	if err != nil {
		return nil, err
	}
	if raw, ok := obj["agent_id"]; ok {
		var got string
		if json.Unmarshal(raw, &got) != nil || got != id {
			return nil, invalid("agent_id", "agent_id in the body must be %q, the profile's id", id)
		}
	} else {
		obj["agent_id"], _ = json.Marshal(id)
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return Check(c.Response.AgentConfigSpecs, data)
}

func (a *admin) create(w http.ResponseWriter, r *http.Request) {
	class, _, err := ids(r)
	if err != nil {
		a.fail(w, err)
		return
	}
	obj, err := body(r)
	if err != nil {
		a.fail(w, err)
		return
	}
	var id string
	if json.Unmarshal(obj["agent_id"], &id) != nil || id == "" {
		a.fail(w, invalid("agent_id", "agent_id: required, the new profile's id (lowercase letters, digits, - and _)"))
		return
	}
	if err := ValidateIDs(class, id); err != nil {
		a.fail(w, &badRequest{field: "agent_id", err: err})
		return
	}
	cfg, err := a.checked(class, id, obj)
	if err != nil {
		a.fail(w, err)
		return
	}
	u, _ := gateway.UserFrom(r.Context())
	p, err := a.st.Create(r.Context(), Profile{Class: class, AgentID: id, Config: cfg, UpdatedBy: u.ID})
	if err != nil {
		a.fail(w, err)
		return
	}
	w.Header().Set("Location", Prefix+"/"+class+"/"+id)
	writeProfile(w, http.StatusCreated, p)
}

// update applies change to the stored configuration of the path's profile
// at the request's revision, checks the result and saves it.
func (a *admin) update(w http.ResponseWriter, r *http.Request, change func(cur, obj map[string]json.RawMessage) error) {
	class, id, err := ids(r)
	if err != nil {
		a.fail(w, err)
		return
	}
	rev, err := revision(r)
	if err != nil {
		a.fail(w, err)
		return
	}
	obj, err := body(r)
	if err != nil {
		a.fail(w, err)
		return
	}
	cur, err := a.st.Get(r.Context(), class, id)
	if err != nil {
		a.fail(w, err)
		return
	}
	if rev == 0 {
		a.fail(w, errNoRevision)
		return
	}
	var curObj map[string]json.RawMessage
	if err := json.Unmarshal(cur.Config, &curObj); err != nil || curObj == nil {
		curObj = map[string]json.RawMessage{}
	}
	if err := change(curObj, obj); err != nil {
		a.fail(w, err)
		return
	}
	cfg, err := a.checked(class, id, curObj)
	if err != nil {
		a.fail(w, err)
		return
	}
	u, _ := gateway.UserFrom(r.Context())
	p, err := a.st.Update(r.Context(), Profile{Class: class, AgentID: id, Config: cfg, Revision: rev, UpdatedBy: u.ID})
	if err != nil {
		a.fail(w, err)
		return
	}
	writeProfile(w, http.StatusOK, p)
}

func (a *admin) replace(w http.ResponseWriter, r *http.Request) {
	a.update(w, r, func(cur, obj map[string]json.RawMessage) error {
		clear(cur)
		for k, v := range obj {
			cur[k] = v
		}
		return nil
	})
}

func (a *admin) delete(w http.ResponseWriter, r *http.Request) {
	class, id, err := ids(r)
	if err == nil {
		var rev uint64
		if rev, err = revision(r); err == nil {
			if err = a.st.Delete(r.Context(), class, id, rev); err == nil {
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
	}
	a.fail(w, err)
}

func (a *admin) getSchedule(w http.ResponseWriter, r *http.Request) {
	class, id, err := ids(r)
	if err != nil {
		a.fail(w, err)
		return
	}
	p, err := a.st.Get(r.Context(), class, id)
	if err != nil {
		a.fail(w, err)
		return
	}
	sc, ok, err := schedule.FromConfig(class, id, p.Config)
	if err != nil {
		a.fail(w, fmt.Errorf("%w: %v", ErrInvalid, err))
		return
	}
	w.Header().Set("ETag", strconv.Quote(strconv.FormatUint(p.Revision, 10)))
	if !ok {
		writeJSON(w, http.StatusOK, map[string]any{"agent_class": class, "agent_id": id, "cron": nil})
		return
	}
	writeJSON(w, http.StatusOK, sc)
}

func (a *admin) putSchedule(w http.ResponseWriter, r *http.Request) {
	// The body is the cron object (or null), which body() cannot read as a
	// configuration: wrap it first.
	data, err := io.ReadAll(r.Body)
	if err != nil {
		a.fail(w, invalid("body", "body: %v", err))
		return
	}
	var c any
	if err := json.Unmarshal(data, &c); err != nil {
		a.fail(w, invalid("body", "body: must be a cron object {minute, hour, day_of_month, month, day_of_week, timezone} or null"))
		return
	}
	if c != nil {
		var cr schedule.Cron
		if err := json.Unmarshal(data, &cr); err != nil {
			a.fail(w, invalid("cron", "%v", err))
			return
		}
		if err := cr.Validate(); err != nil {
			a.fail(w, invalid("cron", "%v", err))
			return
		}
		data, _ = json.Marshal(cr)
	}
	r.Body = io.NopCloser(strings.NewReader(`{"cron":` + string(data) + `}`))
	a.update(w, r, func(cur, obj map[string]json.RawMessage) error {
		cur[schedule.ConfigKey] = obj[schedule.ConfigKey]
		return nil
	})
}

func (a *admin) schedules(w http.ResponseWriter, r *http.Request) {
	list, err := a.st.List(r.Context(), "")
	if err != nil && list == nil {
		a.fail(w, err)
		return
	}
	out := []schedule.Schedule{}
	invalid := []string{}
	if err != nil {
		invalid = append(invalid, err.Error())
	}
	for _, p := range list {
		sc, ok, err := schedule.FromConfig(p.Class, p.AgentID, p.Config)
		if err != nil {
			invalid = append(invalid, err.Error())
		} else if ok {
			out = append(out, sc)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"schedules": out, "invalid": invalid})
}
