package durable

import (
	"errors"
)

// ErrDamaged is wrapped by the errors of files whose bytes do not decode
// or do not match their checksum: derived files (the state, the ledger) are
// rebuilt, and history files are set aside, rather than read again.
var ErrDamaged = errors.New("damaged")

// DamagedError says which kind of file is damaged, and is ErrDamaged.
type DamagedError string

func (e DamagedError) Error() string        { return string(e) }
func (e DamagedError) Is(target error) bool { return target == ErrDamaged }
