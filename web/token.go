package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// A link token is "<expiry>.<mac>": the expiry in Unix seconds and the
// HMAC-SHA256, under the configured key, of the thread id and that expiry.
// The thread id is not in the token but in the path it is checked against,
// so a token opens only the thread it was made for, until it expires. Tokens
// are not stored: rotating the key revokes every link at once.

var (
	errBadToken = errors.New("not a valid link")
	errExpired  = errors.New("the link has expired")
)

// signer makes and checks link tokens.
type signer struct{ key []byte }

func (s signer) mac(threadID, expiry int64) []byte {
	h := hmac.New(sha256.New, s.key)
	// A fixed label keeps these MACs apart from any other use of the key.
	h.Write([]byte("threadsmith session page\x00" + strconv.FormatInt(threadID, 10) + "\x00" + strconv.FormatInt(expiry, 10)))
	return h.Sum(nil)
}

// sign returns a token for threadID valid until expires.
func (s signer) sign(threadID int64, expires time.Time) string {
	exp := expires.Unix()
	return strconv.FormatInt(exp, 10) + "." + base64.RawURLEncoding.EncodeToString(s.mac(threadID, exp))
}

// verify checks token for threadID at now and returns when it expires.
func (s signer) verify(token string, threadID int64, now time.Time) (time.Time, error) {
	if len(s.key) == 0 {
		return time.Time{}, errBadToken
	}
	expStr, macStr, ok := strings.Cut(token, ".")
	if !ok {
		return time.Time{}, errBadToken
	}
	exp, err := strconv.ParseInt(expStr, 10, 64)
	if err != nil {
		return time.Time{}, errBadToken
	}
	got, err := base64.RawURLEncoding.DecodeString(macStr)
	if err != nil || !hmac.Equal(got, s.mac(threadID, exp)) {
		return time.Time{}, errBadToken
	}
	expires := time.Unix(exp, 0)
	if !now.Before(expires) {
		return time.Time{}, errExpired
	}
	return expires, nil
}
