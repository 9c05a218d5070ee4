package vector

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// Record is one entry of an index. ID is unique within the index; an Upsert
// with an ID already present replaces that record.
type Record struct {
	ID       string
	Vector   []float32
	Text     string
	Metadata map[string]string
}

// Match is a record found by Query with its cosine similarity to the
// query vector: higher is closer, 1 is the same direction.
type Match struct {
	Record
	Score float32
}

// Filter restricts a query to records whose metadata has every key of the
// filter with exactly the filter's value. A nil or empty filter matches
// every record.
type Filter map[string]string

// Matches reports whether metadata satisfies the filter.
func (f Filter) Matches(metadata map[string]string) bool {
	for k, v := range f {
		got, ok := metadata[k]
		if !ok || got != v {
			return false
		}
	}
	return true
}

// Index is a vector index. Implementations are safe for concurrent use.
// Methods that take a context stop early when it is done, returning its
// error; a write that returned an error may or may not have been applied.
type Index interface {
	// Upsert adds records, replacing any with the same ID.
	Upsert(ctx context.Context, records ...Record) error
	// Delete removes records by ID; unknown IDs are ignored.
	Delete(ctx context.Context, ids ...string) error
	// Query returns up to k records matching f, closest first.
	Query(ctx context.Context, v []float32, k int, f Filter) ([]Match, error)
	// Len is the number of records in the index.
	Len() int
	// Close releases the index; calls after it fail with ErrClosed.
	Close() error
}

// Errors callers branch on; the errors returned wrap them with the detail.
var (
	// ErrInvalid is bad input: an empty or oversize ID, an empty vector,
	// NaN or infinite components, a zero vector, k below 1.
	ErrInvalid = errors.New("vector: invalid input")
	// ErrDimension is a vector whose length differs from the index's.
	ErrDimension = errors.New("vector: dimension mismatch")
	// ErrClosed is a call on a closed index.
	ErrClosed = errors.New("vector: index closed")
	// ErrCorrupt is a snapshot that fails its checksum or cannot be read.
	ErrCorrupt = errors.New("vector: corrupt index file")
)

// MaxIDLen bounds a record ID, in bytes.
const MaxIDLen = 1024

// MaxDimension bounds a vector's length.
const MaxDimension = 1 << 16

// normalize checks v and returns its unit-length copy; what names the
// vector in errors.
func normalize(what string, v []float32) ([]float32, error) {
	if len(v) == 0 {
		return nil, fmt.Errorf("%w: %s: empty vector", ErrInvalid, what)
	}
	if len(v) > MaxDimension {
		return nil, fmt.Errorf("%w: %s: %d dimensions, more than %d", ErrInvalid, what, len(v), MaxDimension)
	}
	var sum float64
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, fmt.Errorf("%w: %s: component %d is %v", ErrInvalid, what, i, x)
		}
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return nil, fmt.Errorf("%w: %s: zero vector has no direction", ErrInvalid, what)
	}
	inv := float32(1 / math.Sqrt(sum))
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x * inv
	}
	return out, nil
}

func checkID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: empty record ID", ErrInvalid)
	}
	if len(id) > MaxIDLen {
		return fmt.Errorf("%w: record ID of %d bytes, more than %d", ErrInvalid, len(id), MaxIDLen)
	}
	return nil
}

// dot is the inner product of two equal-length vectors.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}
