// Package jsfault tells JetStream API failures inside the server from
// refusals, and tries idempotent creations again on the former.
package jsfault

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// Is reports a JetStream API error the server answered with code 500 or
// above: a failure inside the server (such as "error creating store for
// stream" on a loaded server), not a refusal of the request.
func Is(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.Code >= 500
}

// Retry calls create, and again, up to three calls in all, while it fails
// inside the server. create must be idempotent, as creating a stream, a
// consumer or a bucket with the same configuration is. Refusals, and calls
// once ctx is done, are not tried again.
func Retry(ctx context.Context, create func() error) error {
	err := create()
	for try := 1; try < 3 && Is(err) && ctx.Err() == nil; try++ {
		err = create()
	}
	return err
}

// KeyValue opens the bucket cfg names, creating it with cfg when it does not
// exist: a creation that fails inside the server is tried again (Retry), and
// one that finds the bucket made by another replica in between opens it.
func KeyValue(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return kv, err
	}
	err = Retry(ctx, func() (err error) {
		kv, err = js.CreateKeyValue(ctx, cfg)
		return err
	})
	if errors.Is(err, jetstream.ErrBucketExists) {
		kv, err = js.KeyValue(ctx, cfg.Bucket)
	}
	return kv, err
}
