package bridge

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/storage"
)

// modelImageTypes are the image formats sent to the model as images.
var modelImageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// prepareInput downloads a message's files: images become image content for the
// model, other files are saved in the workspace's scratch area and their paths
// are appended to the text. Failures are told to the model (and the person)
// rather than dropping the message.
func (t *thread) prepareInput(ctx context.Context, in chat.Inbound) (string, []llm.Content) {
	text := in.Text
	if len(in.Attachments) == 0 {
		return text, nil
	}
	dl, ok := t.p.Adapter.(chat.Downloader)
	var images []llm.Content
	var saved, failed []string
	for _, a := range in.Attachments {
		if !ok {
			failed = append(failed, a.Name+" (this platform cannot download files)")
			continue
		}
		data, err := t.download(ctx, dl, a)
		if err != nil {
			t.log.Warn("downloading a shared file", "file", a.Name, "err", err)
			failed = append(failed, a.Name+" ("+userError(err)+")")
			continue
		}
		if modelImageTypes[strings.ToLower(a.MimeType)] {
			images = append(images, llm.Image(strings.ToLower(a.MimeType), base64.StdEncoding.EncodeToString(data)))
			continue
		}
		path, err := t.saveUpload(a.Name, data)
		if err != nil {
			t.log.Warn("saving a shared file", "file", a.Name, "err", err)
			failed = append(failed, a.Name+" (could not be saved)")
			continue
		}
		saved = append(saved, fmt.Sprintf("%s (%d bytes)", path, len(data)))
	}
	if len(saved) > 0 {
		text += "\n\n[Files shared with this message, saved outside the repository: " + strings.Join(saved, ", ") + "]"
	}
	if len(failed) > 0 {
		text += "\n\n[Files shared with this message that could not be used: " + strings.Join(failed, ", ") + "]"
		t.say("⚠️ I couldn't use these files: " + strings.Join(failed, ", "))
	}
	return text, images
}

func (t *thread) download(ctx context.Context, dl chat.Downloader, a chat.Attachment) ([]byte, error) {
	limit := t.b.cfg.MaxDownloadBytes
	if a.Size > limit {
		return nil, plainError{"larger than the " + byteSize(limit) + " limit"}
	}
	rc, err := dl.Download(ctx, a.URL)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, plainError{"larger than the " + byteSize(limit) + " limit"}
	}
	return data, nil
}

// saveUpload writes a shared file into the scratch area and returns its path.
// It writes through the scratch folder's os.Root, creating a new file: the
// folder is the agent's to read, and without a sandbox it's the agent's to
// change too, so a symlink planted there must not lead the bot's write
// elsewhere.
func (t *thread) saveUpload(name string, data []byte) (string, error) {
	root, err := os.OpenRoot(t.tws.Scratch())
	if err != nil {
		return "", err
	}
	defer root.Close()
	if err := root.Mkdir("uploads", 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	base := filepath.Base(filepath.Clean("/" + name))
	if base == "/" || base == "." || base == "" {
		base = "file"
	}
	rel := "uploads/" + base
	for i := 2; ; i++ {
		f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			ext := filepath.Ext(base)
			rel = fmt.Sprintf("uploads/%s-%d%s", strings.TrimSuffix(base, ext), i, ext)
			continue
		}
		if err != nil {
			return "", err
		}
		_, werr := f.Write(data)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		return filepath.Join(t.tws.Scratch(), rel), werr
	}
}

func marshalAttachments(as []chat.Attachment) (json.RawMessage, error) {
	if len(as) == 0 {
		return nil, nil
	}
	return json.Marshal(as)
}

// inboundFromStore rebuilds a message accepted before a restart.
func inboundFromStore(rec storage.Thread, in storage.Inbound) chat.Inbound {
	out := chat.Inbound{
		Thread:    refOf(rec.Key),
		EventID:   in.EventID,
		MessageID: in.MessageID,
		Author:    chat.Author{ID: in.AuthorID, Name: in.AuthorName, Email: in.AuthorEmail},
		Text:      in.Text,
		Time:      in.ReceivedAt,
	}
	if len(in.Attachments) > 0 {
		_ = json.Unmarshal(in.Attachments, &out.Attachments)
	}
	return out
}

// byteSize formats a size for people: 512 bytes, 500 KB, 20 MB (a MiB reads
// as MB, which is what people configure).
func byteSize(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1000), ".0") + " KB"
	default:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/(1<<20)), ".0") + " MB"
	}
}
