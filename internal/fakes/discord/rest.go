package discordfake

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

const api = "/api/v9"

// maxBody caps request bodies; Discord's upload limit for bots is 25 MiB.
const maxBody = 26 << 20

type authKind int

const (
	authBot  authKind = iota // "Authorization: Bot <token>" required
	authNone                 // token in the URL (interactions, webhooks) or public
)

// call is one REST request being handled, with the fake's lock held.
type call struct {
	r     *http.Request
	route string // the matched pattern
	body  json.RawMessage
	files []File
	now   time.Time
}

func (c *call) path(name string) string { return c.r.PathValue(name) }

// decode reads the JSON body into v; an empty body decodes as {}.
func (c *call) decode(v any) error {
	if len(c.body) == 0 {
		return nil
	}
	return json.Unmarshal(c.body, v)
}

// response is what a handler answers; it is written after the lock is released.
type response struct {
	status int
	body   any // nil: no body
	header http.Header
}

func ok(v any) response      { return response{status: http.StatusOK, body: v} }
func created(v any) response { return response{status: http.StatusCreated, body: v} }
func noContent() response    { return response{status: http.StatusNoContent} }

// apiError is Discord's JSON error: {"message": …, "code": …}.
func apiError(status, code int, msg string) response {
	return response{status: status, body: obj{"message": msg, "code": code}}
}

// invalidForm is Discord's 50035 with errors nested by field path
// ("content", "0.options.1.name"; "" for the body itself), each holding an
// _errors list. A message may start with "CODE: ".
func invalidForm(fields map[string]string) response {
	errs := obj{}
	for path, msg := range fields {
		code := "BASE_TYPE_INVALID"
		if i := strings.Index(msg, ": "); i > 0 {
			code, msg = msg[:i], msg[i+2:]
		}
		leafErr := obj{"_errors": []any{obj{"code": code, "message": msg}}}
		if path == "" {
			errs["_errors"] = leafErr["_errors"]
			continue
		}
		node := errs
		parts := strings.Split(path, ".")
		for _, p := range parts[:len(parts)-1] {
			next, _ := node[p].(obj)
			if next == nil {
				next = obj{}
				node[p] = next
			}
			node = next
		}
		node[parts[len(parts)-1]] = leafErr
	}
	return response{status: http.StatusBadRequest, body: obj{"message": "Invalid Form Body", "code": 50035, "errors": errs}}
}

var (
	errUnknownChannel     = apiError(http.StatusNotFound, 10003, "Unknown Channel")
	errUnknownGuild       = apiError(http.StatusNotFound, 10004, "Unknown Guild")
	errUnknownMember      = apiError(http.StatusNotFound, 10007, "Unknown Member")
	errUnknownMessage     = apiError(http.StatusNotFound, 10008, "Unknown Message")
	errUnknownEmoji       = apiError(http.StatusBadRequest, 10014, "Unknown Emoji")
	errUnknownWebhook     = apiError(http.StatusNotFound, 10015, "Unknown Webhook")
	errUnknownInteraction = apiError(http.StatusNotFound, 10062, "Unknown interaction")
	errUnknownCommand     = apiError(http.StatusNotFound, 10063, "Unknown application command")
	errAlreadyAcked       = apiError(http.StatusBadRequest, 40060, "Interaction has already been acknowledged.")
	errMissingAccess      = apiError(http.StatusForbidden, 50001, "Missing Access")
	errNotAuthor          = apiError(http.StatusForbidden, 50005, "Cannot edit a message authored by another user")
	errEmptyMessage       = apiError(http.StatusBadRequest, 50006, "Cannot send an empty message")
	errWrongChannelType   = apiError(http.StatusBadRequest, 50024, "Cannot execute action on this channel type")
	errInvalidToken       = apiError(http.StatusUnauthorized, 50027, "Invalid Webhook Token")
	errInvalidJSON        = apiError(http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
	errThreadExists       = apiError(http.StatusBadRequest, 160004, "A thread has already been created for this message")
	errUnauthorized       = apiError(http.StatusUnauthorized, 0, "401: Unauthorized")
	errNotFound           = apiError(http.StatusNotFound, 0, "404: Not Found")
)

func (s *Server) routes() {
	s.mux.HandleFunc("GET /gateway", s.serveGateway)
	s.mux.HandleFunc("GET /gateway/{$}", s.serveGateway)
	s.mux.HandleFunc("GET /attachments/{channel}/{attachment}/{filename}", s.serveAttachment)
	s.mux.HandleFunc("/", s.serveUnknown)

	s.handle("GET "+api+"/gateway", authNone, s.getGateway)
	s.handle("GET "+api+"/gateway/bot", authBot, s.getGatewayBot)
	s.handle("GET "+api+"/users/@me", authBot, s.getMe)
	s.handle("POST "+api+"/users/@me/channels", authBot, s.createDM)
	s.handle("GET "+api+"/oauth2/applications/@me", authBot, s.getApplication)
	s.handle("GET "+api+"/applications/@me", authBot, s.getApplication)

	s.handle("GET "+api+"/guilds/{guild}", authBot, s.getGuild)
	s.handle("GET "+api+"/guilds/{guild}/channels", authBot, s.getGuildChannels)
	s.handle("GET "+api+"/guilds/{guild}/members/{user}", authBot, s.getMember)

	s.handle("GET "+api+"/channels/{channel}", authBot, s.getChannel)
	s.handle("POST "+api+"/channels/{channel}/typing", authBot, s.postTyping)
	s.handle("GET "+api+"/channels/{channel}/messages", authBot, s.listMessages)
	s.handle("POST "+api+"/channels/{channel}/messages", authBot, s.createMessage)
	s.handle("GET "+api+"/channels/{channel}/messages/{message}", authBot, s.getMessage)
	s.handle("PATCH "+api+"/channels/{channel}/messages/{message}", authBot, s.editMessage)
	s.handle("DELETE "+api+"/channels/{channel}/messages/{message}", authBot, s.deleteMessage)
	s.handle("POST "+api+"/channels/{channel}/messages/{message}/threads", authBot, s.startThread)
	s.handle("PUT "+api+"/channels/{channel}/messages/{message}/reactions/{emoji}/{user}", authBot, s.addReaction)
	s.handle("DELETE "+api+"/channels/{channel}/messages/{message}/reactions/{emoji}/{user}", authBot, s.removeReaction)
	s.handle("GET "+api+"/channels/{channel}/messages/{message}/reactions/{emoji}", authBot, s.listReactions)

	for _, scope := range []string{"", "/guilds/{guild}"} {
		base := api + "/applications/{app}" + scope + "/commands"
		s.handle("GET "+base, authBot, s.listCommands)
		s.handle("PUT "+base, authBot, s.overwriteCommands)
		s.handle("POST "+base, authBot, s.createCommand)
		s.handle("GET "+base+"/{command}", authBot, s.getCommand)
		s.handle("DELETE "+base+"/{command}", authBot, s.deleteCommand)
	}

	s.handle("POST "+api+"/interactions/{interaction}/{token}/callback", authNone, s.interactionCallback)
	s.handle("POST "+api+"/webhooks/{app}/{token}", authNone, s.createFollowup)
	s.handle("GET "+api+"/webhooks/{app}/{token}/messages/{message}", authNone, s.getWebhookMessage)
	s.handle("PATCH "+api+"/webhooks/{app}/{token}/messages/{message}", authNone, s.editWebhookMessage)
	s.handle("DELETE "+api+"/webhooks/{app}/{token}/messages/{message}", authNone, s.deleteWebhookMessage)
}

// handle registers a REST route: the request is parsed and recorded,
// authorization and rate limits are checked, and the handler runs with the
// fake's lock held; its answer is written after the lock is released.
func (s *Server) handle(pattern string, auth authKind, h func(*call) response) {
	s.routeList = append(s.routeList, pattern)
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		body, files, perr := readBody(r)
		s.mu.Lock()
		now := s.cfg.clock.Now()
		rec := Request{
			Method:      r.Method,
			Path:        r.URL.Path,
			Query:       r.URL.Query(),
			Route:       pattern,
			ContentType: r.Header.Get("Content-Type"),
			Body:        body,
			Files:       files,
			Authorized:  s.authorized(r),
			At:          now,
		}
		var resp response
		switch {
		case auth == authBot && !rec.Authorized:
			resp = errUnauthorized
		case perr != nil:
			resp = errInvalidJSON
		default:
			if err := s.checkSpecLocked(r, body); err != nil && !s.cfg.specViolationsAllowed {
				resp = invalidForm(map[string]string{"": "BASE_TYPE_INVALID: " + err.Error()})
				break
			}
			var limited bool
			resp, limited = s.rateLimitLocked(r, pattern, auth, now)
			if !limited {
				hdr := resp.header
				resp = h(&call{r: r, route: pattern, body: body, files: files, now: now})
				if hdr != nil {
					resp.header = hdr
				}
			}
		}
		rec.Status = resp.status
		lost := s.lose[pattern] > 0
		if lost {
			s.lose[pattern]--
		} else if i := slices.IndexFunc(s.loseIf, func(f func(Request) bool) bool { return f(rec) }); i >= 0 {
			s.loseIf = slices.Delete(s.loseIf, i, i+1)
			lost = true
		}
		rec.Lost = lost
		s.requests = append(s.requests, rec)
		s.notifyLocked()
		s.mu.Unlock()
		if lost {
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		if resp.status >= 400 {
			s.log.Debug("rest rejected", "method", r.Method, "path", r.URL.Path, "status", resp.status)
		}
		writeResponse(w, resp)
	})
}

// Routes returns the REST routes the fake serves ("POST /api/v9/channels/{channel}/messages"),
// in a fixed order.
func (s *Server) Routes() []string { return slices.Clone(s.routeList) }

// LoseResponseNext makes the next request to route (a pattern such as
// "POST /api/v9/channels/{channel}/messages") take effect but closes the
// connection instead of answering: the client cannot tell whether it worked,
// as after a timeout.
func (s *Server) LoseResponseNext(route string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lose[route]++
}

// LoseResponseWhen is LoseResponseNext for the next request that match
// accepts (it sees the request as Requests records it), whatever its route:
// a test picks out the upload among a thread's posts by its files.
func (s *Server) LoseResponseWhen(match func(Request) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loseIf = append(s.loseIf, match)
}

// serveUnknown answers routes Discord does not have (or the fake does not
// serve) with Discord's 404, and records them.
func (s *Server) serveUnknown(w http.ResponseWriter, r *http.Request) {
	body, files, _ := readBody(r)
	s.mu.Lock()
	if strings.HasPrefix(r.URL.Path, api+"/") {
		s.checkSpecLocked(r, body)
	}
	s.requests = append(s.requests, Request{
		Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), ContentType: r.Header.Get("Content-Type"),
		Body: body, Files: files, Authorized: s.authorized(r), Status: http.StatusNotFound, At: s.cfg.clock.Now(),
	})
	s.notifyLocked()
	s.mu.Unlock()
	s.log.Debug("unknown route", "method", r.Method, "path", r.URL.Path)
	writeResponse(w, errNotFound)
}

func (s *Server) authorized(r *http.Request) bool {
	return r.Header.Get("Authorization") == "Bot "+s.cfg.token
}

func writeResponse(w http.ResponseWriter, resp response) {
	for k, v := range resp.header {
		w.Header()[k] = v
	}
	if resp.body == nil {
		w.WriteHeader(resp.status)
		return
	}
	b := mustJSON(resp.body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(resp.status)
	w.Write(b)
}

// readBody parses a JSON body, or a multipart/form-data body the way discordgo
// sends files: a payload_json part and files[n] parts.
func readBody(r *http.Request) (json.RawMessage, []File, error) {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil || len(data) == 0 {
		return nil, nil, err
	}
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		if !json.Valid(data) {
			return nil, nil, errors.New("invalid JSON")
		}
		return data, nil, nil
	}
	var body json.RawMessage
	var files []File
	mr := multipart.NewReader(bytes.NewReader(data), params["boundary"])
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		content, err := io.ReadAll(part)
		if err != nil {
			return nil, nil, err
		}
		switch name := part.FormName(); {
		case name == "payload_json":
			if !json.Valid(content) {
				return nil, nil, errors.New("invalid payload_json")
			}
			body = content
		case strings.HasPrefix(name, "files["):
			files = append(files, File{
				Field: name, Filename: part.FileName(), ContentType: part.Header.Get("Content-Type"), Data: content,
			})
		}
	}
	return body, files, nil
}

func (s *Server) getGateway(c *call) response {
	return ok(obj{"url": s.GatewayURL()})
}

func (s *Server) getGatewayBot(c *call) response {
	return ok(obj{
		"url":    s.GatewayURL(),
		"shards": 1,
		"session_start_limit": obj{
			"total": 1000, "remaining": 1000 - len(s.identifies), "reset_after": 86400000, "max_concurrency": 1,
		},
	})
}

func (s *Server) getMe(c *call) response {
	u := s.userObjLocked(s.cfg.botID)
	u["verified"] = true
	u["mfa_enabled"] = false
	return ok(u)
}

func (s *Server) getApplication(c *call) response {
	return ok(obj{
		"id":                     s.cfg.appID,
		"name":                   s.cfg.botName,
		"icon":                   nil,
		"description":            "",
		"bot_public":             true,
		"bot_require_code_grant": false,
		"verify_key":             "0000000000000000000000000000000000000000000000000000000000000000",
		"flags":                  s.applicationFlags(),
		"bot":                    s.userObjLocked(s.cfg.botID),
		"team":                   nil,
	})
}

func (s *Server) serveAttachment(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	a := s.attachments[r.PathValue("attachment")]
	found := a != nil && a.Filename == r.PathValue("filename")
	if found && !s.cdnLinkValid(r, s.cfg.clock.Now()) {
		// What Discord's CDN answers for a link past its ex, or unsigned.
		s.mu.Unlock()
		http.Error(w, "This content is no longer available.", http.StatusNotFound)
		return
	}
	var data []byte
	var ctype string
	if found {
		data, ctype = a.Data, a.ContentType
	}
	s.mu.Unlock()
	if !found {
		http.NotFound(w, r)
		return
	}
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.Write(data)
}
