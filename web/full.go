package web

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// A command that printed more than the model may read (bash keeps the end:
// 2,000 lines or 50 KB) left all of it, up to 64 MB, in a file in the
// thread's scratch folder; the tool result names it. /s/<thread>/full/<key>
// shows that file a page at a time, for as long as the workspace keeps it.

// fullPage is how much of a whole output one page shows; a page ends at the
// end of a line when one ends within fullSlack more.
const (
	fullPage  = 256 << 10
	fullSlack = 16 << 10
)

func (s *Server) full(w http.ResponseWriter, r *http.Request) {
	id, token, ok := s.thread(w, r)
	if !ok {
		return
	}
	key := r.PathValue("key")
	m, err := s.toolResult(r.Context(), id, key)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	fo := fullOutputOf(m)
	if fo.Path == "" || s.opts.FullOutput == nil {
		http.NotFound(w, r)
		return
	}
	th, err := s.opts.Store.ThreadByID(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	f, err := s.opts.FullOutput(th, fo.Path)
	if err != nil {
		s.log.Debug("a whole output is not there", "thread", id, "path", fo.Path, "err", err)
		securityHeaders(w.Header())
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("This output is no longer kept: it went with the thread's workspace.\n"))
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	size := st.Size()
	from, _ := strconv.ParseInt(r.URL.Query().Get("from"), 10, 64)
	from = min(max(from, 0), size)

	// Read the page and, around it, enough to see a secret that crosses
	// either of its edges: the edge moves to the secret's start, so that a
	// page shows a secret whole (and hidden) or not at all, whatever from
	// the request names.
	var pad int64
	for _, sec := range s.secrets {
		pad = max(pad, int64(len(sec)-1))
	}
	lo := max(from-pad, 0)
	buf := make([]byte, min(size-lo, from-lo+fullPage+fullSlack+pad))
	n, err := io.ReadFull(io.NewSectionReader(f, lo, int64(len(buf))), buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		s.fail(w, r, err)
		return
	}
	buf = buf[:n]
	start := int(from - lo)
	usable := len(buf) // all of it at the end of the file, else less the look-ahead
	if lo+int64(len(buf)) < size {
		usable = max(len(buf)-int(pad), start+1)
	}
	end := min(start+fullPage+fullSlack, usable)
	if end-start > fullPage {
		if i := bytes.IndexByte(buf[start+fullPage-1:end], '\n'); i >= 0 {
			end = start + fullPage + i
		}
	}
	start = s.unsplit(buf, start)
	if e := s.unsplit(buf, end); e > start {
		end = e
	}
	text := s.redactor.Replace(strings.ToValidUTF8(string(buf[start:end]), "\uFFFD"))
	pageFrom, pageTo := lo+int64(start), lo+int64(end)
	data := map[string]any{
		"Tool": s.redactor.Replace(m.ToolName), "Text": text,
		"From": pageFrom, "To": pageTo, "Size": size, "Lines": fo.Truncation.TotalLines,
		"Back": "/s/" + strconv.FormatInt(id, 10),
	}
	if token != "" {
		data["Back"] = data["Back"].(string) + "?t=" + token
	}
	if pageFrom > 0 {
		data["First"] = fullURL(id, key, token, 0)
	}
	if pageTo < size {
		data["Next"] = fullURL(id, key, token, pageTo)
	}
	s.render(w, "full.html", data)
}

// unsplit moves pos in buf back to the start of a secret that crosses it,
// if one does.
func (s *Server) unsplit(buf []byte, pos int) int {
	for _, sec := range s.secrets {
		for k := max(pos-len(sec)+1, 0); k < pos && k+len(sec) <= len(buf); k++ {
			if string(buf[k:k+len(sec)]) == sec {
				return k
			}
		}
	}
	return pos
}
