// Package natsserver runs an in-process nats-server with JetStream, bound to
// loopback on a random port: the embedded default of agent.Run and the
// server of hermetic tests.
//
//	s, err := natsserver.Start(natsserver.Options{})
//	if err != nil { ... }
//	defer s.Shutdown()
//	nc, err := nats.Connect(s.URL())
package natsserver

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Options configure the embedded server. The zero value is fine.
type Options struct {
	// Dir is the JetStream store directory. Empty: a new temporary
	// directory, removed by Shutdown. A given directory is kept, so a
	// restarted server finds its streams again.
	Dir string
	// Port to listen on, on 127.0.0.1; 0 picks a free one.
	Port int
	// Token, if set, is required from clients (as NATS_TOKEN in deployments).
	Token string
	// MaxPayload in bytes; 0 keeps the server default (1 MiB).
	MaxPayload int32
	// MaxStore bounds JetStream's file storage in bytes; 0 keeps the
	// server default (a share of the disk).
	MaxStore int64
	// ReadyTimeout bounds the wait for the server to accept clients; 0 → 10 s.
	ReadyTimeout time.Duration
	// Logs sends the server's own log lines to stderr (off by default).
	Logs bool
}

// Server is a running embedded nats-server.
type Server struct {
	srv    *server.Server
	tmpDir string
}

// Start starts the server and returns once it accepts connections.
func Start(o Options) (*Server, error) {
	dir, tmp := o.Dir, ""
	if dir == "" {
		d, err := os.MkdirTemp("", "saap-nats-*")
		if err != nil {
			return nil, fmt.Errorf("natsserver: store dir: %w", err)
		}
		dir, tmp = d, d
	}
	port := o.Port
	if port == 0 {
		port = server.RANDOM_PORT
	}
	opts := &server.Options{
		ServerName:            "saap-embedded",
		Host:                  "127.0.0.1",
		Port:                  port,
		JetStream:             true,
		StoreDir:              dir,
		NoLog:                 !o.Logs,
		NoSigs:                true,
		Authorization:         o.Token,
		MaxPayload:            o.MaxPayload,
		DisableShortFirstPing: true,
		JetStreamMaxStore:     o.MaxStore,
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		removeTmp(tmp)
		return nil, fmt.Errorf("natsserver: %w", err)
	}
	if o.Logs {
		srv.ConfigureLogger()
	}
	srv.Start()
	wait := o.ReadyTimeout
	if wait <= 0 {
		wait = 10 * time.Second
	}
	if !srv.ReadyForConnections(wait) {
		srv.Shutdown()
		srv.WaitForShutdown()
		removeTmp(tmp)
		return nil, errors.New("natsserver: server not ready for connections within " + wait.String())
	}
	return &Server{srv: srv, tmpDir: tmp}, nil
}

// URL is the client URL, nats://127.0.0.1:<port>.
func (s *Server) URL() string { return s.srv.ClientURL() }

// Dir is the JetStream store directory.
func (s *Server) Dir() string { return s.srv.JetStreamConfig().StoreDir }

// Server exposes the underlying nats-server, for tests that need more.
func (s *Server) Server() *server.Server { return s.srv }

// Shutdown stops the server, waits for it to finish and removes a
// temporary store directory. It is safe to call more than once.
func (s *Server) Shutdown() {
	s.srv.Shutdown()
	s.srv.WaitForShutdown()
	removeTmp(s.tmpDir)
}

func removeTmp(dir string) {
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}
