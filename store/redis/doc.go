// Package redisstore is a dispatch.Store on Redis (or Valkey), the state
// store of agents deployed with REDIS_URL, as the reference platform keeps
// its step store and contexts in Redis.
//
// A run's state is three hashes under one hash tag, namespaced by agent
// class and run id: claims, execution counters and the run context.
// Markers are a fourth hash that DeleteRun leaves alone, and each thread
// context is a hash namespaced by class and thread id. Run state and markers
// expire 30 days after their last write, as in the reference; thread
// contexts do not expire (both configurable).
//
// Atomicity: a claim (look up, check the step's limit, create, count) is
// one Lua script; Record, Complete and SetMarker are scripts too; Incr is
// HINCRBY. The store cannot watch markers, so the engine reads the
// terminal marker once per event.
// Because the run's hashes share a hash tag the scripts also work on Redis
// Cluster. DeleteRun deletes three keys by name: no SCAN, whatever the size
// of the database.
//
//	store, err := redisstore.Open(ctx, os.Getenv("REDIS_URL"), redisstore.Config{})
//	if err != nil { ... }
//	defer store.Close()
package redis
