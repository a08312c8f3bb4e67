package bridge

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/internal/safefile"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/workspace/diskuse"
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
		data, err := t.storedOrDownload(ctx, dl, a)
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

// storedOrDownload is the content of a: the copy kept when the message was
// accepted, else a download.
func (t *thread) storedOrDownload(ctx context.Context, dl chat.Downloader, a chat.Attachment) ([]byte, error) {
	if a.Stored != "" {
		data, err := readStored(t.tws.Scratch(), a.Stored, t.b.cfg.MaxDownloadBytes)
		if err == nil {
			return data, nil
		}
		t.log.Warn("a file kept since its message was accepted could not be read; downloading it", "file", a.Name, "err", err)
	}
	return download(ctx, dl, a, t.b.cfg.MaxDownloadBytes)
}

// readStored reads the file kept at rel in scratch, through the folder's
// root: the folder is the agent's to read (and, without a sandbox, to
// change), so no symlink planted there may lead the read elsewhere. The file
// stays until its input is delivered (dropKeptFiles): a process that stops
// before then hands the input to the next one, which reads it again.
func readStored(scratch, rel string, limit int64) ([]byte, error) {
	root, err := safefile.OpenRoot(scratch, "the thread's scratch folder")
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.ReadFile(rel, limit)
}

// noteKept remembers the files kept for input id, to remove once it is
// delivered or dropped.
func (t *thread) noteKept(id int64, in chat.Inbound) {
	rels := keptFiles(in)
	if len(rels) == 0 {
		return
	}
	if t.kept == nil {
		t.kept = map[int64][]string{}
	}
	t.kept[id] = rels
}

// dropKeptFiles removes the files kept for input id: the model has them, or
// uploads/ does, or the input was dropped.
func (t *thread) dropKeptFiles(id int64) {
	rels := t.kept[id]
	delete(t.kept, id)
	if len(rels) == 0 || t.tws == nil {
		return
	}
	removeKept(t.tws.Scratch(), rels)
}

// keptFiles are the files kept for in, relative to its scratch folder.
func keptFiles(in chat.Inbound) []string {
	var rels []string
	for _, a := range in.Attachments {
		if a.Stored != "" {
			rels = append(rels, a.Stored)
		}
	}
	return rels
}

// removeKept removes kept files and their folders, once empty.
func removeKept(scratch string, rels []string) {
	r, err := os.OpenRoot(scratch)
	if err != nil {
		return
	}
	defer r.Close()
	for _, rel := range rels {
		_ = r.Remove(rel)
		_ = r.Remove(filepath.Dir(rel))
	}
}

func download(ctx context.Context, dl chat.Downloader, a chat.Attachment, limit int64) ([]byte, error) {
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

// inboxDir is the folder of a thread's scratch folder where files are kept
// from when their message is accepted until it is processed.
const inboxDir = "inbox"

// keepFiles downloads the files of in whose links expire (a
// chat.ExpiringDownloader's) into the thread's scratch folder, before the
// message is stored: a message processed after its links expired (queued
// behind a long run, or after an outage or a restart) still has them. Each
// goes to inbox/<random>/<n>, and its Stored says so (dropKept removes them
// again if the message is not stored, or was stored before). The files
// count against the thread's disk quota like everything in its scratch
// folder; one that cannot be kept now (a failed download, or one that would
// take the thread past its quota) keeps only its link, tried again when the
// message is processed, and the failure is logged.
func (h *handler) keepFiles(ctx context.Context, in *chat.Inbound, repo string) {
	for i := range in.Attachments {
		in.Attachments[i].Stored = "" // the bridge's own field
	}
	dl, ok := h.p.Adapter.(chat.ExpiringDownloader)
	if !ok || !dl.LinksExpire() || len(in.Attachments) == 0 || repo == "" {
		return
	}
	b := h.b
	root, scratch := b.cfg.Workspaces.ThreadDirs(repo, wsKey(in.Thread))
	dir := inboxDir + "/" + hex.EncodeToString(binary.BigEndian.AppendUint64(nil, rand.Uint64()))
	quota := b.cfg.Agent.DiskQuota
	var used diskuse.Usage
	if quota.Bytes > 0 || quota.Files > 0 {
		u, err := diskuse.Measure(ctx, root, scratch)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			b.log.Warn("measuring a thread's files before keeping shared files", "thread", in.Thread.Key(), "err", err)
		}
		used = u
	}
	for i := range in.Attachments {
		a := &in.Attachments[i]
		data, err := download(ctx, dl, *a, b.cfg.MaxDownloadBytes)
		if err != nil {
			b.log.Warn("downloading a shared file when its message came; trying again when it is processed", "thread", in.Thread.Key(), "file", a.Name, "err", err)
			continue
		}
		if (quota.Bytes > 0 && used.Bytes+int64(len(data)) > quota.Bytes) || (quota.Files > 0 && used.Files+2 > quota.Files) {
			b.log.Warn("a shared file would take the thread past its disk quota; not kept, downloaded when its message is processed", "thread", in.Thread.Key(), "file", a.Name, "bytes", len(data))
			continue
		}
		rel := fmt.Sprintf("%s/%d", dir, i)
		if err := writeKept(scratch, rel, data); err != nil {
			b.log.Warn("keeping a shared file", "thread", in.Thread.Key(), "file", a.Name, "err", err)
			continue
		}
		used = used.Add(diskuse.Usage{Bytes: int64(len(data)), Files: 1})
		a.Stored = rel
	}
}

// dropKept removes the files keepFiles kept for in.
func (h *handler) dropKept(in chat.Inbound, repo string) {
	if rels := keptFiles(in); len(rels) > 0 {
		_, scratch := h.b.cfg.Workspaces.ThreadDirs(repo, wsKey(in.Thread))
		removeKept(scratch, rels)
	}
}

// writeKept writes data to rel in scratch, durably (synced, then renamed
// into place and the folder synced), through the folder's root: the folder
// is the agent's to change, so a link there never leads a folder or a file
// the bot makes out of it, and the file is created new (a pipe or a link the
// agent put in its place is refused, never opened).
func writeKept(scratch, rel string, data []byte) error {
	if err := os.MkdirAll(scratch, 0o700); err != nil {
		return err
	}
	root, err := os.OpenRoot(scratch)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.MkdirAll(filepath.Dir(rel), 0o700); err != nil {
		return err
	}
	tmp := rel + ".tmp"
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, rel)
	}
	if err != nil {
		_ = root.Remove(tmp)
		return err
	}
	d, err := safefile.OpenDirIn(root, filepath.Dir(rel)) // a pipe swapped in for it fails, never waits
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
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
