package vector

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// Files of a persisted index: the snapshot, and the log of writes since
// that snapshot, named by the snapshot's generation so a log left by a
// crash between the two is recognised as already folded in.
const (
	snapshotName = "snapshot"
	snapshotTmp  = "snapshot.tmp"
	logPrefix    = "log-"
	magic        = "SAAPVEC\x01"
	maxFrame     = 1 << 30
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const (
	opUpsert byte = 1
	opDelete byte = 2
)

type disk struct {
	dir     string
	gen     uint64
	log     *os.File
	off     int64 // end of the last whole frame
	sync    bool
	pending int   // records logged since the snapshot
	broken  error // set when the log could not be repaired after a failed write
}

// Open opens, or creates, the index persisted in dir. Only one Local may
// have a directory open at a time. Options that shape the graph (WithM,
// WithSeed) apply to a new directory; an existing one keeps what its
// snapshot says.
func Open(dir string, opts ...Option) (*Local, error) {
	if dir == "" {
		return nil, fmt.Errorf("%w: empty directory", ErrInvalid)
	}
	l, err := newLocal(opts)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("vector: %w", err)
	}
	d := &disk{dir: dir, sync: l.cfg.sync}
	b, err := os.ReadFile(filepath.Join(dir, snapshotName))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("vector: %w", err)
	default:
		if d.gen, err = l.decodeSnapshot(b); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, filepath.Join(dir, snapshotName), err)
		}
	}
	if err := d.replay(l); err != nil {
		return nil, err
	}
	d.removeStale()
	l.disk = d
	return l, nil
}

func (d *disk) logPath(gen uint64) string {
	return filepath.Join(d.dir, fmt.Sprintf("%s%016x", logPrefix, gen))
}

// replay applies the log of the snapshot's generation and cuts off a torn
// or corrupt tail: a frame is applied only when it is whole and its
// checksum matches.
func (d *disk) replay(l *Local) error {
	f, err := os.OpenFile(d.logPath(d.gen), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("vector: %w", err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return fmt.Errorf("vector: %w", err)
	}
	off := 0
	for off+8 <= len(data) {
		n := int(binary.LittleEndian.Uint32(data[off:]))
		sum := binary.LittleEndian.Uint32(data[off+4:])
		if n > maxFrame || off+8+n > len(data) {
			break
		}
		payload := data[off+8 : off+8+n]
		if crc32.Checksum(payload, castagnoli) != sum {
			break
		}
		if err := l.applyFrame(payload); err != nil {
			break
		}
		off += 8 + n
		d.pending++
	}
	if off < len(data) {
		if err := f.Truncate(int64(off)); err != nil {
			f.Close()
			return fmt.Errorf("vector: cutting the log's torn tail: %w", err)
		}
	}
	if _, err := f.Seek(int64(off), io.SeekStart); err != nil {
		f.Close()
		return fmt.Errorf("vector: %w", err)
	}
	d.log, d.off = f, int64(off)
	return nil
}

func (d *disk) removeStale() {
	keep := filepath.Base(d.logPath(d.gen))
	entries, _ := os.ReadDir(d.dir)
	for _, e := range entries {
		name := e.Name()
		if name == snapshotTmp || (strings.HasPrefix(name, logPrefix) && name != keep) {
			_ = os.Remove(filepath.Join(d.dir, name))
		}
	}
}

func (d *disk) logUpsert(ps []prepared) error {
	var e enc
	e.byte(opUpsert)
	e.uvarint(uint64(len(ps)))
	for _, p := range ps {
		e.str(p.id)
		e.str(p.text)
		e.meta(p.meta)
		e.uvarint(uint64(len(p.vec)))
		e.floats(p.vec)
	}
	return d.append(e.b)
}

func (d *disk) logDelete(ids []string) error {
	var e enc
	e.byte(opDelete)
	e.uvarint(uint64(len(ids)))
	for _, id := range ids {
		e.str(id)
	}
	return d.append(e.b)
}

// append writes one frame and, with sync on, fsyncs it. A failed write is
// cut back so the log never holds a torn frame before a whole one.
func (d *disk) append(payload []byte) error {
	if d.broken != nil {
		return d.broken
	}
	if len(payload) > maxFrame {
		return fmt.Errorf("%w: one write of %d bytes, more than %d", ErrInvalid, len(payload), maxFrame)
	}
	frame := make([]byte, 8, 8+len(payload))
	binary.LittleEndian.PutUint32(frame, uint32(len(payload)))
	binary.LittleEndian.PutUint32(frame[4:], crc32.Checksum(payload, castagnoli))
	frame = append(frame, payload...)
	_, err := d.log.Write(frame)
	if err == nil && d.sync {
		err = d.log.Sync()
	}
	if err != nil {
		if terr := d.log.Truncate(d.off); terr != nil {
			d.broken = fmt.Errorf("vector: log unusable after a failed write: %w", errors.Join(err, terr))
			return d.broken
		}
		_, _ = d.log.Seek(d.off, io.SeekStart)
		return fmt.Errorf("vector: writing the log: %w", err)
	}
	d.off += int64(len(frame))
	return nil
}

// snapshot writes the whole index as the next generation (temporary file,
// fsync, rename, fsync of the directory), then starts that generation's
// empty log and removes the old one.
func (d *disk) snapshot(l *Local) error {
	if d.broken != nil {
		return d.broken
	}
	gen := d.gen + 1
	tmp := filepath.Join(d.dir, snapshotTmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("vector: snapshot: %w", err)
	}
	body := l.encodeSnapshot(gen)
	_, err = f.Write(body)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(d.dir, snapshotName))
	}
	if err == nil {
		err = syncDir(d.dir)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("vector: snapshot: %w", err)
	}
	nf, err := os.OpenFile(d.logPath(gen), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		d.broken = fmt.Errorf("vector: new log after snapshot: %w", err)
		return d.broken
	}
	old := d.log
	d.log, d.off, d.pending = nf, 0, 0
	_ = old.Close()
	_ = os.Remove(d.logPath(d.gen))
	d.gen = gen
	return syncDir(d.dir)
}

func (d *disk) close() error {
	if d.log == nil {
		return nil
	}
	err := d.log.Close()
	d.log = nil
	return err
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// applyFrame replays one log frame.
func (l *Local) applyFrame(p []byte) error {
	r := dec{b: p}
	op := r.byte()
	n := r.uvarint()
	switch op {
	case opUpsert:
		for i := uint64(0); i < n && r.err == nil; i++ {
			var pr prepared
			pr.id, pr.text, pr.meta = r.str(), r.str(), r.meta()
			pr.vec = r.floats(int(r.uvarint()))
			if r.err != nil {
				break
			}
			if len(pr.vec) == 0 || l.dim != 0 && len(pr.vec) != l.dim {
				return fmt.Errorf("record %q has %d dimensions, the index %d", pr.id, len(pr.vec), l.dim)
			}
			l.applyUpsert(pr)
		}
	case opDelete:
		for i := uint64(0); i < n && r.err == nil; i++ {
			id := r.str()
			if r.err == nil {
				l.applyDelete(id)
			}
		}
	default:
		return fmt.Errorf("unknown log operation %d", op)
	}
	return r.err
}

func (l *Local) encodeSnapshot(gen uint64) []byte {
	var e enc
	e.b = make([]byte, 0, len(l.vecs)*4+len(l.ids)*(64+8*l.cfg.m))
	e.b = append(e.b, magic...)
	e.uvarint(gen)
	e.uvarint(uint64(l.dim))
	e.uvarint(uint64(l.cfg.m))
	rs, _ := l.pcg.MarshalBinary()
	e.bytes(rs)
	e.uvarint(uint64(len(l.ids)))
	e.uvarint(uint64(l.entry + 1))
	e.uvarint(uint64(l.top))
	for n := range l.ids {
		if l.deleted[n] {
			e.byte(1)
		} else {
			e.byte(0)
		}
		e.str(l.ids[n])
		e.str(l.texts[n])
		e.meta(l.meta[n])
		e.floats(l.vec(uint32(n)))
		e.uvarint(uint64(len(l.links[n])))
		for _, ls := range l.links[n] {
			e.uvarint(uint64(len(ls)))
			for _, x := range ls {
				e.uvarint(uint64(x))
			}
		}
	}
	sum := crc32.Checksum(e.b, castagnoli)
	return binary.LittleEndian.AppendUint32(e.b, sum)
}

// decodeSnapshot loads b into the empty l and returns its generation.
func (l *Local) decodeSnapshot(b []byte) (uint64, error) {
	if len(b) < len(magic)+4 || !bytes.HasPrefix(b, []byte(magic)) {
		return 0, errors.New("not a snapshot of this format")
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return 0, errors.New("checksum mismatch")
	}
	r := dec{b: body[len(magic):]}
	gen := r.uvarint()
	dim := int(r.uvarint())
	m := int(r.uvarint())
	rs := r.bytes()
	count := r.uvarint()
	entry := int64(r.uvarint()) - 1
	top := int(r.uvarint())
	if r.err != nil || dim < 1 || dim > MaxDimension || m < 2 || count > uint64(len(body)) {
		return 0, errors.New("bad header")
	}
	if l.cfg.dim != 0 && l.cfg.dim != dim {
		return 0, fmt.Errorf("%w: the directory holds %d-dimensional vectors, WithDimension says %d", ErrDimension, dim, l.cfg.dim)
	}
	if err := l.pcg.UnmarshalBinary(rs); err != nil {
		return 0, fmt.Errorf("random state: %w", err)
	}
	l.dim, l.cfg.m = dim, m
	n := int(count)
	l.ids = make([]string, n)
	l.texts = make([]string, n)
	l.meta = make([]map[string]string, n)
	l.vecs = make([]float32, 0, n*dim)
	l.deleted = make([]bool, n)
	l.links = make([][][]uint32, n)
	for i := 0; i < n && r.err == nil; i++ {
		l.deleted[i] = r.byte() == 1
		l.ids[i], l.texts[i], l.meta[i] = r.str(), r.str(), r.meta()
		l.vecs = append(l.vecs, r.floats(dim)...)
		layers := r.uvarint()
		if layers > 17 {
			return 0, fmt.Errorf("node %d: %d layers", i, layers)
		}
		l.links[i] = make([][]uint32, layers)
		for j := range l.links[i] {
			c := r.uvarint()
			if c > uint64(4*m) {
				return 0, fmt.Errorf("node %d: %d links", i, c)
			}
			ls := make([]uint32, c, l.maxLinks(j)+1)
			for x := range ls {
				v := r.uvarint()
				if v >= count {
					return 0, fmt.Errorf("node %d links to %d of %d", i, v, count)
				}
				ls[x] = uint32(v)
			}
			l.links[i][j] = ls
		}
		if l.deleted[i] {
			l.dead++
			continue
		}
		l.byID[l.ids[i]] = uint32(i)
		for k, v := range l.meta[i] {
			pk := postingKey(k, v)
			s := l.postings[pk]
			if s == nil {
				s = map[uint32]struct{}{}
				l.postings[pk] = s
			}
			s[uint32(i)] = struct{}{}
		}
	}
	if r.err != nil {
		return 0, r.err
	}
	// A link to a node that has no such layer would break every walk.
	for i, layers := range l.links {
		for j, ls := range layers {
			for _, v := range ls {
				if len(l.links[v]) <= j {
					return 0, fmt.Errorf("node %d links on layer %d to node %d, which has %d layers", i, j, v, len(l.links[v]))
				}
			}
		}
	}
	if entry >= int64(n) || (n > 0 && entry < 0) || (entry >= 0 && top >= len(l.links[entry])) {
		return 0, errors.New("bad entry point")
	}
	l.entry, l.top = int32(entry), top
	return gen, nil
}

type enc struct{ b []byte }

func (e *enc) byte(x byte)      { e.b = append(e.b, x) }
func (e *enc) uvarint(x uint64) { e.b = binary.AppendUvarint(e.b, x) }
func (e *enc) bytes(x []byte)   { e.uvarint(uint64(len(x))); e.b = append(e.b, x...) }
func (e *enc) str(s string)     { e.uvarint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *enc) floats(v []float32) {
	for _, x := range v {
		e.b = binary.LittleEndian.AppendUint32(e.b, math.Float32bits(x))
	}
}
func (e *enc) meta(m map[string]string) {
	e.uvarint(uint64(len(m)))
	for k, v := range m { // order does not matter to the decoder
		e.str(k)
		e.str(v)
	}
}

// dec reads what enc wrote; the first error sticks and later reads return
// zero values.
type dec struct {
	b   []byte
	err error
}

var errShort = errors.New("truncated data")

func (r *dec) fail() { r.err, r.b = errShort, nil }

func (r *dec) byte() byte {
	if r.err != nil || len(r.b) < 1 {
		r.fail()
		return 0
	}
	x := r.b[0]
	r.b = r.b[1:]
	return x
}

func (r *dec) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	x, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return x
}

func (r *dec) bytes() []byte {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) {
		r.fail()
		return nil
	}
	x := r.b[:n:n]
	r.b = r.b[n:]
	return x
}

func (r *dec) str() string { return string(r.bytes()) }

func (r *dec) floats(n int) []float32 {
	if r.err != nil || n < 0 || n > MaxDimension || 4*n > len(r.b) {
		r.fail()
		return nil
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(r.b[4*i:]))
	}
	r.b = r.b[4*n:]
	return v
}

func (r *dec) meta() map[string]string {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) {
		r.fail()
		return nil
	}
	if n == 0 {
		return nil
	}
	m := make(map[string]string, n)
	for i := uint64(0); i < n && r.err == nil; i++ {
		k := r.str()
		m[k] = r.str()
	}
	return m
}
