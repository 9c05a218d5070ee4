package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	core "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
)

// Prefix is where the per-class A2A routes live: the JSON-RPC endpoint of
// agent instance <id> of class <Class> is Prefix+"/<Class>/<id>", and its
// agent card is that URL plus "/.well-known/agent-card.json".
const Prefix = "/a2a"

// Config configures Mount.
type Config struct {
	// BaseURL is the gateway's public URL ("https://agents.example.com"),
	// written into the agent cards. Default: the scheme and host of the
	// request that fetches the card.
	BaseURL string
	// Default names the agent served at /.well-known/agent-card.json, as
	// "<Class>/<id>". Default: when the gateway serves exactly one class,
	// that class with AgentID; else the root card answers 404 with the
	// per-class card URLs.
	Default string
	// AgentID is the agent instance the root card addresses when Default
	// is empty. Default "default".
	AgentID string
	// Version is the agents' version written into the cards. Default
	// "1.0.0".
	Version string
	// Provider, if set, names the organisation in the cards.
	Provider *core.AgentProvider
	// Logger receives the adapter's logs. Default slog.Default().
	Logger *slog.Logger
}

// Server serves the A2A protocol for the classes a gateway serves. Mount
// creates one and mounts it on the gateway.
type Server struct {
	gw    *gateway.Gateway
	cfg   Config
	tasks *tasks
	rpc   http.Handler
	log   *slog.Logger
}

// Mount serves A2A on gw: the agent cards (public, as A2A clients fetch
// them before they authenticate) and the JSON-RPC endpoints (behind the
// gateway's Authenticator). It returns the Server for inspection.
func Mount(gw *gateway.Gateway, cfg Config) *Server {
	if cfg.AgentID == "" {
		cfg.AgentID = "default"
	}
	if cfg.Version == "" {
		cfg.Version = "1.0.0"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	s := &Server{gw: gw, cfg: cfg, tasks: newTasks(), log: cfg.Logger}
	handler := a2asrv.NewHandler(&executor{s: s},
		a2asrv.WithCallInterceptor(&guard{s: s}),
		a2asrv.WithTaskStore(newTaskStore()),
		a2asrv.WithLogger(cfg.Logger))
	s.rpc = versions(a2asrv.NewJSONRPCHandler(handler))
	gw.Mount("GET "+a2asrv.WellKnownAgentCardPath, http.HandlerFunc(s.serveRootCard))
	gw.Mount("GET "+Prefix+"/{class}/{id}"+a2asrv.WellKnownAgentCardPath, http.HandlerFunc(s.serveCard))
	gw.Mount("POST "+Prefix+"/{class}/{id}", gw.Authenticated(http.HandlerFunc(s.serveRPC)))
	return s
}

// target is the agent instance a JSON-RPC request addresses.
type target struct{ class, id string }

type targetKey struct{}

func (s *Server) serveRPC(w http.ResponseWriter, r *http.Request) {
	class, id := r.PathValue("class"), r.PathValue("id")
	if _, ok := s.gw.Class(class); !ok {
		writeRPCError(w, http.StatusNotFound, fmt.Sprintf("unknown agent class %.80q", class))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	ctx := context.WithValue(r.Context(), targetKey{}, target{class, id})
	s.rpc.ServeHTTP(w, r.WithContext(ctx))
}

// writeRPCError answers a request that cannot reach the JSON-RPC handler
// with a JSON-RPC error object, which A2A clients show.
func writeRPCError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":%q}}`, msg)
}

func (s *Server) serveCard(w http.ResponseWriter, r *http.Request) {
	s.writeCard(w, r, r.PathValue("class"), r.PathValue("id"))
}

// serveRootCard serves the card of the default agent where A2A clients
// look first.
func (s *Server) serveRootCard(w http.ResponseWriter, r *http.Request) {
	class, id, ok := strings.Cut(s.cfg.Default, "/")
	if !ok {
		classes := s.gw.Classes()
		if len(classes) != 1 {
			urls := make([]string, 0, len(classes))
			for _, c := range classes {
				urls = append(urls, s.base(r)+Prefix+"/"+c.Name()+"/"+s.cfg.AgentID+a2asrv.WellKnownAgentCardPath)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = fmt.Fprintf(w, `{"detail":%q,"cards":%s}`,
				fmt.Sprintf("this gateway serves %d agent classes; each has its own card", len(classes)), jsonList(urls))
			return
		}
		class, id = classes[0].Name(), s.cfg.AgentID
	}
	s.writeCard(w, r, class, id)
}

func jsonList(xs []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, x := range xs {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q", x)
	}
	b.WriteByte(']')
	return b.String()
}

func (s *Server) writeCard(w http.ResponseWriter, r *http.Request, className, id string) {
	c, ok := s.gw.Class(className)
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = fmt.Fprintf(w, `{"detail":%q}`, fmt.Sprintf("unknown agent class %.80q", className))
		return
	}
	card := s.Card(c.Response, s.base(r)+Prefix+"/"+className+"/"+id)
	if strings.HasPrefix(strings.TrimSpace(r.Header.Get("A2A-Version")), "1.") {
		// A v1.0 client asks: the same card in the v1.0 shape, naming
		// both protocol versions the endpoint speaks.
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v1Card(card))
		return
	}
	a2asrv.NewStaticAgentCardHandler(card).ServeHTTP(w, r)
}

// v1Card is card in the shape of A2A v1.0, whose clients find the
// endpoint in supportedInterfaces.
func v1Card(card *core.AgentCard) map[string]any {
	skills := make([]map[string]any, 0, len(card.Skills))
	for _, sk := range card.Skills {
		skills = append(skills, map[string]any{"id": sk.ID, "name": sk.Name, "description": sk.Description,
			"tags": sk.Tags, "inputModes": sk.InputModes, "outputModes": sk.OutputModes})
	}
	out := map[string]any{
		"name":        card.Name,
		"description": card.Description,
		"version":     card.Version,
		"supportedInterfaces": []map[string]any{
			{"url": card.URL, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
			{"url": card.URL, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
		},
		"capabilities":       map[string]any{"streaming": card.Capabilities.Streaming},
		"defaultInputModes":  card.DefaultInputModes,
		"defaultOutputModes": card.DefaultOutputModes,
		"skills":             skills,
		"securitySchemes": map[string]any{
			"bearer": map[string]any{"httpAuthSecurityScheme": map[string]any{"scheme": "Bearer", "description": "the gateway's bearer token"}},
		},
		"securityRequirements": []map[string]any{{"schemes": map[string]any{"bearer": map[string]any{"list": []string{}}}}},
	}
	if card.Provider != nil {
		out["provider"] = map[string]any{"organization": card.Provider.Org, "url": card.Provider.URL}
	}
	return out
}

// base is the public URL of the gateway as the request reached it.
func (s *Server) base(r *http.Request) string {
	if s.cfg.BaseURL != "" {
		return s.cfg.BaseURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p == "https" || p == "http" {
		scheme = p
	}
	return scheme + "://" + r.Host
}

// Card is the agent card of a class as discovery describes it, with its
// JSON-RPC endpoint at url: the class's name and description (English,
// else the first locale set), one skill per start event, streaming on,
// bearer authentication.
func (s *Server) Card(resp *event.AgentClassDiscoveryResponseEvent, url string) *core.AgentCard {
	name := localized(resp.Name)
	if name == "" {
		name = resp.AgentClass
	}
	desc := localized(resp.Description)
	if desc == "" {
		desc = "Agent class " + resp.AgentClass
	}
	skills := make([]core.AgentSkill, 0, len(resp.StartEvents))
	for _, se := range resp.StartEvents {
		tags := []string{"start-event"}
		if chatLike(se) {
			tags = append(tags, "chat")
		}
		skills = append(skills, core.AgentSkill{
			ID:          se.EventName,
			Name:        se.EventName,
			Description: fmt.Sprintf("Starts a run of %s with a %s.", resp.AgentClass, se.EventName),
			Tags:        tags,
			InputModes:  []string{"text/plain", "application/json"},
			OutputModes: []string{"text/plain"},
		})
	}
	return &core.AgentCard{
		Name:               name,
		Description:        desc,
		URL:                url,
		PreferredTransport: core.TransportProtocolJSONRPC,
		ProtocolVersion:    "0.3.0",
		Version:            s.cfg.Version,
		Provider:           s.cfg.Provider,
		Capabilities:       core.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain", "application/json"},
		DefaultOutputModes: []string{"text/plain"},
		Skills:             skills,
		SecuritySchemes: core.NamedSecuritySchemes{
			"bearer": core.HTTPAuthSecurityScheme{Scheme: "Bearer", Description: "the gateway's bearer token"},
		},
		Security: []core.SecurityRequirements{{"bearer": core.SecuritySchemeScopes{}}},
	}
}

func localized(l *event.LocaleString) string {
	if l == nil {
		return ""
	}
	for _, v := range []string{l.En, l.De, l.Fr, l.It} {
		if v != "" {
			return v
		}
	}
	return ""
}

// errUnknownClass is returned when a task's class is no longer served.
var errUnknownClass = errors.New("the agent class is not served")
