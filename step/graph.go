package step

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/saap-go/agent/event"
)

// Graph is the workflow visualisation of discovery: it marshals to the
// network_graph object of the discovery answer (the networkx node-link form the
// reference produces).
type Graph struct {
	Directed   bool           `json:"directed"`
	Multigraph bool           `json:"multigraph"`
	Graph      map[string]any `json:"graph"`
	Nodes      []GraphNode    `json:"nodes"`
	Links      []GraphLink    `json:"links"`
}

// GraphNode is a step, or the synthetic start or end node.
type GraphNode struct {
	ID          string  `json:"id"`
	Type        string  `json:"type"` // "start", "step" or "stop"
	Label       string  `json:"label"`
	Description *string `json:"description"` // null when unset
	Icon        *string `json:"icon"`        // null when unset
}

// GraphLink is one event flowing from a producer to a consumer.
type GraphLink struct {
	Source        string                  `json:"source"`
	Target        string                  `json:"target"`
	EdgeID        int                     `json:"edge_id"` // counts the links between the same two nodes
	EventName     string                  `json:"event_name"`
	EventFullName string                  `json:"event_full_name"` // Go package path and type name
	IsStartEvent  bool                    `json:"is_start_event"`
	IsStopEvent   bool                    `json:"is_stop_event"`
	Payload       map[string]PayloadField `json:"payload"`
}

// PayloadField describes one declared field of a link's event.
type PayloadField struct {
	Type        string  `json:"type"`
	Description *string `json:"description"`
}

// The ids of the synthetic nodes, as in the reference.
const (
	StartNode = "Start"
	EndNode   = "End"
)

// Graph returns the workflow's event flow: Start → consumers of each start
// event, producers → consumers of each other control event, producers of
// each stop event → End, and each request's emitter → the consumers of its
// response (XRequestEvent → XResponseEvent, labelled X, with an empty
// payload, as the reference's visualizer draws them).
func (w *Workflow) Graph() Graph {
	g := Graph{Directed: true, Graph: map[string]any{}, Nodes: []GraphNode{}, Links: []GraphLink{}}
	g.Nodes = append(g.Nodes, GraphNode{ID: StartNode, Type: "start", Label: "Start"})
	for _, s := range w.steps {
		g.Nodes = append(g.Nodes, GraphNode{ID: s.name, Type: "step", Label: s.graphLabel(),
			Description: optional(s.graphDescription()), Icon: optional(s.icon)})
	}
	g.Nodes = append(g.Nodes, GraphNode{ID: EndNode, Type: "stop", Label: "End"})

	producers := map[string][]string{}
	consumers := map[string][]string{}
	for _, s := range w.steps {
		for _, n := range s.outputs {
			producers[n] = append(producers[n], s.name)
		}
		for _, n := range s.triggers {
			consumers[n] = append(consumers[n], s.name)
		}
	}
	names := make([]string, 0, len(producers)+len(consumers))
	for n := range producers {
		names = append(names, n)
	}
	for n := range consumers {
		names = append(names, n)
	}
	names = sortUnique(names)

	edges := map[[2]string]int{}
	add := func(l GraphLink) {
		k := [2]string{l.Source, l.Target}
		l.EdgeID = edges[k]
		edges[k]++
		g.Links = append(g.Links, l)
	}
	// Start links first, then the links between steps, then the stop links:
	// the order a reader follows a run in.
	for pass := range 3 {
		for _, n := range names {
			if registered(n) && !isA(n, w.r.flow) {
				continue // display-only events never flow between steps
			}
			start, stop := w.r.isStart(n), w.r.isStop(n)
			l := GraphLink{EventName: n, EventFullName: fullName(n), Payload: payload(n),
				IsStartEvent: start, IsStopEvent: stop && !start}
			switch {
			case pass == 0 && start:
				for _, c := range consumers[n] {
					l.Source, l.Target = StartNode, c
					add(l)
				}
			case pass == 2 && stop && !start:
				for _, p := range producers[n] {
					l.Source, l.Target = p, EndNode
					add(l)
				}
			case pass == 1 && !start && !stop:
				for _, p := range producers[n] {
					for _, c := range consumers[n] {
						l.Source, l.Target = p, c
						add(l)
					}
				}
			}
		}
	}
	// Request → response round trips, as the reference draws them: a step
	// emitting XRequestEvent links to the consumers of XResponseEvent,
	// labelled X, with both full names and an empty payload. This SDK's
	// other answers to an in-the-loop request (timeouts, a delegate's
	// exception) are linked the same way.
	for _, s := range w.steps {
		seen := map[[2]string]bool{}
		for _, req := range sortUnique(slices.Clone(s.outputs)) {
			i := strings.LastIndex(req, "Request")
			label := ""
			switch {
			case w.r.process:
				// A process's work requests are told by lineage, not name.
				if w.r.requestFamily(req) == noFamily {
					continue
				}
				label = req
				if i > 0 {
					label = req[:i]
				}
			case i < 0 || strings.Contains(req, "Response") || registered(req) && !isA(req, w.r.flow):
				continue
			default:
				label = req[:i]
			}
			link := func(answer string) {
				if registered(answer) && !isA(answer, w.r.flow) {
					return
				}
				for _, c := range consumers[answer] {
					if k := [2]string{c, answer}; !seen[k] {
						seen[k] = true
						add(GraphLink{Source: s.name, Target: c, EventName: label,
							EventFullName: fullName(req) + " → " + fullName(answer), Payload: map[string]PayloadField{}})
					}
				}
			}
			if !w.r.process {
				link(strings.ReplaceAll(req, "Request", "Response"))
			}
			fam := w.r.requestFamily(req)
			if fam == noFamily {
				continue
			}
			for _, n := range names {
				ext, f, timeout := w.r.externalFamily(n)
				// A process's work answers its work request.
				if ext && (timeout && (f == fam || f == noFamily) || f == fam && (w.r.process || fam == famTimer || isA(n, nameAITLException))) {
					link(n)
				}
			}
		}
	}
	return g
}

// MarshalJSON is the default encoding; it exists so that a nil map or slice
// never encodes as null.
func (g Graph) MarshalJSON() ([]byte, error) {
	type plain Graph
	if g.Graph == nil {
		g.Graph = map[string]any{}
	}
	if g.Nodes == nil {
		g.Nodes = []GraphNode{}
	}
	if g.Links == nil {
		g.Links = []GraphLink{}
	}
	return json.Marshal(plain(g))
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// fullName is the Go import path and type name of a registered event, the
// counterpart of the reference's module.Class.
func fullName(name string) string {
	t, ok := event.Lookup(name)
	if !ok || t.Go == nil {
		return name
	}
	gt := t.Go
	for gt.Kind() == reflect.Pointer {
		gt = gt.Elem()
	}
	if gt.PkgPath() == "" {
		return gt.Name()
	}
	return gt.PkgPath() + "." + gt.Name()
}

// payload describes the fields a registered event type declares itself, as
// the reference lists a class's own annotations: fields inherited from an
// embedded event type and the envelope (event_id, created_at, underscore
// keys) are left out.
func payload(name string) map[string]PayloadField {
	out := map[string]PayloadField{}
	t, ok := event.Lookup(name)
	if !ok || t.Go == nil {
		return out
	}
	gt := t.Go
	for gt.Kind() == reflect.Pointer {
		gt = gt.Elem()
	}
	if gt.Kind() == reflect.Struct {
		fields(gt, out)
	}
	return out
}

var baseType = reflect.TypeFor[event.Base]()

// isEventStruct reports whether t is event.Base or a registered event type,
// whose fields an embedding type inherits rather than declares.
func isEventStruct(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == baseType {
		return true
	}
	_, ok := event.TypeByGo(t)
	return ok
}

func fields(t reflect.Type, out map[string]PayloadField) {
	for f := range t.Fields() {
		if f.Anonymous && isEventStruct(f.Type) {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		key, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && key == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				fields(ft, out)
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if key == "" {
			key = f.Name
		}
		if strings.HasPrefix(key, "_") || key == "event_id" || key == "created_at" {
			continue
		}
		pf := PayloadField{Type: typeName(f.Type)}
		for _, k := range []string{"description", "jsonschema_description"} {
			if d, ok := f.Tag.Lookup(k); ok {
				pf.Description = &d
				break
			}
		}
		out[key] = pf
	}
}

// typeName renders a Go field type the way the reference renders Python
// annotations: str, int, float, bool, T[], Dict[K, V], Optional[T].
func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "str"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "int"
	case reflect.Float32, reflect.Float64:
		return "float"
	case reflect.Pointer:
		return "Optional[" + typeName(t.Elem()) + "]"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "bytes"
		}
		return typeName(t.Elem()) + "[]"
	case reflect.Map:
		return fmt.Sprintf("Dict[%s, %s]", typeName(t.Key()), typeName(t.Elem()))
	case reflect.Interface:
		return "Any"
	}
	if t.Name() != "" {
		return t.Name()
	}
	return t.String()
}

// Mermaid renders the workflow as a Mermaid flowchart: one node per step,
// Start and End, and one labelled arrow per link of Graph.
func (w *Workflow) Mermaid() string {
	g := w.Graph()
	ids := map[string]string{StartNode: "start", EndNode: "stop"}
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	b.WriteString("    start([\"Start\"])\n")
	for i, s := range w.steps {
		id := fmt.Sprintf("s%d", i)
		ids[s.name] = id
		fmt.Fprintf(&b, "    %s[%s]\n", id, mermaidText(s.name))
	}
	b.WriteString("    stop([\"End\"])\n")
	type arrow struct{ from, to, label string }
	var arrows []arrow
	for _, l := range g.Links {
		arrows = append(arrows, arrow{ids[l.Source], ids[l.Target], l.EventName})
	}
	arrows = slices.Compact(arrows)
	for _, a := range arrows {
		fmt.Fprintf(&b, "    %s -->|%s| %s\n", a.from, mermaidText(a.label), a.to)
	}
	return b.String()
}

// mermaidText quotes a label so that any name is safe in Mermaid.
func mermaidText(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, "#quot;") + `"`
}
