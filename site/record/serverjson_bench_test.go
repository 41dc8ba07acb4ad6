package record

import (
	"encoding/json"
	"os"
	"testing"
)

// BenchmarkServerFile writes and reads a server's file, a golden file
// given a full history and daily series (benchColumns), as a publish does
// for each server it renders (ReadServerFile, MarshalServerFile);
// BenchmarkBaselineServerFile does the same with encoding/json alone, the
// columns handed to it by their MarshalJSON and UnmarshalJSON.
func BenchmarkServerFile(b *testing.B) { benchServerFile(b, true) }

func BenchmarkBaselineServerFile(b *testing.B) { benchServerFile(b, false) }

func benchServerFile(b *testing.B, members bool) {
	golden, err := os.ReadFile("../testdata/golden/servers/alpha.json")
	if err != nil {
		b.Fatal(err)
	}
	var f ServerFile
	if err := json.Unmarshal(golden, &f); err != nil {
		b.Fatal(err)
	}
	f.History, f.Daily = benchColumns()
	enc, err := json.Marshal(f)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("write", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(enc)))
		for b.Loop() {
			if members {
				_, err = MarshalServerFile(f)
			} else {
				_, err = json.Marshal(f)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(enc)))
		for b.Loop() {
			if members {
				var f ServerFile
				if !f.scanWhole(enc) { // what ReadServerFile reads it with
					b.Fatal("not read whole by hand")
				}
			} else {
				var g ServerFile
				if err := json.Unmarshal(enc, &g); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
