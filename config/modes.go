package config

import (
	"log/slog"
	"strings"
)

// The enumerated keys are string types whose UnmarshalText normalises the
// spellings people write ("followup", "Follow_Up", "INFO") to one canonical
// value. An unrecognised value is kept as written, so that Validate can name
// the key and list the choices instead of the YAML decoder failing with a line
// number only.

// BusyMode is how a plain message to a busy session is queued (agent.busy_mode).
type BusyMode string

const (
	// BusyFollowUp delivers the message after the current run ends.
	BusyFollowUp BusyMode = "followUp"
	// BusySteer delivers the message at the next turn boundary of the run.
	BusySteer BusyMode = "steer"
)

// UnmarshalText accepts followUp, followup and follow_up in any case, and steer.
func (m *BusyMode) UnmarshalText(b []byte) error {
	switch strings.ReplaceAll(strings.ToLower(string(b)), "_", "") {
	case "followup", "follow-up":
		*m = BusyFollowUp
	case "steer":
		*m = BusySteer
	default:
		*m = BusyMode(b)
	}
	return nil
}

func (m BusyMode) valid() bool { return m == BusyFollowUp || m == BusySteer }

// QueueMode says how many queued messages one poll of a queue delivers
// (agent.steer_mode, agent.follow_up_mode).
type QueueMode string

const (
	// OneAtATime delivers one message per poll.
	OneAtATime QueueMode = "one-at-a-time"
	// AllAtOnce delivers everything queued at each poll.
	AllAtOnce QueueMode = "all"
)

// UnmarshalText accepts one-at-a-time (also with underscores) and all, in any case.
func (m *QueueMode) UnmarshalText(b []byte) error {
	switch strings.ReplaceAll(strings.ToLower(string(b)), "_", "-") {
	case string(OneAtATime):
		*m = OneAtATime
	case string(AllAtOnce):
		*m = AllAtOnce
	default:
		*m = QueueMode(b)
	}
	return nil
}

func (m QueueMode) valid() bool { return m == OneAtATime || m == AllAtOnce }

// LogLevel is log.level.
type LogLevel string

// Log levels.
const (
	LogDebug LogLevel = "debug"
	LogInfo  LogLevel = "info"
	LogWarn  LogLevel = "warn"
	LogError LogLevel = "error"
)

// UnmarshalText accepts the levels in any case, and "warning" for warn.
func (l *LogLevel) UnmarshalText(b []byte) error {
	s := strings.ToLower(string(b))
	switch LogLevel(s) {
	case LogDebug, LogInfo, LogWarn, LogError:
		*l = LogLevel(s)
	case "warning":
		*l = LogWarn
	default:
		*l = LogLevel(b)
	}
	return nil
}

func (l LogLevel) valid() bool {
	return l == LogDebug || l == LogInfo || l == LogWarn || l == LogError
}

// Slog returns the slog level (info for an invalid value).
func (l LogLevel) Slog() slog.Level {
	switch l {
	case LogDebug:
		return slog.LevelDebug
	case LogWarn:
		return slog.LevelWarn
	case LogError:
		return slog.LevelError
	}
	return slog.LevelInfo
}

// LogFormat is log.format.
type LogFormat string

// Log formats.
const (
	// LogAuto is JSON when stdout is not a terminal, text otherwise.
	LogAuto LogFormat = "auto"
	LogJSON LogFormat = "json"
	LogText LogFormat = "text"
)

// UnmarshalText accepts the formats in any case.
func (f *LogFormat) UnmarshalText(b []byte) error {
	s := LogFormat(strings.ToLower(string(b)))
	if s == LogAuto || s == LogJSON || s == LogText {
		*f = s
	} else {
		*f = LogFormat(b)
	}
	return nil
}

func (f LogFormat) valid() bool { return f == LogAuto || f == LogJSON || f == LogText }

// JSON reports whether logs should be JSON, given whether stdout is a terminal.
func (f LogFormat) JSON(stdoutIsTerminal bool) bool {
	switch f {
	case LogJSON:
		return true
	case LogText:
		return false
	}
	return !stdoutIsTerminal
}

// SlackMode is how Slack delivers events (slack.mode).
type SlackMode string

const (
	// SlackSocket is Socket Mode: an outbound websocket, needs slack.app_token.
	SlackSocket SlackMode = "socket"
	// SlackHTTP is the Events API: needs slack.signing_secret and slack.listen.
	SlackHTTP SlackMode = "http"
)

// UnmarshalText accepts the modes in any case.
func (m *SlackMode) UnmarshalText(b []byte) error {
	s := SlackMode(strings.ToLower(string(b)))
	if s == SlackSocket || s == SlackHTTP {
		*m = s
	} else {
		*m = SlackMode(b)
	}
	return nil
}

func (m SlackMode) valid() bool { return m == SlackSocket || m == SlackHTTP }

// SandboxMode is how the agent's commands are isolated (sandbox.mode).
type SandboxMode string

const (
	// SandboxAuto uses the strongest isolation the kernel offers and refuses
	// to start without one.
	SandboxAuto SandboxMode = "auto"
	// SandboxNamespaces requires Linux namespaces (plus Landlock when present).
	SandboxNamespaces SandboxMode = "namespaces"
	// SandboxNone runs the agent's commands unsandboxed.
	SandboxNone SandboxMode = "none"
)

// UnmarshalText accepts the modes in any case.
func (m *SandboxMode) UnmarshalText(b []byte) error {
	switch s := SandboxMode(strings.ToLower(string(b))); s {
	case SandboxAuto, SandboxNamespaces, SandboxNone:
		*m = s
	default:
		*m = SandboxMode(b)
	}
	return nil
}

func (m SandboxMode) valid() bool {
	return m == SandboxAuto || m == SandboxNamespaces || m == SandboxNone
}

// PullRequestMode is workspace.repos[].pull_requests.
type PullRequestMode string

const (
	// PullRequestsDraft opens a draft request where the forge has drafts.
	PullRequestsDraft PullRequestMode = "draft"
	// PullRequestsReady opens a request ready for review.
	PullRequestsReady PullRequestMode = "ready"
	// PullRequestsOff opens none (the push notice keeps its compare link).
	PullRequestsOff PullRequestMode = "off"
)

// UnmarshalText accepts the modes in any case; false and no mean off.
func (m *PullRequestMode) UnmarshalText(b []byte) error {
	switch s := strings.ToLower(string(b)); s {
	case "draft", "ready", "off":
		*m = PullRequestMode(s)
	case "false", "no", "none":
		*m = PullRequestsOff
	default:
		*m = PullRequestMode(b)
	}
	return nil
}

// valid accepts "" too: a config built in code means the default, draft.
func (m PullRequestMode) valid() bool {
	return m == "" || m == PullRequestsDraft || m == PullRequestsReady || m == PullRequestsOff
}

// PushMode is workspace.repos[].push.
type PushMode string

const (
	// PushAuto pushes a run's commits when it ends.
	PushAuto PushMode = "auto"
	// PushApprove keeps them in the workspace until someone allowed says Push.
	PushApprove PushMode = "approve"
)

// UnmarshalText accepts the modes in any case.
func (m *PushMode) UnmarshalText(b []byte) error {
	switch s := PushMode(strings.ToLower(string(b))); s {
	case PushAuto, PushApprove:
		*m = s
	default:
		*m = PushMode(b)
	}
	return nil
}

// valid accepts "" too: a config built in code means the default, auto.
func (m PushMode) valid() bool { return m == "" || m == PushAuto || m == PushApprove }

// ApprovalMode is agent.approval and workspace.repos[].approval: whether a
// new request in a thread is planned first, its plan waiting for approval.
type ApprovalMode string

const (
	// ApprovalNone runs a request at once.
	ApprovalNone ApprovalMode = "none"
	// ApprovalPlan plans a new request read-only first; the work starts when
	// the requester or an approver says Approve.
	ApprovalPlan ApprovalMode = "plan"
)

// UnmarshalText accepts the modes in any case.
func (m *ApprovalMode) UnmarshalText(b []byte) error {
	switch s := ApprovalMode(strings.ToLower(string(b))); s {
	case ApprovalNone, ApprovalPlan:
		*m = s
	default:
		*m = ApprovalMode(b)
	}
	return nil
}

// valid accepts "" too: agent.approval's default (none), and for a
// repository agent.approval's value.
func (m ApprovalMode) valid() bool { return m == "" || m == ApprovalNone || m == ApprovalPlan }

// Provider is the API a model endpoint speaks (llm.provider, llm.models[].provider).
type Provider string

const (
	// ProviderOpenAI is any OpenAI-compatible chat-completions endpoint.
	ProviderOpenAI Provider = "openai"
	// ProviderAnthropic is Anthropic's Messages API.
	ProviderAnthropic Provider = "anthropic"
)

// The providers' public APIs: a model of another provider than llm's gets its
// provider's when it names no base_url.
const (
	DefaultOpenAIBaseURL    = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL = "https://api.anthropic.com"
)

func (p Provider) valid() bool { return p == ProviderOpenAI || p == ProviderAnthropic }

// DefaultBaseURL is the provider's public API.
func (p Provider) DefaultBaseURL() string {
	if p == ProviderAnthropic {
		return DefaultAnthropicBaseURL
	}
	return DefaultOpenAIBaseURL
}

// Reasoning is how hard a reasoning model thinks: "" (the provider's
// default), off, minimal, low, medium or high — pi's thinking levels. OpenAI
// models get it as reasoning_effort, Anthropic models as a thinking budget.
type Reasoning string

func (r Reasoning) valid() bool {
	switch r {
	case "", "off", "minimal", "low", "medium", "high":
		return true
	}
	return false
}
