package backend

import (
	"encoding/binary"
	"hash/crc32"
)

// SealSnapshot makes a snapshot of body (what follows the magic): the
// magic, body and its checksum, so that a fuzzer's bytes reach the decoder
// instead of stopping at the checksum.
func SealSnapshot(body []byte) []byte {
	b := append(snapshotMagic[:len(snapshotMagic):len(snapshotMagic)], body...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}
