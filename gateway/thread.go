package gateway

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/saap-go/agent/event"
)

// ExternalThread maps a client protocol's conversation id, as user uses
// it, to a thread id: the id itself when it is one already (an ObjectId,
// a protocol thread whose membership the gateway checks), else 24 hex
// characters of the SHA-256 of namespace, the user's id and id. A name the
// client chose is the user's own: the same name of two users never lands
// in one thread, so nobody can take a name from another (or be refused
// one). namespace keeps two protocols' ids apart.
func ExternalThread(namespace, userID, id string) string {
	if event.IsObjectID(id) {
		return id
	}
	sum := sha256.Sum256([]byte(namespace + "\x00" + userID + "\x00" + id))
	return hex.EncodeToString(sum[:12])
}
