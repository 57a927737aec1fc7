package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io/fs"
	"os"

	"github.com/agentmem/memory/internal/atomicfile"
	bolt "go.etcd.io/bbolt"
)

// The census (rawtree.go) reads every branch page of the file when a process first loads a
// collection: about 10 ms of CPU at a million passages, twenty times that at 21M. A writer
// that closes the store takes the census of what it leaves and, when it finds nothing
// wrong, records so beside the file, in store.db.verified: the file's identity (device,
// inode, size, and its modification and change times to the nanosecond) and the
// transaction the census read. A later open whose file has that identity and whose
// transaction is that one takes the census as read. Any change to the file through the
// file system (a write, a copy or a restore: a new inode, a byte flipped and its time put
// back: a new change time, which no system call sets at will) makes the record stale, and
// the census runs. Damage below the file system (a disk's bit rot, which the file system
// does not see) is what it cannot catch: `memory check` reads every page either way.
//
//	record = magic "MVFY" | version 1 | dev u64 | ino u64 | size u64 | mtime ns u64 | ctime ns u64 | txid u64 | CRC-32C of the bytes before, u32

const verifiedExt = ".verified"

var verifiedMagic = []byte("MVFY\x01")

const verifiedSize = 5 + 6*8 + 4

var verifiedTable = crc32.MakeTable(crc32.Castagnoli)

// VerifiedFile is the name of the census record of the store file named db.
func VerifiedFile(db string) string { return db + verifiedExt }

// verifiedRecord encodes the record of the file with identity id, verified at txid.
func verifiedRecord(id fileID, txid uint64) []byte {
	b := append([]byte{}, verifiedMagic...)
	for _, v := range []uint64{id.dev, id.ino, id.size, id.mtime, id.ctime, txid} {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, verifiedTable))
}

// verified reports whether the record beside path vouches for the file as it is now, at
// transaction txid.
func verified(path string, txid uint64) bool {
	id, ok := identify(path)
	if !ok {
		return false
	}
	b, err := os.ReadFile(VerifiedFile(path))
	if err != nil || len(b) != verifiedSize {
		return false
	}
	return bytes.Equal(b, verifiedRecord(id, txid))
}

// recordVerified writes the record vouching for the file at path as it is now, at txid
// (not synced: a record lost or torn by a crash only makes the next open take the census).
func recordVerified(path string, txid uint64) error {
	id, ok := identify(path)
	if !ok {
		return nil
	}
	return atomicfile.WriteFile(VerifiedFile(path), verifiedRecord(id, txid), atomicfile.Options{NoSync: true})
}

// dropVerified removes the record beside path.
func dropVerified(path string) error {
	if err := os.Remove(VerifiedFile(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// clean reports whether the census found nothing wrong.
func (c *census) clean() bool { return c != nil && c.err == nil && len(c.damaged) == 0 }

// closeVerified is Close for a writable store: it takes the census of the file as the
// writer leaves it and, after closing, records it when clean (removes the record otherwise).
// A store this process never loaded a collection of (an open refused before, a store only
// looked at) is closed as it is: the record, if any, is left to vouch or not by itself.
func (db *DB) closeVerified() error {
	if db.census == nil {
		return db.bolt.Close()
	}
	var txid uint64
	var c *census
	same := false
	err := db.view(func(tx *bolt.Tx) error {
		txid = uint64(tx.ID())
		if prev := db.census; prev != nil && prev.txid == tx.ID() {
			c, same = prev, prev.vouched // nothing written since the census of the first load
			return nil
		}
		c = takeCensus(tx, true)
		return nil
	})
	cerr := db.bolt.Close()
	switch {
	case cerr != nil:
		return cerr
	case same: // the record read at the first load still vouches for the file
	case err == nil && c.clean():
		if werr := recordVerified(db.path, txid); werr != nil {
			db.log.Warn("store: cannot record the census of store.db (the next open takes it again)", "err", werr)
		}
	default:
		if werr := dropVerified(db.path); werr != nil {
			db.log.Warn("store: cannot remove the census record of store.db", "err", werr)
		}
	}
	return nil
}
