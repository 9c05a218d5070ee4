package files

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sync"
	"time"

	"github.com/saap-go/agent/event"
)

// ErrNotFound is returned by a Store for an id it does not hold.
var ErrNotFound = errors.New("files: no such file")

// Info describes a stored file.
type Info struct {
	// ID is the file's id: a lowercase UUID4, the file_id of its
	// UserUploadedFile reference.
	ID string
	// Name is the file's name as the user gave it, without a directory.
	Name string
	// ContentType is the MIME type, as sniffed from the content.
	ContentType string
	// Size is the length in bytes; a Store sets it on Put.
	Size int64
	// Owner is the id of the user who uploaded the file.
	Owner string
	// Thread is the thread the file was uploaded into; empty when it was
	// uploaded outside one. Its members may read the file.
	Thread string
	// Created is when the file was stored; a Store sets it on Put when
	// zero.
	Created time.Time
}

// Ref is the reference a message carries for the file.
func (i Info) Ref() event.UserUploadedFile {
	return event.UserUploadedFile{Filename: i.Name, FileType: i.ContentType, FileID: i.ID}
}

// Store keeps files. Implementations must be safe for concurrent use. Get,
// Stat and Delete return an error wrapping ErrNotFound for an unknown id.
type Store interface {
	// Put stores the bytes of r under info.ID, a fresh id (NewID), and
	// returns the info as stored (Size and Created set). A store need not
	// detect a reused id.
	Put(ctx context.Context, info Info, r io.Reader) (Info, error)
	// Get opens the file; the caller closes the reader.
	Get(ctx context.Context, id string) (io.ReadCloser, Info, error)
	// Stat returns the file's info.
	Stat(ctx context.Context, id string) (Info, error)
	// Delete removes the file.
	Delete(ctx context.Context, id string) error
}

var (
	reID   = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	reName = regexp.MustCompile(`^[^/\\]+$`)
)

// MaxName bounds a file name, in bytes.
const MaxName = 255

// NewID returns a fresh file id, a random lowercase UUID4.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// CheckID reports whether id is a file id (a lowercase UUID4).
func CheckID(id string) error {
	if !reID.MatchString(id) {
		return fmt.Errorf("files: file_id must be a lowercase UUID4, got %q", truncate(id, 64))
	}
	return nil
}

// CheckName reports whether name can be a file's name: not empty, at most
// MaxName bytes, without / or \ or control characters.
func CheckName(name string) error {
	if !reName.MatchString(name) || len(name) > MaxName {
		return fmt.Errorf("files: filename must be 1 to %d bytes without / or \\, got %q", MaxName, truncate(name, 64))
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("files: filename must not contain control characters, got %q", truncate(name, 64))
		}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// Memory is the in-memory Store: files live as long as the process. Use it
// in tests and one-process demos; the zero value is not usable, call
// NewMemory.
type Memory struct {
	mu    sync.RWMutex
	files map[string]memFile
}

type memFile struct {
	info Info
	data []byte
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{files: make(map[string]memFile)} }

// Put implements Store.
func (m *Memory) Put(ctx context.Context, info Info, r io.Reader) (Info, error) {
	if err := CheckID(info.ID); err != nil {
		return Info{}, err
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return Info{}, fmt.Errorf("files: read %s: %w", info.ID, err)
	}
	if err := ctx.Err(); err != nil {
		return Info{}, err
	}
	info.Size = int64(len(data))
	if info.Created.IsZero() {
		info.Created = time.Now()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.files[info.ID]; ok {
		return Info{}, fmt.Errorf("files: %s exists", info.ID)
	}
	m.files[info.ID] = memFile{info, data}
	return info, nil
}

// Get implements Store.
func (m *Memory) Get(_ context.Context, id string) (io.ReadCloser, Info, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	f, ok := m.files[id]
	if !ok {
		return nil, Info{}, fmt.Errorf("%w: %s", ErrNotFound, truncate(id, 64))
	}
	return io.NopCloser(bytes.NewReader(f.data)), f.info, nil
}

// Stat implements Store.
func (m *Memory) Stat(_ context.Context, id string) (Info, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	f, ok := m.files[id]
	if !ok {
		return Info{}, fmt.Errorf("%w: %s", ErrNotFound, truncate(id, 64))
	}
	return f.info, nil
}

// Delete implements Store.
func (m *Memory) Delete(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.files[id]; !ok {
		return fmt.Errorf("%w: %s", ErrNotFound, truncate(id, 64))
	}
	delete(m.files, id)
	return nil
}
