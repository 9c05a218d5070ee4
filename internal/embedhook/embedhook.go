// Package embedhook is where package embedded registers the embedded NATS
// server with the runner, so that a program links the server only when it
// imports embedded.
package embedhook

// Server is a running embedded server.
type Server interface {
	URL() string
	Dir() string
	Shutdown()
}

// Start starts an embedded server keeping its data in dir ("" for a
// temporary directory); nil when package embedded is not linked.
var Start func(dir string) (Server, error)
