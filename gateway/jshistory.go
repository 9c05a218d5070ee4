package gateway

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultHistoryStream is the JetStream stream NewJetStreamHistory uses
// unless told otherwise.
const DefaultHistoryStream = "SAAP_HISTORY"

// historyBatch bounds one fetch of a read, so that the client's buffers
// stay small for a long thread.
const historyBatch = 256

// HistoryConfig configures NewJetStreamHistory. The zero value is usable.
type HistoryConfig struct {
	// Stream is the stream's name. Default DefaultHistoryStream.
	Stream string
	// Subject is the prefix of the stream's subjects, one per thread:
	// <Subject>.<thread>. Default "saap.history".
	Subject string
	// Limits are the retention settings (max age, entries per thread).
	Limits HistoryLimits
	// Replicas is the stream's replica count when the store creates it.
	// Default 1.
	Replicas int
	// Storage is the stream's storage when the store creates it. Default
	// file storage.
	Storage jetstream.StorageType
}

// JetStreamHistory keeps thread history in a JetStream stream on the
// agents' NATS server: one subject per thread, one message per entry, so
// it survives restarts and every gateway replica reads the same history.
// A message's data is the entry's chat message in wire JSON; the rest of
// the entry is in Saap-* headers.
// The stream's MaxAge and MaxMsgsPerSubject are HistoryConfig.Limits. A
// read costs two requests plus the thread's own messages: it reads the
// thread's subject with an ephemeral consumer, fetched without waiting,
// and deletes the consumer before returning (no goroutine or server
// consumer outlives the call). Everything used exists in nats-server 2.9.
type JetStreamHistory struct {
	js      jetstream.JetStream
	stream  jetstream.Stream
	name    string
	subject string
}

// NewJetStreamHistory opens the history stream of cfg on js, creating it
// when it does not exist yet, and updating its limits when they differ.
func NewJetStreamHistory(ctx context.Context, js jetstream.JetStream, cfg HistoryConfig) (*JetStreamHistory, error) {
	if js == nil {
		return nil, errors.New("gateway: NewJetStreamHistory needs a JetStream context")
	}
	if cfg.Stream == "" {
		cfg.Stream = DefaultHistoryStream
	}
	if cfg.Subject == "" {
		cfg.Subject = "saap.history"
	}
	lim := cfg.Limits.withDefaults()
	sc := jetstream.StreamConfig{
		Name:              cfg.Stream,
		Description:       "saap-go gateway: thread history, one subject per thread",
		Subjects:          []string{cfg.Subject + ".*"},
		MaxAge:            lim.MaxAge,
		MaxMsgsPerSubject: lim.MaxPerThread,
		Replicas:          cfg.Replicas,
		Storage:           cfg.Storage,
		Discard:           jetstream.DiscardOld,
	}
	if sc.MaxMsgsPerSubject == 0 {
		sc.MaxMsgsPerSubject = -1
	}
	s, err := js.CreateOrUpdateStream(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("gateway: history stream %s: %w", cfg.Stream, err)
	}
	return &JetStreamHistory{js: js, stream: s, name: cfg.Stream, subject: cfg.Subject}, nil
}

func (h *JetStreamHistory) threadSubject(thread string) (string, error) {
	if err := validToken("thread_id", thread); err != nil {
		return "", fmt.Errorf("gateway: history: %w", err)
	}
	return h.subject + "." + thread, nil
}

// Headers of a history message; its data is the chat message itself, so
// a fill copies it without decoding.
const (
	hdrHistoryID   = "Saap-History-Id"
	hdrHistoryAt   = "Saap-Created-At"
	hdrHistoryCls  = "Saap-Agent-Class"
	hdrHistoryAgt  = "Saap-Agent-Id"
	hdrHistoryDisp = "Saap-Display-Id"
	hdrHistoryRun  = "Saap-Run-Id"
	hdrHistoryUser = "Saap-User-Id"
)

// Append implements History. The entry's ID is the message id, so the
// stream drops a retried append within its duplicate window.
func (h *JetStreamHistory) Append(ctx context.Context, thread string, e HistoryEntry) error {
	if err := checkEntry(thread, e); err != nil {
		return err
	}
	subj, err := h.threadSubject(thread)
	if err != nil {
		return err
	}
	m := nats.NewMsg(subj)
	m.Data = e.Message
	m.Header.Set(hdrHistoryID, e.ID)
	m.Header.Set(hdrHistoryAt, strconv.FormatInt(e.CreatedAt, 10))
	for k, v := range map[string]string{hdrHistoryCls: e.Class, hdrHistoryAgt: e.AgentID, hdrHistoryDisp: e.Display,
		hdrHistoryRun: e.Run, hdrHistoryUser: e.User} {
		if v != "" {
			m.Header.Set(k, v)
		}
	}
	if _, err := h.js.PublishMsg(ctx, m, jetstream.WithMsgID(thread+"."+e.ID)); err != nil {
		return fmt.Errorf("gateway: history: append to %s: %w", subj, err)
	}
	return nil
}

// Read implements History.
func (h *JetStreamHistory) Read(ctx context.Context, thread string, after uint64, limit int) ([]HistoryEntry, error) {
	var out []HistoryEntry
	err := h.scan(ctx, thread, after, limit, func(seq uint64, m jetstream.Msg) error {
		hd, data := m.Headers(), m.Data()
		id := hd.Get(hdrHistoryID)
		if id == "" || len(data) < 2 || data[0] != '{' || data[len(data)-1] != '}' {
			// Not ours: skip rather than fail the whole history.
			return nil
		}
		at, _ := strconv.ParseInt(hd.Get(hdrHistoryAt), 10, 64)
		out = append(out, HistoryEntry{Seq: seq, ID: id, Message: data, CreatedAt: at,
			Class: hd.Get(hdrHistoryCls), AgentID: hd.Get(hdrHistoryAgt), Display: hd.Get(hdrHistoryDisp),
			Run: hd.Get(hdrHistoryRun), User: hd.Get(hdrHistoryUser)})
		return nil
	})
	return out, err
}

// scan calls fn with each message of thread's subject with a sequence
// above after, oldest first, up to limit (<= 0: all).
func (h *JetStreamHistory) scan(ctx context.Context, thread string, after uint64, limit int, fn func(seq uint64, m jetstream.Msg) error) error {
	subj, err := h.threadSubject(thread)
	if err != nil {
		return err
	}
	cons, err := h.stream.CreateConsumer(ctx, jetstream.ConsumerConfig{
		FilterSubject:     subj,
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       after + 1,
		AckPolicy:         jetstream.AckNonePolicy,
		MemoryStorage:     true,
		Replicas:          1,
		InactiveThreshold: 30 * time.Second,
	})
	if err != nil {
		return fmt.Errorf("gateway: history: read %s: %w", subj, err)
	}
	name := cons.CachedInfo().Name
	defer func() {
		// Not the caller's context: a cancelled request must still
		// remove its consumer.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = h.stream.DeleteConsumer(dctx, name)
	}()
	n := 0
	for {
		batch := historyBatch
		if limit > 0 && limit-n < batch {
			batch = limit - n
		}
		// NoWait: the server answers at once with what it has, so the
		// fetch's goroutine ends with the batch.
		msgs, err := cons.FetchNoWait(batch)
		if err != nil {
			return fmt.Errorf("gateway: history: read %s: %w", subj, err)
		}
		got := 0
		var ferr error
		for m := range msgs.Messages() {
			// Drain the batch whatever happens, so its goroutine ends.
			got++
			md, err := m.Metadata()
			if err != nil || ferr != nil {
				continue
			}
			ferr = fn(md.Sequence.Stream, m)
			n++
		}
		if ferr != nil {
			return ferr
		}
		if err := msgs.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return fmt.Errorf("gateway: history: read %s: %w", subj, err)
		}
		// A short batch is the end of the thread: the server sends what
		// it has and then says so.
		if got < batch || (limit > 0 && n >= limit) {
			return nil
		}
	}
}
