package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/files"
)

// File attachments, an extension of this SDK (the reference uploads to S3
// through presigned URLs its frontend asks for):
//
//	POST   /api/v1/saap/files              multipart/form-data: file, optional thread_id
//	GET    /api/v1/saap/files/{file}       the file's bytes
//	DELETE /api/v1/saap/files/{file}
//
// The upload answers 201 with the UserUploadedFile reference a message
// then carries in its files field. The uploader may read and delete the
// file; the members of the thread it was uploaded into may read it; to
// anybody else it does not exist (404). A start event naming a file the
// user may not read is refused the same way, so nobody can make an agent
// read another user's file.

// DefaultMaxFileSize is the default of Config.MaxFileSize.
const DefaultMaxFileSize = 10 << 20

// DefaultFileTypes is the default of Config.FileTypes: the types package
// files and its files/html and files/pdf readers turn into text, and the
// image types models take. The agents read the files, so the list does
// not depend on which readers the gateway links.
var DefaultFileTypes = append([]string{"text/plain", "text/markdown", "text/html", "application/pdf"}, files.ImageTypes...)

// multipartSlack is what a multipart body may carry beyond the file: the
// boundaries, part headers and the thread_id field.
const multipartSlack = 16 << 10

// fileAnswer is the upload's answer: the reference a message carries,
// plus the size.
type fileAnswer struct {
	event.UserUploadedFile
	Size   int64  `json:"size"`
	Thread string `json:"thread_id,omitempty"`
}

func (g *Gateway) noFiles(w http.ResponseWriter) bool {
	if g.cfg.Files == nil {
		writeError(w, http.StatusNotFound, "this gateway keeps no files (Config.Files is not set)", "")
		return true
	}
	return false
}

// serveUpload answers POST /api/v1/saap/files.
func (g *Gateway) serveUpload(w http.ResponseWriter, r *http.Request) {
	if g.noFiles(w) {
		return
	}
	user := r.Context().Value(userKey{}).(*event.UserIdentity)
	info, data, err := g.readUpload(w, r, user)
	if err != nil {
		g.fail(w, err)
		return
	}
	ctx := r.Context()
	if g.cfg.Scanner != nil {
		if err := g.cfg.Scanner.Scan(ctx, info, bytes.NewReader(data)); err != nil {
			var rej *files.RejectedError
			if errors.As(err, &rej) {
				g.log.Info("gateway: upload rejected by the scanner", "user", user.ID, "file", info.Name, "reason", rej.Reason)
				writeError(w, http.StatusUnprocessableEntity, "file: rejected: "+rej.Reason, "file")
				return
			}
			g.fail(w, fmt.Errorf("gateway: scan %s: %w", info.Name, err))
			return
		}
	}
	stored, err := g.cfg.Files.Put(ctx, info, bytes.NewReader(data))
	if err != nil {
		g.fail(w, fmt.Errorf("gateway: store %s: %w", info.Name, err))
		return
	}
	w.Header().Set("Location", "/api/v1/saap/files/"+stored.ID)
	writeJSON(w, http.StatusCreated, fileAnswer{UserUploadedFile: stored.Ref(), Size: stored.Size, Thread: stored.Thread})
}

// readUpload reads and checks the multipart body of an upload: one file
// part of at most MaxFileSize bytes (else 413) of an allowed type, sniffed
// from its content (else 415), and an optional thread_id the user is a
// member of (else 403).
func (g *Gateway) readUpload(w http.ResponseWriter, r *http.Request, user *event.UserIdentity) (files.Info, []byte, error) {
	maxFile := g.cfg.MaxFileSize
	tooLarge := &requestError{status: http.StatusRequestEntityTooLarge, field: "file",
		msg: fmt.Sprintf("file: larger than the limit of %d bytes", maxFile)}
	if r.ContentLength > maxFile+multipartSlack {
		return files.Info{}, nil, tooLarge
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		return files.Info{}, nil, &requestError{status: http.StatusUnsupportedMediaType, field: "body",
			msg: "body: an upload is multipart/form-data with a file field"}
	}
	size := maxFile + multipartSlack
	if r.ContentLength >= 0 && r.ContentLength < size {
		size = r.ContentLength
	}
	release, ok := g.limits.reserveBody(size)
	if !ok {
		retryAfter(w, time.Second)
		return files.Info{}, nil, &requestError{status: http.StatusServiceUnavailable, field: "body",
			msg: "body: the gateway is reading too many request bodies at once; retry shortly"}
	}
	defer release()
	r.Body = http.MaxBytesReader(w, r.Body, maxFile+multipartSlack)
	mr, err := r.MultipartReader()
	if err != nil {
		return files.Info{}, nil, badRequest("body", "body: %v", err)
	}
	var (
		info   files.Info
		data   []byte
		gotOne bool
	)
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return files.Info{}, nil, bodyError(err, tooLarge)
		}
		switch p.FormName() {
		case "file":
			if gotOne {
				return files.Info{}, nil, badRequest("file", "file: one file per upload")
			}
			gotOne = true
			info.Name = p.FileName()
			if err := files.CheckName(info.Name); err != nil {
				return files.Info{}, nil, badRequest("filename", "%v", err)
			}
			// Sized from the body's length, so a large file is not
			// copied again and again as the buffer grows.
			var buf bytes.Buffer
			if r.ContentLength > 0 {
				buf.Grow(int(min(r.ContentLength, maxFile+1)) + bytes.MinRead)
			}
			if _, err := buf.ReadFrom(io.LimitReader(p, maxFile+1)); err != nil {
				return files.Info{}, nil, bodyError(err, tooLarge)
			}
			data = buf.Bytes()
			if int64(len(data)) > maxFile {
				return files.Info{}, nil, tooLarge
			}
			info.ContentType = p.Header.Get("Content-Type")
		case "thread_id":
			v, err := io.ReadAll(io.LimitReader(p, 64))
			if err != nil {
				return files.Info{}, nil, bodyError(err, tooLarge)
			}
			info.Thread = string(v)
			if !event.IsObjectID(info.Thread) {
				return files.Info{}, nil, badRequest("thread_id", "thread_id: must be 24 lower-case hex characters, got %q", truncate(info.Thread, 30))
			}
		default:
			return files.Info{}, nil, badRequest(p.FormName(), "form field %q: an upload takes file and thread_id", truncate(p.FormName(), 30))
		}
	}
	if !gotOne {
		return files.Info{}, nil, badRequest("file", "file: the form has no file field")
	}
	// The body is in: the server's ReadTimeout must not end the request's
	// context while the scanner and the store work.
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	ct, err := files.Sniff(data[:min(len(data), files.SniffLen)], info.ContentType, info.Name, g.cfg.FileTypes...)
	if err != nil {
		return files.Info{}, nil, &requestError{status: http.StatusUnsupportedMediaType, field: "file", msg: "file: " + err.Error()}
	}
	if len(data) == 0 {
		return files.Info{}, nil, badRequest("file", "file: empty")
	}
	if info.Thread != "" {
		if err := g.checkMember(r.Context(), info.Thread, user); err != nil {
			return files.Info{}, nil, err
		}
	}
	info.ID, info.ContentType, info.Owner, info.Created = files.NewID(), ct, user.ID, g.now()
	return info, data, nil
}

func bodyError(err error, tooLarge error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return tooLarge
	}
	return badRequest("body", "body: %v", err)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// mayRead reports whether user may read the file: they uploaded it, or
// they are a member of the thread it was uploaded into.
func (g *Gateway) mayRead(ctx context.Context, info files.Info, user *event.UserIdentity) (bool, error) {
	if info.Owner == user.ID {
		return true, nil
	}
	if info.Thread == "" {
		return false, nil
	}
	ok, err := g.threads.IsMember(ctx, info.Thread, user.ID)
	if err != nil {
		return false, fmt.Errorf("gateway: threads: %w", err)
	}
	return ok, nil
}

// fileFor looks a file up for user: 404 when it does not exist or the
// user may not read it, alike.
func (g *Gateway) fileFor(ctx context.Context, id string, user *event.UserIdentity, field string) (files.Info, error) {
	notFound := &requestError{status: http.StatusNotFound, field: field, msg: fmt.Sprintf("file %s is not known", truncate(id, 40))}
	if files.CheckID(id) != nil {
		return files.Info{}, notFound
	}
	info, err := g.cfg.Files.Stat(ctx, id)
	if errors.Is(err, files.ErrNotFound) {
		return files.Info{}, notFound
	}
	if err != nil {
		return files.Info{}, fmt.Errorf("gateway: files: %w", err)
	}
	ok, err := g.mayRead(ctx, info, user)
	if err != nil {
		return files.Info{}, err
	}
	if !ok {
		return files.Info{}, notFound
	}
	return info, nil
}

// serveFile answers GET /api/v1/saap/files/{file}.
func (g *Gateway) serveFile(w http.ResponseWriter, r *http.Request) {
	if g.noFiles(w) {
		return
	}
	user, ok := g.authenticate(w, r)
	if !ok || !g.statusAllowed(w, user) {
		return
	}
	info, err := g.fileFor(r.Context(), r.PathValue("file"), user, "file_id")
	if err != nil {
		g.fail(w, err)
		return
	}
	rc, info, err := g.cfg.Files.Get(r.Context(), info.ID)
	if err != nil {
		g.fail(w, fmt.Errorf("gateway: files: %w", err))
		return
	}
	defer rc.Close()
	h := w.Header()
	h.Set("Content-Type", info.ContentType)
	h.Set("Content-Length", strconv.FormatInt(info.Size, 10))
	// Never rendered in the gateway's origin: an uploaded HTML page must
	// not run as the gateway's.
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": info.Name}))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox")
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, rc)
}

// serveFileDelete answers DELETE /api/v1/saap/files/{file}: the uploader
// only.
func (g *Gateway) serveFileDelete(w http.ResponseWriter, r *http.Request) {
	if g.noFiles(w) {
		return
	}
	user, ok := g.authenticate(w, r)
	if !ok || !g.statusAllowed(w, user) {
		return
	}
	info, err := g.fileFor(r.Context(), r.PathValue("file"), user, "file_id")
	if err != nil {
		g.fail(w, err)
		return
	}
	if info.Owner != user.ID {
		g.fail(w, &requestError{status: http.StatusForbidden, field: "file_id", msg: fmt.Sprintf("file %s: only its uploader may delete it", info.ID)})
		return
	}
	if err := g.cfg.Files.Delete(r.Context(), info.ID); err != nil && !errors.Is(err, files.ErrNotFound) {
		g.fail(w, fmt.Errorf("gateway: files: %w", err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// checkFiles refuses a start event whose files field names a file the
// user may not read (404, as for a file that does not exist). Without a
// Store the gateway knows no files and passes references on unchecked.
func (g *Gateway) checkFiles(ctx context.Context, body map[string]json.RawMessage, user *event.UserIdentity) error {
	raw, ok := body["files"]
	if !ok || g.cfg.Files == nil {
		return nil
	}
	var refs []event.UserUploadedFile
	if err := json.Unmarshal(raw, &refs); err != nil {
		return nil // the event codec names the error
	}
	for i, ref := range refs {
		if _, err := g.fileFor(ctx, ref.FileID, user, fmt.Sprintf("files[%d].file_id", i)); err != nil {
			return err
		}
	}
	return nil
}

// fileRefs turns the file ids of OpenAI file parts into the JSON of a
// start event's files field, each checked as checkFiles does.
func (g *Gateway) fileRefs(ctx context.Context, ids []string, user *event.UserIdentity) (json.RawMessage, error) {
	if g.cfg.Files == nil {
		return nil, badRequest("messages", "messages: file parts: this gateway keeps no files")
	}
	refs := make([]event.UserUploadedFile, len(ids))
	for i, id := range ids {
		info, err := g.fileFor(ctx, id, user, "messages")
		if err != nil {
			return nil, err
		}
		refs[i] = info.Ref()
	}
	return event.MarshalValue(refs)
}
