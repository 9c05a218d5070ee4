package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"

	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/gateway/profiles"
)

// profileOptions are the flags of the profile store.
type profileOptions struct {
	on        bool
	bucket    string
	adminRole string
	strict    bool
}

func (p *profileOptions) register(fs *flag.FlagSet) {
	fs.BoolVar(&p.on, "profiles", false, "keep the agents' profiles: answer their config RPC and serve the admin routes under "+profiles.Prefix)
	fs.StringVar(&p.bucket, "profiles-kv-bucket", profiles.DefaultBucket, "JetStream key-value bucket of the profiles")
	fs.StringVar(&p.adminRole, "admin-role", profiles.DefaultAdminRole, "role (in the user's roles) that may read and change profiles; is_sys_admin users may too")
	fs.BoolVar(&p.strict, "profiles-unknown-not-found", false, "answer found:false for an agent instance with no profile (default: an empty configuration, as the platform)")
}

// startProfiles opens the profile store, answers the config RPC from it
// until ctx ends and mounts the admin routes, if -profiles is set. It
// returns the store (nil without -profiles) for the scheduler.
func startProfiles(ctx context.Context, gw *gateway.Gateway, b *natsbus.Bus, o *profileOptions, log *slog.Logger) (*profiles.Store, error) {
	if !o.on {
		return nil, nil
	}
	st, err := profiles.NewStore(ctx, b.JetStream(), profiles.StoreConfig{Bucket: o.bucket})
	if err != nil {
		return nil, err
	}
	// Only the classes this gateway has discovered: another gateway on
	// the same NATS, with its own profiles, answers for its own.
	known := func(class string) bool {
		for _, c := range gw.Classes() {
			if c.Name() == class {
				return true
			}
		}
		return false
	}
	if _, err := profiles.Serve(ctx, b, st, profiles.ResponderOptions{UnknownNotFound: o.strict, Classes: known, Logger: log}); err != nil {
		return nil, err
	}
	if err := profiles.Mount(gw, profiles.Options{Store: st, Admin: profiles.AdminRole(o.adminRole), Logger: log}); err != nil {
		return nil, err
	}
	fmt.Printf("saap-gateway: profiles in bucket %s, config RPC answered\n", o.bucket)
	return st, nil
}
