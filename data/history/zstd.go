package history

import (
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// historyZstd is the codec of the history's pages: parquet.Zstd's
// encoding, the same bytes, with encoders kept for the process in a list
// of its own. parquet.Zstd keeps them in a sync.Pool, which lets the GC
// take them by its second collection and, under -race, drops one put in
// four: a file of the history's 40-odd columns, a page each, then makes
// several encoders, each 1.3 MB of tables zeroed (and shadowed by the race
// detector), and a fold a minute spends more on them than on its rows.
var historyZstd = &zstdCodec{}

// zstdCodec is a compress.Codec of zstd with parquet.Zstd's options. Its
// free list holds as many encoders as were ever in use at once.
type zstdCodec struct {
	mu   sync.Mutex
	free []*zstd.Encoder
}

func (c *zstdCodec) String() string { return parquet.Zstd.String() }

func (c *zstdCodec) CompressionCodec() format.CompressionCodec { return format.Zstd }

// Encode compresses src as parquet.Zstd does (its level, one goroutine,
// a frame for empty input, no CRC), into dst.
func (c *zstdCodec) Encode(dst, src []byte) ([]byte, error) {
	c.mu.Lock()
	var e *zstd.Encoder
	if n := len(c.free); n > 0 {
		e, c.free = c.free[n-1], c.free[:n-1]
	}
	c.mu.Unlock()
	if e == nil {
		var err error
		e, err = zstd.NewWriter(nil,
			zstd.WithEncoderConcurrency(1),
			zstd.WithEncoderLevel(parquet.Zstd.Level),
			zstd.WithZeroFrames(true),
			zstd.WithEncoderCRC(false),
		)
		if err != nil {
			return nil, err
		}
	}
	out := e.EncodeAll(src, dst[:0])
	c.mu.Lock()
	c.free = append(c.free, e)
	c.mu.Unlock()
	return out, nil
}

// Decode is parquet.Zstd's: a writer does not decode.
func (c *zstdCodec) Decode(dst, src []byte) ([]byte, error) {
	return parquet.Zstd.Decode(dst, src)
}
