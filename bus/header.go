package bus

import (
	"context"
	"sort"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// AIHubPrefix is the prefix of the forwarded request headers that pass
// through the bus. It is matched case-insensitively.
const AIHubPrefix = "x-aihub-"

// HeaderCarrier adapts a Header to OpenTelemetry's TextMapCarrier. Set keeps
// keys lower-case, as the W3C propagators write them and the reference
// reads them; Get matches case-insensitively.
type HeaderCarrier Header

// Get returns the first value of key, matched case-insensitively.
func (c HeaderCarrier) Get(key string) string { return Header(c).Lookup(key) }

// Set replaces the values of the lower-cased key.
func (c HeaderCarrier) Set(key, value string) { Header(c).Set(strings.ToLower(key), value) }

// Keys lists the header keys, sorted.
func (c HeaderCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

var defaultPropagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// propagator is the global OTel propagator, or W3C trace context plus
// baggage while none is installed: the reference always sends traceparent.
func propagator() propagation.TextMapPropagator {
	p := otel.GetTextMapPropagator()
	if len(p.Fields()) == 0 {
		return defaultPropagator
	}
	return p
}

// InjectTrace writes the trace context and baggage of ctx (traceparent,
// tracestate, baggage) into h and returns h. A nil h is replaced by a new
// Header only when there is something to write. Both buses call it on every
// publish and request, so callers rarely need to.
func InjectTrace(ctx context.Context, h Header) Header {
	// Fast path: nothing to propagate (no span, no baggage) costs no
	// allocation on the publish path.
	if !trace.SpanContextFromContext(ctx).IsValid() && baggage.FromContext(ctx).Len() == 0 {
		return h
	}
	tmp := Header{}
	propagator().Inject(ctx, HeaderCarrier(tmp))
	if len(tmp) == 0 {
		return h
	}
	if h == nil {
		h = Header{}
	}
	for k, v := range tmp {
		if h.Lookup(k) == "" {
			h[k] = v
		}
	}
	return h
}

// ExtractTrace returns ctx with the trace context and baggage carried by h,
// for a handler that continues the publisher's trace.
func ExtractTrace(ctx context.Context, h Header) context.Context {
	return propagator().Extract(ctx, HeaderCarrier(h))
}

// AIHubHeaders returns the X-AIHub-* headers of h with lower-cased keys, as
// receivers attach them to events (_aihub_headers); nil
// when there are none. They are untrusted client input.
func AIHubHeaders(h Header) map[string]string {
	var out map[string]string
	for k, v := range h {
		if len(v) == 0 || !strings.HasPrefix(strings.ToLower(k), AIHubPrefix) {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[strings.ToLower(k)] = v[0]
	}
	return out
}

// CopyAIHubHeaders copies the X-AIHub-* headers of src (any case) into dst,
// keys unchanged, and returns dst (a new Header if dst is nil and there is
// something to copy). Only these headers are forwarded, never the rest.
func CopyAIHubHeaders(dst, src Header) Header {
	for k, v := range src {
		if !strings.HasPrefix(strings.ToLower(k), AIHubPrefix) {
			continue
		}
		if dst == nil {
			dst = Header{}
		}
		dst[k] = append([]string(nil), v...)
	}
	return dst
}
