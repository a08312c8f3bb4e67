package slackfake_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

func TestUploadFileV2Flow(t *testing.T) {
	srv := slackfake.New(t)
	api := newAPI(srv)
	root := srv.Mention("C0DEV", "U0ALICE", "show me the diff", "")
	diff := "--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-a\n+b\n"

	sum, err := api.UploadFile(slack.UploadFileParameters{
		Filename: "change.diff", Title: "The change", Content: diff, FileSize: len(diff),
		Channel: "C0DEV", ThreadTimestamp: root, InitialComment: "here it is",
	})
	if err != nil {
		t.Fatal(err)
	}
	ups := srv.Uploads()
	if len(ups) != 1 {
		t.Fatalf("uploads = %d, want 1", len(ups))
	}
	u := ups[0]
	if u.FileID != sum.ID || string(u.Content) != diff || u.Length != len(diff) || !u.Completed ||
		u.Channel != "C0DEV" || u.ThreadTS != root || u.Title != "The change" || u.InitialComment != "here it is" {
		t.Errorf("upload = %+v, want the diff completed into the thread", u)
	}
	for _, m := range []string{"files.getUploadURLExternal", "files.completeUploadExternal"} {
		if got := len(srv.CallsTo(m)); got != 1 {
			t.Errorf("%s calls = %d, want 1", m, got)
		}
	}
	thread := srv.Messages("C0DEV", root)
	last := thread[len(thread)-1]
	if last.TS != u.MessageTS || len(last.Files) != 1 || last.Files[0].ID != sum.ID || last.Text != "here it is" || last.User != srv.BotUserID() {
		t.Errorf("thread's last message = %+v, want the bot's file share", last)
	}

	// The uploaded file is served like any other.
	f, _, _, err := api.GetFileInfo(sum.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := api.GetFile(f.URLPrivateDownload, &buf); err != nil || buf.String() != diff {
		t.Errorf("download of the upload = %q, %v, want the diff", buf.String(), err)
	}

	// Completing a file never uploaded fails.
	_, err = api.CompleteUploadExternalContext(testContext(t), slack.CompleteUploadExternalParameters{Files: []slack.FileSummary{{ID: "F0NOPE"}}, Channel: "C0DEV"})
	if slackError(err) != "file_not_found" {
		t.Errorf("complete of an unknown file: %v, want file_not_found", err)
	}
}

func TestShareFileServedWithBotToken(t *testing.T) {
	srv := slackfake.New(t)
	c := startClient(t, srv)
	root := srv.Mention("C0DEV", "U0ALICE", "look at this", "")
	c.nextEvent(t)
	c.nextEvent(t)
	png := []byte("\x89PNG\r\n\x1a\nnot really")
	ts, file := srv.ShareFile("C0DEV", "U0ALICE", root, "screen.png", "image/png", png)

	ev, _ := c.nextEvent(t)
	msg, ok := ev.InnerEvent.Data.(*slackevents.MessageEvent)
	if !ok || msg.SubType != "file_share" || msg.TimeStamp != ts || msg.ThreadTimeStamp != root {
		t.Fatalf("event = %#v, want file_share %s in %s", ev.InnerEvent.Data, ts, root)
	}
	files := msg.Message.Files
	if len(files) != 1 || files[0].ID != file.ID || files[0].Mimetype != "image/png" || files[0].Filetype != "png" || files[0].Size != len(png) {
		t.Fatalf("event files = %+v, want screen.png", files)
	}
	if !strings.HasPrefix(files[0].URLPrivate, srv.URL()) {
		t.Errorf("url_private %q, want on the fake", files[0].URLPrivate)
	}

	var buf bytes.Buffer
	if err := c.api.GetFile(files[0].URLPrivate, &buf); err != nil || !bytes.Equal(buf.Bytes(), png) {
		t.Errorf("GetFile = %q, %v, want the PNG", buf.Bytes(), err)
	}
	// Without the bot token, Slack redirects to sign-in; slack-go reports it.
	stranger := slack.New("xoxb-stranger", slack.OptionAPIURL(srv.APIURL()))
	if err := stranger.GetFile(files[0].URLPrivate, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "sign-in") {
		t.Errorf("GetFile with a wrong token: %v, want the sign-in redirect error", err)
	}
	dl := srv.Downloads()
	if len(dl) != 2 || !dl[0].Authorized || dl[1].Authorized || dl[0].FileID != file.ID {
		t.Errorf("downloads = %+v, want one authorized then one not", dl)
	}

	// files.info and conversations.replies show the share too.
	info, _, _, err := c.api.GetFileInfo(file.ID, 0, 0)
	if err != nil || info.Name != "screen.png" || info.User != "U0ALICE" {
		t.Errorf("files.info = %+v, %v, want screen.png by U0ALICE", info, err)
	}
	msgs, _, _, err := c.api.GetConversationReplies(&slack.GetConversationRepliesParameters{ChannelID: "C0DEV", Timestamp: root})
	if err != nil || len(msgs) != 2 || len(msgs[1].Files) != 1 || msgs[1].SubType != "file_share" {
		t.Errorf("replies = %+v, %v, want the mention then the share", msgs, err)
	}
}
