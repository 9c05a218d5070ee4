// Package vector is a small vector index: records with an id, a vector, a
// text and string metadata, queried by cosine similarity with an optional
// metadata filter.
//
// Index is the interface the memory and knowledge capabilities consume.
// Local is the embedded implementation: pure Go, nothing extra to run. It
// keeps an HNSW graph (hierarchical navigable small world, Malkov and
// Yashunin) for approximate nearest-neighbour search and answers exactly,
// by a scan, when the index or the filtered subset is small enough for a
// scan to be the faster and better answer.
//
// Open persists a Local in a directory: every Upsert and Delete is appended
// to a checksummed log and fsynced before it returns, and the whole index,
// graph included, is written as a snapshot (temporary file, fsync, rename)
// on Close and every so many logged records, so a restart reads the
// snapshot and replays only the log's tail. A torn last log frame, as a
// crash in the middle of a write leaves it, is cut off on Open. NewMemory
// is the same index without files.
//
// Vectors are stored normalised to unit length, so Match.Vector is the
// unit-length copy and Match.Score is the cosine similarity in [-1, 1],
// higher being closer.
package vector
