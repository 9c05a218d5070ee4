// Package embedded lets agent.Run start an embedded NATS server (with
// JetStream, on loopback) when no NATS server is configured: no NATS_URL,
// no agent.WithNATS, no agent.WithBus. Import it for its side effect:
//
//	import _ "github.com/saap-go/agent/embedded"
//
// It is a package of its own so that programs which always connect to a
// NATS server do not link one (about 10 MB of the binary).
package embedded

import (
	"github.com/saap-go/agent/internal/embedhook"
	"github.com/saap-go/agent/internal/natsserver"
)

func init() {
	embedhook.Start = func(dir string) (embedhook.Server, error) {
		s, err := natsserver.Start(natsserver.Options{Dir: dir})
		if err != nil {
			return nil, err // not a nil *Server in a non-nil interface
		}
		return s, nil
	}
}
