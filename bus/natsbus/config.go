package natsbus

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/saap-go/agent/bus"
)

// Environment variables read by ConfigFromEnv.
const (
	EnvURL      = "NATS_URL"       // server URL(s), comma-separated
	EnvEndpoint = "NATS_ENDPOINT"  // the reference's name for the URL, used when NATS_URL is unset
	EnvToken    = "NATS_TOKEN"     // plain token authentication (the reference's only scheme)
	EnvCreds    = "NATS_CREDS"     // path of a .creds file (JWT + NKey seed)
	EnvNKeySeed = "NATS_NKEY_SEED" // path of an NKey seed file
	EnvTLSCert  = "NATS_TLS_CERT"  // client certificate (PEM); needs NATS_TLS_KEY
	EnvTLSKey   = "NATS_TLS_KEY"   // client key (PEM)
	EnvTLSCA    = "NATS_TLS_CA"    // CA bundle (PEM) to verify the server
)

// Retry is the stream-publish retry policy. The zero value means
// DefaultRetry.
type Retry struct {
	AckTimeout time.Duration // wait for one PubAck
	Attempts   int           // attempts in all, including the first
	Pause      time.Duration // between attempts
}

// DefaultRetry is the reference's policy: 5 s per ack,
// 10 attempts, 1 s pause.
func DefaultRetry() Retry {
	return Retry{AckTimeout: 5 * time.Second, Attempts: 10, Pause: time.Second}
}

func (r Retry) orDefault() Retry {
	d := DefaultRetry()
	if r.AckTimeout <= 0 {
		r.AckTimeout = d.AckTimeout
	}
	if r.Attempts <= 0 {
		r.Attempts = d.Attempts
	}
	if r.Pause < 0 {
		r.Pause = 0
	} else if r.Pause == 0 {
		r.Pause = d.Pause
	}
	return r
}

// DefaultPullMaxMessages is the default Config.PullMaxMessages.
const DefaultPullMaxMessages = 128

// DefaultMaxPending bounds unacknowledged async stream publishes, as the
// reference's runner does (publish_async_max_pending).
const DefaultMaxPending = 10000

// Config says how to connect. Only URL is needed; the rest is for real
// deployments.
type Config struct {
	// URL of the server(s), comma-separated. Empty: nats.DefaultURL.
	URL   string
	Token string
	// CredsFile is a .creds file (JWT and NKey seed) for decentralised auth.
	CredsFile string
	// NKeySeedFile is a file holding an NKey seed ("SU...").
	NKeySeedFile string
	// TLS client certificate and key, and CA bundle, all PEM files.
	TLSCert, TLSKey, TLSCA string
	// Name is the connection name shown by the server (monitoring).
	Name string
	// Retry is the stream-publish retry policy (zero: DefaultRetry).
	Retry Retry
	// MaxPending bounds unacked async stream publishes (0: DefaultMaxPending).
	MaxPending int
	// PullMaxMessages is how many messages a Consume call keeps buffered
	// ahead of its handler (0: DefaultPullMaxMessages). Buffered messages'
	// AckWait is already running, so keep it small when handlers are slow.
	// Consumer.Stop naks what is still buffered.
	PullMaxMessages int
	// DeadLetters says where Delivery.DeadLetter republishes (zero:
	// bus.DefaultDeadLetters).
	DeadLetters bus.DeadLetters
	// ReconnectWait is the pause between reconnect attempts (0: 2 s).
	// Reconnection never gives up.
	ReconnectWait time.Duration
	// Logger receives connection events and consumer errors (nil: slog.Default()).
	Logger *slog.Logger
	// Replicas is how many copies of each stream the bus creates (its
	// agent streams and the dead-letter stream) the servers keep, in a
	// NATS cluster: 3 survives the loss of one server. 0 means 1. Existing
	// streams keep their own setting; consumers take their stream's.
	Replicas int
}

// ConfigFromEnv reads the connection settings from the environment:
// NATS_URL (or the reference's NATS_ENDPOINT), NATS_TOKEN, NATS_CREDS,
// NATS_NKEY_SEED, NATS_TLS_CERT, NATS_TLS_KEY and NATS_TLS_CA. An empty URL
// means no server is configured (agent.Run then starts the embedded one).
// Files named by the variables must exist; a certificate needs its key.
func ConfigFromEnv() (Config, error) {
	c := Config{
		URL:          os.Getenv(EnvURL),
		Token:        os.Getenv(EnvToken),
		CredsFile:    os.Getenv(EnvCreds),
		NKeySeedFile: os.Getenv(EnvNKeySeed),
		TLSCert:      os.Getenv(EnvTLSCert),
		TLSKey:       os.Getenv(EnvTLSKey),
		TLSCA:        os.Getenv(EnvTLSCA),
	}
	if c.URL == "" {
		c.URL = os.Getenv(EnvEndpoint)
	}
	var errs []error
	for _, f := range []struct{ env, path string }{
		{EnvCreds, c.CredsFile}, {EnvNKeySeed, c.NKeySeedFile},
		{EnvTLSCert, c.TLSCert}, {EnvTLSKey, c.TLSKey}, {EnvTLSCA, c.TLSCA},
	} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			errs = append(errs, fmt.Errorf("natsbus: %s=%q: %w", f.env, f.path, err))
		}
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		errs = append(errs, fmt.Errorf("natsbus: %s and %s must be set together", EnvTLSCert, EnvTLSKey))
	}
	if c.CredsFile != "" && c.NKeySeedFile != "" {
		errs = append(errs, fmt.Errorf("natsbus: set %s or %s, not both", EnvCreds, EnvNKeySeed))
	}
	return c, errors.Join(errs...)
}

// options turns c into nats.go connect options.
func (c Config) options(log *slog.Logger, onReconnect func(*nats.Conn)) ([]nats.Option, error) {
	wait := c.ReconnectWait
	if wait <= 0 {
		wait = 2 * time.Second
	}
	opts := []nats.Option{
		nats.MaxReconnects(-1),
		nats.ReconnectWait(wait),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("nats: disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("nats: reconnected", "url", nc.ConnectedUrlRedacted())
			onReconnect(nc)
		}),
		nats.ErrorHandler(func(_ *nats.Conn, s *nats.Subscription, err error) {
			subj := ""
			if s != nil {
				subj = s.Subject
			}
			log.Warn("nats: async error", "subject", subj, "err", err)
		}),
	}
	if c.Name != "" {
		opts = append(opts, nats.Name(c.Name))
	}
	if c.Token != "" {
		opts = append(opts, nats.Token(c.Token))
	}
	if c.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(c.CredsFile))
	}
	if c.NKeySeedFile != "" {
		o, err := nats.NkeyOptionFromSeed(c.NKeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("natsbus: NKey seed %q: %w", c.NKeySeedFile, err)
		}
		opts = append(opts, o)
	}
	if c.TLSCert != "" || c.TLSKey != "" {
		if c.TLSCert == "" || c.TLSKey == "" {
			return nil, errors.New("natsbus: TLS certificate and key must be set together")
		}
		opts = append(opts, nats.ClientCert(c.TLSCert, c.TLSKey))
	}
	if c.TLSCA != "" {
		opts = append(opts, nats.RootCAs(c.TLSCA))
	}
	return opts, nil
}
