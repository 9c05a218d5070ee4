// Package profiles lets a deployment without the Python platform keep and
// serve its agents' profiles: the instance configurations an agent fetches
// over the config RPC once per run.
//
// Three parts, each usable alone:
//
//   - Store keeps profiles in a JetStream key-value bucket, one key a
//     profile, with compare-and-set writes: an update names the revision
//     it was made from, and a concurrent edit fails with ErrConflict
//     instead of overwriting. Store is also a schedule.Source: the
//     schedules are the profiles' "cron" fields.
//   - Serve answers the config RPC (aihub.rpc.config.agent.<Class>.<id>)
//     from a Store exactly as the platform's API does on the wire.
//   - Mount serves admin routes on a gateway to list, create, edit and
//     delete profiles and their schedules. A configuration is validated
//     against the JSON Schema the class published in discovery (Check);
//     only administrators (AdminRole: the "admin" role or is_sys_admin)
//     reach them.
//
// saap-gateway runs all three with -profiles:
//
//	st, err := profiles.NewStore(ctx, b.JetStream(), profiles.StoreConfig{})
//	resp, err := profiles.Serve(ctx, b, st, profiles.ResponderOptions{})
//	defer resp.Stop()
//	err = profiles.Mount(gw, profiles.Options{Store: st})
//	s, err := schedule.New(schedule.Config{Bus: b, Store: state, Source: st})
package profiles
