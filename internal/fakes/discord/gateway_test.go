package discordfake_test

import (
	"bytes"
	"compress/zlib"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
)

// wsClient is a bare gateway client for checking the wire protocol itself.
type wsClient struct {
	t    *testing.T
	conn *websocket.Conn
}

type frame struct {
	Op         int             `json:"op"`
	D          json.RawMessage `json:"d"`
	S          *int64          `json:"s"`
	T          *string         `json:"t"`
	compressed bool
}

func (f frame) typ() string {
	if f.T == nil {
		return ""
	}
	return *f.T
}

func (f frame) seq() int64 {
	if f.S == nil {
		return 0
	}
	return *f.S
}

func dial(t *testing.T, fake *discordfake.Server) *wsClient {
	t.Helper()
	conn, _, err := websocket.DefaultDialer.Dial(fake.GatewayURL()+"/?v=9&encoding=json", nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return &wsClient{t: t, conn: conn}
}

func (c *wsClient) send(op int, d any) {
	c.t.Helper()
	if err := c.conn.WriteJSON(map[string]any{"op": op, "d": d}); err != nil {
		c.t.Fatalf("send op %d: %v", op, err)
	}
}

// read returns the next frame, inflating zlib binary frames; a close frame
// comes back as an error.
func (c *wsClient) read() (frame, error) {
	c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	mt, data, err := c.conn.ReadMessage()
	if err != nil {
		return frame{}, err
	}
	var f frame
	if mt == websocket.BinaryMessage {
		zr, err := zlib.NewReader(bytes.NewReader(data))
		if err != nil {
			return frame{}, err
		}
		data, _ = io.ReadAll(zr)
		f.compressed = true
	}
	return f, json.Unmarshal(data, &f)
}

func (c *wsClient) mustRead() frame {
	c.t.Helper()
	f, err := c.read()
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return f
}

// expectDispatch reads the next frame and checks it is dispatch typ with seq.
func (c *wsClient) expectDispatch(typ string, seq int64) frame {
	c.t.Helper()
	f := c.mustRead()
	if f.Op != 0 || f.typ() != typ || f.seq() != seq {
		c.t.Fatalf("got op %d %q seq %d (%s), want dispatch %s seq %d", f.Op, f.typ(), f.seq(), f.D, typ, seq)
	}
	return f
}

func (c *wsClient) expectClose(code int) {
	c.t.Helper()
	for {
		_, err := c.read()
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != code {
			c.t.Fatalf("got %v, want close %d", err, code)
		}
		return
	}
}

func identify(token string, intents int) map[string]any {
	return map[string]any{
		"token":      token,
		"intents":    intents,
		"properties": map[string]string{"os": "linux", "browser": "test", "device": "test"},
	}
}

func (c *wsClient) hello() {
	c.t.Helper()
	if f := c.mustRead(); f.Op != 10 {
		c.t.Fatalf("first frame: got op %d, want HELLO (10)", f.Op)
	}
}

func TestGatewayHandshakeAndIntents(t *testing.T) {
	fake := discordfake.New(t, discordfake.WithHeartbeatInterval(250*time.Millisecond))
	c := dial(t, fake)
	hello := c.mustRead()
	var h struct {
		Interval int `json:"heartbeat_interval"`
	}
	json.Unmarshal(hello.D, &h)
	if hello.Op != 10 || h.Interval != 250 || hello.S != nil || hello.T != nil {
		t.Fatalf("HELLO: got op %d interval %d s %v t %v, want op 10 interval 250 with null s and t", hello.Op, h.Interval, hello.S, hello.T)
	}
	c.send(1, nil)
	if f := c.mustRead(); f.Op != 11 {
		t.Fatalf("heartbeat: got op %d, want ACK (11)", f.Op)
	}

	// No MESSAGE_CONTENT, no GUILD_MEMBERS, no reactions.
	c.send(2, identify("Bot "+fake.Token(), discordfake.IntentGuilds|discordfake.IntentGuildMessages))
	ready := c.expectDispatch("READY", 1)
	var r struct {
		SessionID        string `json:"session_id"`
		ResumeGatewayURL string `json:"resume_gateway_url"`
		Application      struct {
			ID    string `json:"id"`
			Flags int    `json:"flags"`
		} `json:"application"`
	}
	json.Unmarshal(ready.D, &r)
	if ready.compressed || r.SessionID == "" || r.ResumeGatewayURL != fake.GatewayURL() || r.Application.ID != fake.ApplicationID() {
		t.Errorf("READY: got %s (compressed %v), want a plain frame with session, resume url and application", ready.D, ready.compressed)
	}
	gc := c.expectDispatch("GUILD_CREATE", 2)
	var g struct {
		Members []struct {
			User struct{ ID string } `json:"user"`
		} `json:"members"`
		MemberCount int `json:"member_count"`
	}
	json.Unmarshal(gc.D, &g)
	if len(g.Members) != 1 || g.Members[0].User.ID != fake.BotUserID() || g.MemberCount != 4 {
		t.Errorf("GUILD_CREATE without GUILD_MEMBERS: got members %+v count %d, want only the bot of 4", g.Members, g.MemberCount)
	}

	fake.UserMessage(discordfake.DefaultChannelID, discordfake.AliceID, "secret plans")
	var m struct {
		Content string `json:"content"`
		GuildID string `json:"guild_id"`
	}
	json.Unmarshal(c.expectDispatch("MESSAGE_CREATE", 3).D, &m)
	if m.Content != "" || m.GuildID != discordfake.DefaultGuildID {
		t.Errorf("without MESSAGE_CONTENT: got content %q guild %q, want empty content in the guild", m.Content, m.GuildID)
	}
	mention := "<@" + fake.BotUserID() + "> hi"
	um := fake.UserMessage(discordfake.DefaultChannelID, discordfake.AliceID, mention)
	json.Unmarshal(c.expectDispatch("MESSAGE_CREATE", 4).D, &m)
	if m.Content != mention {
		t.Errorf("mentioning the bot: got content %q, want %q", m.Content, mention)
	}
	fake.React(discordfake.DefaultChannelID, um.ID, discordfake.BobID, "👍") // filtered: no reactions intent
	fake.SlashCommand(discordfake.DefaultChannelID, discordfake.BobID, "help", nil)
	var in struct {
		Type   int `json:"type"`
		Member struct {
			Permissions string `json:"permissions"`
		} `json:"member"`
		AppPermissions string `json:"app_permissions"`
	}
	json.Unmarshal(c.expectDispatch("INTERACTION_CREATE", 5).D, &in)
	if in.Type != 2 || in.Member.Permissions == "" || in.AppPermissions == "" {
		t.Errorf("INTERACTION_CREATE: got %+v, want type 2 with string permissions", in)
	}
}

func TestGatewayCloseCodes(t *testing.T) {
	tests := []struct {
		name  string
		opts  []discordfake.Option
		steps func(c *wsClient, token string)
		code  int
	}{
		{"payload before identify", nil, func(c *wsClient, _ string) { c.send(3, map[string]any{}) }, 4003},
		{"unknown opcode", nil, func(c *wsClient, _ string) { c.send(99, nil) }, 4001},
		{"undecodable payload", nil, func(c *wsClient, _ string) {
			c.conn.WriteMessage(websocket.TextMessage, []byte("{not json"))
		}, 4002},
		{"bad token", nil, func(c *wsClient, _ string) { c.send(2, identify("Bot nope", discordfake.IntentGuilds)) }, 4004},
		{"identify twice", nil, func(c *wsClient, tok string) {
			c.send(2, identify(tok, discordfake.IntentGuilds))
			c.send(2, identify(tok, discordfake.IntentGuilds))
		}, 4005},
		{"invalid shard", nil, func(c *wsClient, tok string) {
			id := identify(tok, discordfake.IntentGuilds)
			id["shard"] = []int{1, 1}
			c.send(2, id)
		}, 4010},
		{"invalid intents", nil, func(c *wsClient, tok string) { c.send(2, identify(tok, 1<<30)) }, 4013},
		{"disallowed intent", []discordfake.Option{discordfake.WithDisabledPrivilegedIntents(discordfake.IntentMessageContent)},
			func(c *wsClient, tok string) {
				c.send(2, identify(tok, discordfake.IntentGuilds|discordfake.IntentMessageContent))
			}, 4014},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := discordfake.New(t, tc.opts...)
			c := dial(t, fake)
			c.hello()
			tc.steps(c, fake.Token())
			c.expectClose(tc.code)
			sent := fake.GatewaySent()
			if last := sent[len(sent)-1]; last.Type != "CLOSE" || !strings.Contains(string(last.Data), strconv.Itoa(tc.code)) {
				t.Errorf("recorded close: got %+v, want CLOSE %d", last, tc.code)
			}
		})
	}
}

func TestGatewayResumeReplaysBacklog(t *testing.T) {
	fake := discordfake.New(t)
	tok := "Bot " + fake.Token()
	intents := discordfake.IntentGuilds | discordfake.IntentGuildMessages | discordfake.IntentMessageContent

	c := dial(t, fake)
	c.hello()
	c.send(2, identify(tok, intents))
	var r struct {
		SessionID string `json:"session_id"`
	}
	json.Unmarshal(c.expectDispatch("READY", 1).D, &r)
	c.expectDispatch("GUILD_CREATE", 2)

	fake.DropGateway()
	if _, err := c.read(); err == nil {
		t.Fatalf("read after DropGateway: got a frame, want a broken connection")
	}
	a := fake.UserMessage(discordfake.DefaultChannelID, discordfake.AliceID, "one")
	b := fake.UserMessage(discordfake.DefaultChannelID, discordfake.BobID, "two")

	c2 := dial(t, fake)
	c2.hello()
	c2.send(6, map[string]any{"token": tok, "session_id": r.SessionID, "seq": 2})
	var m struct {
		ID string `json:"id"`
	}
	json.Unmarshal(c2.expectDispatch("MESSAGE_CREATE", 3).D, &m)
	if m.ID != a.ID {
		t.Errorf("first replayed: got %s, want %s", m.ID, a.ID)
	}
	json.Unmarshal(c2.expectDispatch("MESSAGE_CREATE", 4).D, &m)
	if m.ID != b.ID {
		t.Errorf("second replayed: got %s, want %s", m.ID, b.ID)
	}
	c2.expectDispatch("RESUMED", 5)

	// A server close with a resumable code keeps the session.
	fake.CloseGateway(4000, "Unknown error.")
	c2.expectClose(4000)
	c3 := dial(t, fake)
	c3.hello()
	c3.send(6, map[string]any{"token": tok, "session_id": r.SessionID, "seq": 5})
	c3.expectDispatch("RESUMED", 6)

	// The client ends the session with 1000: it cannot be resumed.
	c3.conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
	c3.expectClose(websocket.CloseNormalClosure)
	if err := fake.WaitFor(ctxT(t), func() bool { return fake.Connections() == 0 }); err != nil {
		t.Fatal(err)
	}
	c4 := dial(t, fake)
	c4.hello()
	c4.send(6, map[string]any{"token": tok, "session_id": r.SessionID, "seq": 6})
	if f := c4.mustRead(); f.Op != 9 || string(f.D) != "false" {
		t.Errorf("resume of an ended session: got op %d d %s, want INVALID_SESSION false", f.Op, f.D)
	}
}

func TestGatewayServerOps(t *testing.T) {
	fake := discordfake.New(t)
	c := dial(t, fake)
	c.hello()
	fake.RequestHeartbeat()
	if f := c.mustRead(); f.Op != 1 {
		t.Fatalf("RequestHeartbeat: got op %d, want 1", f.Op)
	}
	c.send(2, identify(fake.Token(), discordfake.IntentGuilds)) // a token without "Bot " works too
	c.expectDispatch("READY", 1)
	c.expectDispatch("GUILD_CREATE", 2)
	fake.Reconnect()
	if f := c.mustRead(); f.Op != 7 {
		t.Fatalf("Reconnect: got op %d, want 7", f.Op)
	}
	fake.InvalidateSession(true)
	if f := c.mustRead(); f.Op != 9 || string(f.D) != "true" {
		t.Fatalf("InvalidateSession(true): got op %d d %s, want 9 true", f.Op, f.D)
	}
	// After op 9 the same connection may identify again.
	c.send(2, identify(fake.Token(), discordfake.IntentGuilds))
	c.expectDispatch("READY", 1)
	if got := len(fake.Identifies()); got != 2 {
		t.Errorf("identifies: got %d, want 2", got)
	}
}

func TestGatewayShardsAndDMs(t *testing.T) {
	fake := discordfake.New(t)
	gid, _ := strconv.ParseUint(discordfake.DefaultGuildID, 10, 64)
	home := int((gid >> 22) % 2)
	for shard := range 2 {
		c := dial(t, fake)
		c.hello()
		id := identify(fake.Token(), discordfake.IntentGuilds|discordfake.IntentDirectMessages)
		id["shard"] = []int{shard, 2}
		c.send(2, id)
		var r struct {
			Guilds []struct{ ID string } `json:"guilds"`
			Shard  []int                 `json:"shard"`
		}
		json.Unmarshal(c.expectDispatch("READY", 1).D, &r)
		want := 0
		if shard == home {
			want = 1
		}
		if len(r.Guilds) != want || len(r.Shard) != 2 {
			t.Errorf("shard %d of 2: got guilds %v shard %v, want %d guild(s)", shard, r.Guilds, r.Shard, want)
		}
		if shard == home {
			c.expectDispatch("GUILD_CREATE", 2)
		}
		if shard == 0 {
			// DMs go to shard 0; their content needs no MESSAGE_CONTENT.
			dm := fake.DMChannel(discordfake.AliceID)
			fake.UserMessage(dm, discordfake.AliceID, "private")
			var m struct {
				Content string  `json:"content"`
				GuildID *string `json:"guild_id"`
			}
			json.Unmarshal(c.expectDispatch("MESSAGE_CREATE", int64(1+want+1)).D, &m)
			if m.Content != "private" || m.GuildID != nil {
				t.Errorf("DM: got %q guild %v, want content without guild", m.Content, m.GuildID)
			}
		}
	}
}

func TestCustomWorldAndIntentFilter(t *testing.T) {
	g := discordfake.Guild{
		ID:       "2000000000000000001",
		Name:     "acme",
		Channels: []discordfake.Channel{{ID: "2000000000000000002", Name: "dev"}},
		Roles:    []discordfake.Role{{ID: "2000000000000000003", Name: "maintainer"}},
		Members:  []discordfake.Member{{UserID: "2000000000000000004", Username: "carol", Roles: []string{"2000000000000000003"}}},
	}
	fake := discordfake.New(t,
		discordfake.WithGuilds(g),
		discordfake.WithToken("other-token"),
		discordfake.WithApplicationID("2000000000000000010"),
		discordfake.WithBotUser("2000000000000000011", "smith"))
	c := dial(t, fake)
	c.hello()
	// Without GUILDS there is no GUILD_CREATE: the next dispatch is the message.
	c.send(2, identify("Bot other-token", discordfake.IntentGuildMessages|discordfake.IntentMessageContent))
	var r struct {
		User struct {
			ID       string `json:"id"`
			Username string `json:"username"`
		} `json:"user"`
		Application struct {
			ID string `json:"id"`
		} `json:"application"`
	}
	json.Unmarshal(c.expectDispatch("READY", 1).D, &r)
	if r.User.ID != "2000000000000000011" || r.User.Username != "smith" || r.Application.ID != "2000000000000000010" {
		t.Errorf("READY: got user %+v application %+v, want smith and the configured application", r.User, r.Application)
	}
	fake.UserMessage("2000000000000000002", "2000000000000000004", "hello")
	c.expectDispatch("MESSAGE_CREATE", 2)
	fake.SlashCommand("2000000000000000002", "2000000000000000004", "status", nil)
	var in struct {
		GuildID string `json:"guild_id"`
		Member  struct {
			Roles []string `json:"roles"`
		} `json:"member"`
	}
	json.Unmarshal(c.expectDispatch("INTERACTION_CREATE", 3).D, &in)
	if in.GuildID != g.ID || len(in.Member.Roles) != 1 || in.Member.Roles[0] != "2000000000000000003" {
		t.Errorf("interaction: got guild %s roles %v, want acme with maintainer", in.GuildID, in.Member.Roles)
	}
	api := &apiClient{t: t, fake: fake, auth: "Bot other-token"}
	chans := api.do("GET", "/api/v9/guilds/"+g.ID+"/channels", nil).list(t)
	if len(chans) != 1 || chans[0]["name"] != "dev" {
		t.Errorf("guild channels: got %v, want #dev", chans)
	}
	if r := api.do("GET", "/api/v9/guilds/"+g.ID+"/members/2000000000000000011", nil); r.status != 200 {
		t.Errorf("the bot is a member of every guild: got %d %s", r.status, r.body)
	}
}
