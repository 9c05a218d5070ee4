// Package kvstore is a dispatch.Store on NATS JetStream key-value buckets:
// the default state store of an agent on NATS, so that an agent with an
// embedded nats-server is fully durable without any other server.
//
// It keeps idempotency claims, execution counters, markers and run
// contexts in one bucket (default "saap_state", entries expire 30 days after
// their last write, as the reference's Redis keys) and thread contexts in a
// second bucket without expiry (default "saap_state_threads"). Keys are
// namespaced by agent class and run or thread, and every name is
// escaped into a valid key token, so any string works as a class, run id,
// step name or context key.
//
// Atomicity comes from the KV primitives alone, so any number of replicas
// can share the buckets:
//
//   - a claim is a KV Create: of concurrent claimers exactly one wins; a
//     Record is the same create, holding the completed outcome, and writes
//     no counter: the claim keys of a step without a limit are its count;
//   - counters and Incr are compare-and-set loops on the key's revision;
//   - a limited step reserves its slot in the counter (which lists the claim
//     keys holding slots) before it creates the claim, so the counter never
//     exceeds the limit and a crash between the two writes is repaired by
//     the next Claim of that key, which reports Pending;
//   - DeleteRun purges the run's key prefix in one request instead of
//     scanning the bucket; markers live outside that prefix and survive it.
//
// Round trips are what a KV store costs, so the store remembers the
// revision it last wrote to each claim and counter (a bounded map): a new
// unlimited claim is a create of the claim and a create or update of the
// counter, and Complete updates the claim at its creation revision, with no
// read first. Every such write is still checked against the revision on the
// server; a stale hint falls back to read-then-CAS. SetMany
// (dispatch.BatchSetter) writes a run context's first batch, a start
// event's entries, as one seed key, and later entries win over it by
// revision; other batches send their puts concurrently. WatchMarker
// (dispatch.MarkerWatcher) follows a marker of a class's runs with a plain
// subscription to its keys' subjects: no consumer sits on the state
// bucket, because the server recounts every consumer's pending messages at
// each purge, and every teardown purges.
//
// The store works with nats-server 2.9 and later.
//
//	js, _ := jetstream.New(nc)
//	store, err := natskv.New(ctx, js, natskv.Config{})
package natskv
