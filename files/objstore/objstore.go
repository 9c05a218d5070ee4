// Package objstore keeps files in a JetStream Object Store, the bus's own
// object storage: no second storage service to run, and the files are
// replicated as the NATS cluster replicates streams.
//
// Each file is one object named by its id; its name, content type, owner
// and thread are the object's metadata.
package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/saap-go/agent/files"
)

// DefaultBucket is the bucket New uses when given none.
const DefaultBucket = "saap_files"

// Config configures the bucket New creates when it does not exist.
type Config struct {
	// Bucket is the bucket's name. Default DefaultBucket.
	Bucket string
	// Replicas is the bucket's replica count. Default 1.
	Replicas int
	// MaxBytes bounds the bucket's size; 0: no bound.
	MaxBytes int64
	// TTL is how long files are kept; 0: until deleted.
	TTL time.Duration
	// Storage is file or memory storage. Default file.
	Storage jetstream.StorageType
}

// Store is a files.Store on a JetStream Object Store bucket.
type Store struct {
	os jetstream.ObjectStore
}

var _ files.Store = (*Store)(nil)

// New opens the bucket of cfg, creating it when it does not exist. It
// blocks until JetStream answered or ctx is done.
func New(ctx context.Context, js jetstream.JetStream, cfg Config) (*Store, error) {
	if cfg.Bucket == "" {
		cfg.Bucket = DefaultBucket
	}
	os, err := js.ObjectStore(ctx, cfg.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		os, err = js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket: cfg.Bucket, Description: "files users attached to their messages",
			Replicas: cfg.Replicas, MaxBytes: cfg.MaxBytes, TTL: cfg.TTL, Storage: cfg.Storage,
		})
	}
	if err != nil {
		return nil, fmt.Errorf("objstore: open bucket %s: %w", cfg.Bucket, err)
	}
	return &Store{os: os}, nil
}

// Metadata keys of an object.
const (
	metaName    = "filename"
	metaType    = "content-type"
	metaOwner   = "owner"
	metaThread  = "thread"
	metaCreated = "created"
)

// Put implements files.Store. It does not look for an object of the id
// first (a round trip per upload): ids from files.NewID do not repeat.
func (s *Store) Put(ctx context.Context, info files.Info, r io.Reader) (files.Info, error) {
	if err := files.CheckID(info.ID); err != nil {
		return files.Info{}, err
	}
	if info.Created.IsZero() {
		info.Created = time.Now()
	}
	oi, err := s.os.Put(ctx, jetstream.ObjectMeta{Name: info.ID, Metadata: map[string]string{
		metaName: info.Name, metaType: info.ContentType, metaOwner: info.Owner, metaThread: info.Thread,
		metaCreated: info.Created.UTC().Format(time.RFC3339Nano),
	}}, r)
	if err != nil {
		return files.Info{}, fmt.Errorf("objstore: put %s: %w", info.ID, err)
	}
	return infoOf(oi), nil
}

// Get implements files.Store.
func (s *Store) Get(ctx context.Context, id string) (io.ReadCloser, files.Info, error) {
	if files.CheckID(id) != nil {
		return nil, files.Info{}, fmt.Errorf("%w: %.64q", files.ErrNotFound, id)
	}
	res, err := s.os.Get(ctx, id)
	if err != nil {
		return nil, files.Info{}, s.wrap(id, err)
	}
	oi, err := res.Info()
	if err != nil {
		_ = res.Close()
		return nil, files.Info{}, fmt.Errorf("objstore: get %s: %w", id, err)
	}
	return res, infoOf(oi), nil
}

// Stat implements files.Store.
func (s *Store) Stat(ctx context.Context, id string) (files.Info, error) {
	if files.CheckID(id) != nil {
		return files.Info{}, fmt.Errorf("%w: %.64q", files.ErrNotFound, id)
	}
	oi, err := s.os.GetInfo(ctx, id)
	if err != nil {
		return files.Info{}, s.wrap(id, err)
	}
	return infoOf(oi), nil
}

// Delete implements files.Store.
func (s *Store) Delete(ctx context.Context, id string) error {
	if files.CheckID(id) != nil {
		return fmt.Errorf("%w: %.64q", files.ErrNotFound, id)
	}
	// Deleting a deleted object succeeds in JetStream; the Store contract
	// says ErrNotFound.
	if _, err := s.os.GetInfo(ctx, id); err != nil {
		return s.wrap(id, err)
	}
	if err := s.os.Delete(ctx, id); err != nil {
		return s.wrap(id, err)
	}
	return nil
}

func (s *Store) wrap(id string, err error) error {
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("%w: %s", files.ErrNotFound, id)
	}
	return fmt.Errorf("objstore: %s: %w", id, err)
}

func infoOf(oi *jetstream.ObjectInfo) files.Info {
	m := oi.Metadata
	created, _ := time.Parse(time.RFC3339Nano, m[metaCreated])
	if created.IsZero() {
		created = oi.ModTime
	}
	return files.Info{ID: oi.Name, Name: m[metaName], ContentType: m[metaType], Size: int64(oi.Size),
		Owner: m[metaOwner], Thread: m[metaThread], Created: created}
}
