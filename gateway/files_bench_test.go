package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/saap-go/agent/bus/bustest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/files"
	"github.com/saap-go/agent/files/objstore"
	"github.com/saap-go/agent/gateway"
)

// BenchmarkUpload measures an upload through the gateway's route (HTTP,
// multipart, authentication, sniffing, the store's Put into the Object
// Store) against the baseline of a raw Object Store put of the same bytes
// on the same embedded nats-server. Each file is deleted untimed.
func BenchmarkUpload(b *testing.B) {
	for _, size := range []int{64 << 10, 1 << 20} {
		data := bytes.Repeat([]byte("All work and no play makes Jack a dull boy.\n"), size/44+1)[:size]
		b.Run(fmt.Sprintf("%dKiB/raw-objectstore", size>>10), func(b *testing.B) {
			nb := bustest.NewNATS(b)
			ctx := context.Background()
			os, err := nb.JetStream().CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "bench_raw"})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				id := files.NewID()
				if _, err := os.Put(ctx, jetstream.ObjectMeta{Name: id}, bytes.NewReader(data)); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := os.Delete(ctx, id); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
		b.Run(fmt.Sprintf("%dKiB/gateway", size>>10), func(b *testing.B) {
			nb := bustest.NewNATS(b)
			ctx := context.Background()
			store, err := objstore.New(ctx, nb.JetStream(), objstore.Config{Bucket: "bench_gateway"})
			if err != nil {
				b.Fatal(err)
			}
			gw, err := gateway.New(gateway.Config{Bus: nb, Files: store, RateLimit: -1, MaxRunsPerUser: -1,
				Auth: gateway.StaticTokens(map[string]event.UserIdentity{tokenAlice: alice})})
			if err != nil {
				b.Fatal(err)
			}
			srv := httptest.NewServer(gw)
			defer srv.Close()
			var body bytes.Buffer
			mw := multipart.NewWriter(&body)
			h := textproto.MIMEHeader{}
			h.Set("Content-Disposition", `form-data; name="file"; filename="jack.txt"`)
			h.Set("Content-Type", "text/plain")
			pw, _ := mw.CreatePart(h)
			_, _ = pw.Write(data)
			_ = mw.Close()
			form, ctype := body.Bytes(), mw.FormDataContentType()
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/saap/files", bytes.NewReader(form))
				req.Header.Set("Authorization", "Bearer "+tokenAlice)
				req.Header.Set("Content-Type", ctype)
				resp, err := srv.Client().Do(req)
				if err != nil {
					b.Fatal(err)
				}
				var up struct {
					ID string `json:"file_id"`
				}
				err = json.NewDecoder(resp.Body).Decode(&up)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusCreated {
					b.Fatalf("upload: %d %v", resp.StatusCode, err)
				}
				b.StopTimer()
				if err := store.Delete(ctx, up.ID); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
