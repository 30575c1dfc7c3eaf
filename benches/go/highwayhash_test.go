package benches

// Benchmarks of minio/highwayhash (the HighwayHash-256 MinIO uses for
// bitrot protection), at the sizes of benches/benches/bitrot.rs, so that
// Tessera's `bitrot` kernels are measured side by side with it:
//
//	cd benches/go && go test -run xxx -bench Highway
//
// Each benchmark hashes one buffer per iteration through the hash.Hash
// interface as MinIO does (Reset, Write, Sum), and also through the one-shot
// Sum function; b.SetBytes makes `go test` report MB/s (1 MB = 10^6 bytes).

import (
	"fmt"
	"testing"

	"github.com/minio/highwayhash"
)

// magicHighwayHash256Key is MinIO's fixed bitrot key.
var magicHighwayHash256Key = []byte{
	0x4b, 0xe7, 0x34, 0xfa, 0x8e, 0x23, 0x8a, 0xcd, 0x26, 0x3e, 0x83, 0xe6, 0xbb, 0x96, 0x85, 0x52,
	0x04, 0x0f, 0x93, 0x5d, 0xa3, 0x9f, 0x44, 0x14, 0x97, 0xe0, 0x9d, 0x13, 0x22, 0xde, 0x36, 0xa0,
}

var highwaySizes = []struct {
	name string
	size int
}{
	{"1MiB", 1 << 20},
	{"128KiB", 128 << 10},
	{"64KiB", 64 << 10},
	{"4KiB", 4 << 10},
}

// highwayInput is deterministic, incompressible-looking data.
func highwayInput(n int) []byte {
	buf := make([]byte, n)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range buf {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		buf[i] = byte(x >> 24)
	}
	return buf
}

var highwaySink [32]byte

// BenchmarkHighwayHash256 is MinIO's usage: highwayhash.New, then per block
// Reset, Write and Sum into a reused slice.
func BenchmarkHighwayHash256(b *testing.B) {
	for _, s := range highwaySizes {
		b.Run(s.name, func(b *testing.B) {
			data := highwayInput(s.size)
			h, err := highwayhash.New(magicHighwayHash256Key)
			if err != nil {
				b.Fatal(err)
			}
			sum := make([]byte, 0, 32)
			b.SetBytes(int64(s.size))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h.Reset()
				h.Write(data)
				sum = h.Sum(sum[:0])
			}
			copy(highwaySink[:], sum)
		})
	}
}

// BenchmarkHighwaySum256 is the one-shot highwayhash.Sum.
func BenchmarkHighwaySum256(b *testing.B) {
	for _, s := range highwaySizes {
		b.Run(s.name, func(b *testing.B) {
			data := highwayInput(s.size)
			b.SetBytes(int64(s.size))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				highwaySink = highwayhash.Sum(data, magicHighwayHash256Key)
			}
		})
	}
}

// TestHighwayMinIOSelfTest checks the library against MinIO's bitrot
// self-test value, so the benchmark is known to measure the right function.
func TestHighwayMinIOSelfTest(t *testing.T) {
	h, err := highwayhash.New(magicHighwayHash256Key)
	if err != nil {
		t.Fatal(err)
	}
	// 32 rounds: hash the message, append the digest to it.
	var msg, sum []byte
	for round := 0; round < 32; round++ {
		h.Reset()
		h.Write(msg)
		sum = h.Sum(nil)
		msg = append(msg, sum...)
	}
	if got, want := fmt.Sprintf("%x", sum), "39c0407ed3f01b18d22c85db4aeff11e060ca5f43131b0126731ca197cd42313"; got != want {
		t.Fatalf("self-test digest %s, want %s", got, want)
	}
}
