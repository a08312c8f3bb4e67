package slackfake

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// maxUpload caps what the fake reads from an upload.
const maxUpload = 64 << 20

// Download is one request for a file's url_private.
type Download struct {
	FileID string
	// Authorized is false when the request lacked the bot token and was sent to the
	// sign-in page instead.
	Authorized bool
}

// Uploads returns the files upload v2 flows started, in order.
func (s *Server) Uploads() []Upload {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Upload, len(s.uploads))
	for i, u := range s.uploads {
		out[i] = *u
		out[i].Content = slices.Clone(u.Content)
	}
	return out
}

// Downloads returns the requests for files' url_private, in order.
func (s *Server) Downloads() []Download {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.downloads)
}

func (s *Server) filesGetUploadURLExternal(p url.Values) (map[string]any, string) {
	length, err := strconv.Atoi(p.Get("length"))
	if p.Get("filename") == "" || err != nil || length <= 0 {
		return nil, "invalid_arguments"
	}
	u := &Upload{FileID: s.newIDLocked("F"), Filename: p.Get("filename"), Length: length}
	key := strings.ReplaceAll(randomID(), "-", "")
	s.uploads = append(s.uploads, u)
	s.upKeys[key] = u
	return map[string]any{"upload_url": s.srv.URL + "/upload/v1/" + key, "file_id": u.FileID}, ""
}

// handleUpload takes the file content posted to an upload URL: a multipart "file"
// field, as slack-go sends it, or the raw body. Like Slack's, the URL itself is the
// credential.
func (s *Server) handleUpload(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimPrefix(r.URL.Path, "/upload/v1/")
	s.mu.Lock()
	u, ok := s.upKeys[key]
	s.mu.Unlock()
	if !ok || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	var content []byte
	var err error
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "multipart/form-data" {
		var f io.ReadCloser
		if f, _, err = r.FormFile("file"); err == nil {
			content, err = io.ReadAll(io.LimitReader(f, maxUpload))
			f.Close()
		}
	} else {
		content, err = io.ReadAll(io.LimitReader(r.Body, maxUpload))
	}
	if err != nil {
		http.Error(w, "bad upload", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	u.Content = content
	u.Uploaded = true
	s.notifyLocked()
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "OK - %d", len(content))
}

func (s *Server) filesCompleteUploadExternal(p url.Values) (map[string]any, string) {
	var summaries []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	if err := json.Unmarshal([]byte(p.Get("files")), &summaries); err != nil || len(summaries) == 0 {
		return nil, "invalid_arguments"
	}
	var ch *channel
	chID := p.Get("channel_id")
	if chID == "" {
		chID, _, _ = strings.Cut(p.Get("channels"), ",")
	}
	if chID != "" {
		var code string
		if ch, code = s.lookupChannelLocked(chID); code != "" {
			return nil, code
		}
	}
	ups := make([]*Upload, len(summaries))
	for i, sum := range summaries {
		idx := slices.IndexFunc(s.uploads, func(u *Upload) bool { return u.FileID == sum.ID })
		if idx < 0 || !s.uploads[idx].Uploaded || s.uploads[idx].Completed {
			return nil, "file_not_found"
		}
		ups[i] = s.uploads[idx]
	}
	var files []File
	var objs []any
	for i, u := range ups {
		u.Completed = true
		u.Title = summaries[i].Title
		u.InitialComment = p.Get("initial_comment")
		f := s.newFileLocked(u.FileID, s.cfg.botUserID, u.Filename, u.Title, mime.TypeByExtension(extOf(u.Filename)), u.Content)
		files = append(files, f.File)
		objs = append(objs, s.fileObject(f))
	}
	if ch != nil {
		m := &message{
			Message: Message{
				User: s.cfg.botUserID, BotID: s.cfg.botID, SubType: "file_share",
				Text: p.Get("initial_comment"), ThreadTS: p.Get("thread_ts"), Files: files,
			},
			appID:  s.cfg.appID,
			upload: true,
		}
		s.addLocked(ch, m)
		for _, u := range ups {
			u.Channel, u.ThreadTS, u.MessageTS = ch.info.ID, m.ThreadTS, m.TS
		}
		s.echoLocked(ch, m, s.messageEvent(ch, m))
	}
	return map[string]any{"files": objs}, ""
}

func extOf(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[i:]
	}
	return ""
}

func (s *Server) filesInfo(p url.Values) (map[string]any, string) {
	f, ok := s.files[p.Get("file")]
	if !ok {
		return nil, "file_not_found"
	}
	return map[string]any{
		"file":     s.fileObject(f),
		"comments": []any{},
		"paging":   map[string]any{"count": 100, "total": 0, "page": 1, "pages": 0},
	}, ""
}

// handleFile serves url_private and url_private_download. Without the bot token it
// redirects to the sign-in page, as files.slack.com does; slack-go recognises that
// redirect and reports it.
func (s *Server) handleFile(w http.ResponseWriter, r *http.Request) {
	// /files-pri/<team>-<file id>/<name> or /files-pri/<team>-<file id>/download/<name>
	rest := strings.TrimPrefix(r.URL.Path, "/files-pri/")
	key, _, _ := strings.Cut(rest, "/")
	_, id, _ := strings.Cut(key, "-")
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")

	s.mu.Lock()
	f, ok := s.files[id]
	authorized := token == s.cfg.botToken
	if ok {
		s.downloads = append(s.downloads, Download{FileID: id, Authorized: authorized})
		s.notifyLocked()
	}
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	if !authorized {
		http.Redirect(w, r, "/?redir="+url.QueryEscape(r.URL.Path), http.StatusFound)
		return
	}
	ct := f.Mimetype
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Length", strconv.Itoa(len(f.Content)))
	_, _ = w.Write(f.Content)
}
