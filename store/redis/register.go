package redis

import (
	"context"

	"github.com/saap-go/agent/store"
)

// Importing the package makes store.Open take redis:// and rediss:// URLs.
func init() {
	open := func(ctx context.Context, url string) (store.Store, error) { return Open(ctx, url, Config{}) }
	store.Register("redis", open)
	store.Register("rediss", open)
}
