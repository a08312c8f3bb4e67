package bridge

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/outbox"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/workspace/diskuse"
)

// Input the store refuses for want of room (storage.ErrFull) is not
// acknowledged: Slack delivers it again, and it is stored then if room
// returned. Before that the disk's reserve (the agents' quota floor,
// diskuse.Floor) is handed to the database and the write tried once more,
// and a thread whose input is still refused is told once, until input of
// it is stored again.

// fullNotice is what a thread is told, once, when its input cannot be
// stored because the bot's disk is full. It promises no redelivery: Slack
// delivers what was not acknowledged again (for about five minutes),
// Discord does not.
const fullNotice = "⚠️ I can't take messages right now: the bot's disk is full. Once space is freed I'll answer again; if your message goes unanswered then, send it again."

// withReserve runs write, a store's write; refused for want of room, it
// hands the disk's reserve to the database, if it still holds it, and runs
// write once more.
func (b *Bridge) withReserve(write func() error) error {
	err := write()
	if b.reserveForFull(err) {
		err = write()
	}
	return err
}

// appendRepeatable is the sessions' test of an append worth repeating
// (storeUnavailable); one refused for want of room first hands the disk's
// reserve to the database.
func (b *Bridge) appendRepeatable(err error) bool {
	b.reserveForFull(err)
	return storeUnavailable(err)
}

// reserveForFull hands the disk's reserve to the database when err is a
// write refused for want of room and the reserve is still held, and
// reports whether it did.
func (b *Bridge) reserveForFull(err error) bool {
	if !errors.Is(err, storage.ErrFull) || !b.handOverReserve() {
		return false
	}
	b.log.Warn("the disk is full: its reserve was handed to the database")
	return true
}

// handOverReserve hands the disk's reserve to the database if it still
// holds it and the disk is full (diskuse.Floor.Check), and reports whether
// it did.
func (b *Bridge) handOverReserve() bool {
	f := b.cfg.Agent.DiskQuota.Floor
	if f == nil || f.Reserve <= 0 {
		return false
	}
	_, err := os.Lstat(filepath.Join(f.Path, diskuse.BalloonName))
	held := err == nil
	st, err := f.Check()
	if err != nil {
		b.log.Warn("checking the disk's reserve", "err", err)
		return false
	}
	return held && st.Low
}

// checkReserve sets the disk's reserve aside when there is room for it (at
// start, so that the database has it before any agent's command looked at
// the disk; and once input is stored again after a refusal), or hands it
// over when the disk is filling.
func (b *Bridge) checkReserve() {
	if f := b.cfg.Agent.DiskQuota.Floor; f != nil {
		if _, err := f.Check(); err != nil {
			b.log.Warn("checking the disk's reserve", "err", err)
		}
	}
}

// tellFull tells the thread, once until input of its is stored again, that
// its input cannot be stored.
func (h *handler) tellFull(th chat.ThreadRef) {
	b := h.b
	key := th.Key()
	b.mu.Lock()
	told := b.toldFull.Has(key)
	if !told {
		b.toldFull.Put(key, struct{}{})
	}
	b.mu.Unlock()
	b.log.Warn("the disk is full: input not stored, not acknowledged", "thread", key, "notice", !told)
	if !told {
		h.p.Outbox.Post(th, fullNotice, outbox.High, nil)
	}
}

// storedAgain notes that input of the thread was stored: a later refusal
// is told again.
func (b *Bridge) storedAgain(key string) {
	b.mu.Lock()
	told := b.toldFull.Has(key)
	b.toldFull.Delete(key)
	b.mu.Unlock()
	if told {
		b.checkReserve()
	}
}
