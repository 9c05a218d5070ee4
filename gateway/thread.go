package gateway

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/saap-go/agent/event"
)

// ExternalThread maps a client protocol's conversation id to a thread id:
// the id itself when it is one already (an ObjectId), else 24 hex
// characters of the SHA-256 of namespace and id. The same conversation
// always lands in the same thread, whose membership the gateway checks;
// namespace keeps two protocols' ids apart.
func ExternalThread(namespace, id string) string {
	if event.IsObjectID(id) {
		return id
	}
	sum := sha256.Sum256([]byte(namespace + ":" + id))
	return hex.EncodeToString(sum[:12])
}
