package history

import (
	"strings"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
)

// The state files' format v1 (codec.go), read still, written no more
// (stateblocks.go has v2): "PDST" and a version byte, a sequence number
// (for the snapshot, the last delta it holds; for a delta, its own), the
// number of states, each state's fields in the order of State (times as
// varint Unix nanoseconds, 0 for the zero time; the outcome as its index in
// Outcomes plus one, 0 for none), then the CRC-32C. States are in no
// particular order. A file of another version is damaged: the state is
// derived data, rebuilt from the history (see repairState).

const stateMagicV1 = "PDST\x01"

// stateFile is a state file's text and the CRC-32C of all of it, its
// checksum included (crcResidue when intact), and which kind of state file
// it is ("snapshot" or "delta"), for its errors.
type stateFile struct {
	text string
	crc  uint32
	kind string
}

// readStateFile reads the state file at path into one string, summing it
// on the way: a million states' file is held once, not as bytes and as
// their copy. Errors are os.Open's and the read's, unwrapped.
func readStateFile(path, kind string) (stateFile, error) {
	text, sum, err := durable.ReadSummed(path)
	return stateFile{text, sum, kind}, err
}

// errStateDamaged returns the error that the state file of kind is
// damaged, wrapping ErrDamaged.
func errStateDamaged(kind string) error { return durable.DamagedError("state " + kind + " is damaged") }

// encodeState appends the fields of s, as decodeState reads them.
func encodeState(e *durable.Encoder, s data.State) {
	e.String(s.ID)
	e.String(s.URL)
	encodeTime(e, s.LastCheck)
	e.Byte(outcomeCode(s.LastStatus))
	e.String(s.LastDetail)
	encodeTime(e, s.LastAnswered)
	encodeTime(e, s.FailingSince)
	e.String(s.Protocol)
	e.String(s.Transport)
	encodeTime(e, s.RetryAfter)
}

func encodeTime(e *durable.Encoder, t time.Time) {
	if t.IsZero() {
		e.Varint(0)
		return
	}
	e.Varint(t.UnixNano())
}

func decodeTime(d *durable.Decoder) time.Time {
	n := d.Varint()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// outcomeCode returns o's index in Outcomes plus one, 0 for none.
func outcomeCode(o data.Outcome) byte {
	for i, v := range data.Outcomes {
		if v == o {
			return byte(i + 1)
		}
	}
	return 0
}

func decodeOutcome(d *durable.Decoder) data.Outcome {
	c := int(d.Byte())
	if c == 0 {
		return ""
	}
	if c > len(data.Outcomes) {
		d.Fail("outcome")
		return ""
	}
	return data.Outcomes[c-1]
}

// decodeStates decodes a state file of either version read whole. With
// keep set, only the states whose id it keeps are returned (a fold needs
// only the servers it has results for, and skipping the rest spares a
// million map entries). Errors wrap ErrDamaged.
func decodeStates(f stateFile, keep func(id string) bool) (seq uint64, m map[string]data.State, err error) {
	if !strings.HasPrefix(f.text, stateMagicV1) {
		return decodeBlocks(f, keep)
	}
	d, err := durable.NewDecoder(f.text, f.crc, stateMagicV1, errStateDamaged(f.kind))
	if err != nil {
		return 0, nil, err
	}
	seq = d.Uvarint()
	n := d.Count(1)
	if keep == nil {
		m = make(map[string]data.State, n)
	} else {
		m = map[string]data.State{}
	}
	for range n {
		id := d.String()
		if d.Err() != nil {
			break
		}
		if keep != nil && !keep(id) {
			skipState(d)
			continue
		}
		s := decodeState(d, id)
		if d.Err() != nil {
			break
		}
		if keep != nil {
			s = cloneState(s)
		}
		m[id] = s
	}
	if err := d.Close(); err != nil {
		return 0, nil, err
	}
	return seq, m, nil
}

// decodeState reads the fields of the state of id after its id.
func decodeState(d *durable.Decoder, id string) data.State {
	s := data.State{ID: id}
	s.URL = d.String()
	s.LastCheck = decodeTime(d)
	s.LastStatus = decodeOutcome(d)
	s.LastDetail = d.String()
	s.LastAnswered = decodeTime(d)
	s.FailingSince = decodeTime(d)
	s.Protocol = d.String()
	s.Transport = d.String()
	s.RetryAfter = decodeTime(d)
	return s
}

// cloneState returns s with its own strings: one of a few states of a
// file, kept after the file's text can go.
func cloneState(s data.State) data.State {
	s.ID, s.URL, s.LastDetail = strings.Clone(s.ID), strings.Clone(s.URL), strings.Clone(s.LastDetail)
	s.Protocol, s.Transport = strings.Clone(s.Protocol), strings.Clone(s.Transport)
	return s
}

// skipState passes over the fields of a state after its id, as
// decodeState reads them, without making them.
func skipState(d *durable.Decoder) {
	d.SkipString() // URL
	d.SkipNumber() // LastCheck
	decodeOutcome(d)
	d.SkipString() // LastDetail
	d.SkipNumber() // LastAnswered
	d.SkipNumber() // FailingSince
	d.SkipString() // Protocol
	d.SkipString() // Transport
	d.SkipNumber() // RetryAfter
}
