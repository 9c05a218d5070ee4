// Package natsbus implements bus.Bus on nats.go and its jetstream package.
//
//	cfg, err := natsbus.ConfigFromEnv() // NATS_URL or NATS_ENDPOINT, NATS_TOKEN, ...
//	b, err := natsbus.Connect(cfg)
//	defer b.Close()
//
// Stream publishes are asynchronous with a bounded number pending
// (Config.MaxPending, default 10,000) and wait for their PubAck; a missing
// ack or an error is retried per Config.Retry, by default the reference's
// policy: 5 s per ack, 10 attempts, 1 s apart. The connection reconnects
// forever; core subscriptions and consumers resume by themselves.
//
// Consume uses a durable pull consumer (deliver all, explicit ack, replay
// instant) that every Consume call with the same durable shares, so
// replicas split its messages like a queue group. It is created if absent
// and updated if its AckWait, MaxDeliver, MaxAckPending or filter drifted.
// Each Consume call keeps up to Config.PullMaxMessages (128) messages
// buffered ahead of its handler. NextMsg sends one
// $JS.API.STREAM.MSG.GET request with next_by_subj.
//
// Connection settings for real deployments come from the environment
// (ConfigFromEnv): NATS_URL (or NATS_ENDPOINT), NATS_TOKEN, NATS_CREDS (a
// .creds file), NATS_NKEY_SEED (a seed file), NATS_TLS_CERT and
// NATS_TLS_KEY (client certificate), NATS_TLS_CA (CA bundle).
//
// Server versions: everything works on nats-server 2.9.10 (the version CI
// runs). Term with a reason needs 2.10.4; on older servers the bus sends a
// plain Term and logs the reason, since those servers would ignore the
// "+TERM <reason>" and redeliver. Pedantic mode is never enabled, so the
// protocol's literal "*" subject tokens can be published.
package natsbus
