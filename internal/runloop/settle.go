package runloop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
)

// The settlements of the consumers beside a runner's own (the delegators'
// requests and answers), whose handlers decide for themselves. prefix names
// the consumer in the log.

// Retry hands d back for a later attempt, after the infrastructure backoff.
func Retry(log *slog.Logger, prefix string, d bus.Delivery, what string, err error) {
	log.Warn(prefix+": "+what+"; retrying", "error", err, "attempt", d.NumDelivered())
	if nerr := d.Nak(bus.Backoff(d.NumDelivered())); nerr != nil && !errors.Is(nerr, bus.ErrSettled) {
		log.Warn(prefix+": handing back", "error", nerr)
	}
}

// Reject dead-letters d with reason: handling it again cannot help.
func Reject(ctx context.Context, log *slog.Logger, prefix string, d bus.Delivery, reason string) {
	log.Error(prefix+": refused", "subject", d.Msg().Subject, "reason", reason)
	if err := d.DeadLetter(ctx, reason); err != nil {
		log.Warn(prefix+": dead-lettering", "error", err)
	}
}

// Ack acknowledges d; one already settled is no fault.
func Ack(ctx context.Context, log *slog.Logger, prefix string, d bus.Delivery) {
	if err := d.Ack(ctx); err != nil && !errors.Is(err, bus.ErrSettled) {
		log.Warn(prefix+": ack", "error", err)
	}
}

// DeliverNew creates the durable cfg, if it does not exist yet, to deliver
// only what is stored from now on: a class's stream may hold weeks of other
// runs that must not be replayed. Once it exists, a restart resumes where
// it stopped. Buses without JetStream access keep the bus's default.
func DeliverNew(ctx context.Context, b bus.Bus, cfg bus.ConsumerConfig) error {
	jsb, ok := b.(natsbus.JetStreamer)
	if !ok {
		return nil
	}
	w := cfg.WithDefaults()
	_, err := jsb.JetStream().CreateConsumer(ctx, w.Stream, jetstream.ConsumerConfig{
		Durable: w.Durable, FilterSubject: w.FilterSubject, AckPolicy: jetstream.AckExplicitPolicy,
		DeliverPolicy: jetstream.DeliverNewPolicy, ReplayPolicy: jetstream.ReplayInstantPolicy,
		AckWait: w.AckWait, MaxDeliver: w.MaxDeliver, MaxAckPending: w.MaxAckPending,
	})
	if err != nil && !errors.Is(err, jetstream.ErrConsumerExists) {
		return fmt.Errorf("consumer %s on %s: %w", w.Durable, w.Stream, err)
	}
	return nil
}
