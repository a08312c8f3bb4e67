package storage

import (
	"bytes"

	"github.com/threadsmith/threadsmith/agent/transcript"
)

// What another backend (storage/postgres) shares with this one, so that both
// store entries the same way and decode them with the same code.

// EncodedEntry is an entry as a backend stores it: Payload is the JSON of the
// part of the entry its type uses (the message, the compaction, …).
type EncodedEntry struct {
	Seq     int64
	Type    string
	TS      int64
	Payload string
	// InputID is the inbound id of the chat input a user message came from,
	// 0 for none: AppendEntries delivers it in the same transaction.
	InputID int64
}

// EncodeEntry validates and encodes an entry for storing.
func EncodeEntry(e transcript.Entry) (EncodedEntry, error) {
	r, err := encodeEntry(e)
	if err != nil {
		return EncodedEntry{}, err
	}
	id, _ := inputOf(e)
	return EncodedEntry{Seq: r.seq, Type: r.typ, TS: r.ts, Payload: r.payload, InputID: id}, nil
}

// EntryDecoder decodes stored entries in the order they are added; large
// results are decoded by parallel workers while the caller keeps reading.
// Call Result (or Abort on a read error) exactly once.
type EntryDecoder struct{ d decoder }

// Add queues one stored entry; payload is copied.
func (d *EntryDecoder) Add(seq int64, typ string, ts int64, payload []byte) {
	d.d.add(rawEntry{seq: seq, typ: typ, ts: ts, payload: bytes.Clone(payload)})
}

// Result returns every entry added, in order. A payload that does not decode
// is ErrCorrupt.
func (d *EntryDecoder) Result() ([]transcript.Entry, error) { return d.d.result() }

// Abort stops the workers without a result.
func (d *EntryDecoder) Abort() { d.d.wait() }

// ValidThreadKey reports whether a thread key has what EnsureThread needs.
func ValidThreadKey(k ThreadKey) error { return k.validate() }

// OpError wraps err as the error of operation op ("append entries", …), the
// way this package's methods report theirs.
func OpError(op string, err error) error { return opError(op, err) }

// SentinelError returns err, which then also matches sentinel (ErrFull,
// ErrReadOnly) with errors.Is; its text stays err's.
func SentinelError(sentinel, err error) error { return codeError{sentinel, err} }

// ValidInboundTransition returns the states an inbound message may leave for
// state, or ErrInvalidTransition.
func ValidInboundTransition(state InboundState) ([2]InboundState, error) {
	from, ok := allowedFrom[state]
	if !ok {
		return from, ErrInvalidTransition
	}
	return from, nil
}

// NewSessionID returns a new random public session id.
func NewSessionID() string { return newSessionID() }
