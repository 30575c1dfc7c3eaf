package benches

// Benchmarks of klauspost/reedsolomon (the library MinIO uses), on the same
// shapes as Tessera's criterion bench (benches/benches/erasure.rs), so that
// the two can be read side by side.
//
//	cd benches/go && go test -run xxx -bench Reed -benchtime 1x   # smoke run
//	cd benches/go && go test -run xxx -bench Reed -count 5        # real figures
//
// Every coder runs on one goroutine (WithMaxGoroutines(1)), like the Rust
// kernels, so the figures compare single-core code. Two option sets:
//   - default: whatever klauspost picks for this CPU (GFNI on AVX-512 when
//     present);
//   - avx2: AVX-512 and both GFNI forms disabled, leaving its AVX2 kernels.
// b.SetBytes is the data bytes per operation, so MB/s is data throughput.

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"

	"github.com/klauspost/reedsolomon"
)

var rsShapes = []struct{ k, m int }{
	{4, 2}, {8, 4}, {12, 4}, {8, 8}, {16, 4}, {16, 16},
}

// rsLayouts: MinIO's (one 1 MiB block split over k data shards), 1 MiB
// per shard and 4 MiB per shard.
var rsLayouts = []struct {
	name  string
	shard func(k int) int
}{
	{"minio", func(k int) int { return (1<<20 + k - 1) / k }},
	{"1MiB-shards", func(int) int { return 1 << 20 }},
	{"4MiB-shards", func(int) int { return 4 << 20 }},
}

var rsOptions = []struct {
	name string
	opts []reedsolomon.Option
}{
	{"default", []reedsolomon.Option{reedsolomon.WithMaxGoroutines(1)}},
	{"avx2", []reedsolomon.Option{
		reedsolomon.WithMaxGoroutines(1),
		reedsolomon.WithAVX512(false),
		reedsolomon.WithGFNI(false),
		reedsolomon.WithAVXGFNI(false),
	}},
}

func rsShards(b *testing.B, k, m, size int) [][]byte {
	b.Helper()
	rng := rand.New(rand.NewSource(int64(k*1000 + m)))
	shards := make([][]byte, k+m)
	for i := range shards {
		shards[i] = make([]byte, size)
		if i < k {
			rng.Read(shards[i])
		}
	}
	return shards
}

func forEachRSCase(b *testing.B, run func(b *testing.B, enc reedsolomon.Encoder, k, m, size int)) {
	for _, o := range rsOptions {
		for _, l := range rsLayouts {
			for _, s := range rsShapes {
				size := l.shard(s.k)
				name := fmt.Sprintf("%s/%s/%d+%d", o.name, l.name, s.k, s.m)
				b.Run(name, func(b *testing.B) {
					enc, err := reedsolomon.New(s.k, s.m, o.opts...)
					if err != nil {
						b.Fatal(err)
					}
					run(b, enc, s.k, s.m, size)
				})
			}
		}
	}
}

// BenchmarkReedSolomonEncode computes all parity shards.
func BenchmarkReedSolomonEncode(b *testing.B) {
	forEachRSCase(b, func(b *testing.B, enc reedsolomon.Encoder, k, m, size int) {
		shards := rsShards(b, k, m, size)
		b.SetBytes(int64(k * size))
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := enc.Encode(shards); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkReedSolomonReconstruct rebuilds the data after losing
// min(m, k) data shards, the worst case for reads.
func BenchmarkReedSolomonReconstruct(b *testing.B) {
	forEachRSCase(b, func(b *testing.B, enc reedsolomon.Encoder, k, m, size int) {
		shards := rsShards(b, k, m, size)
		if err := enc.Encode(shards); err != nil {
			b.Fatal(err)
		}
		lost := min(m, k)
		want := make([][]byte, lost)
		for i := range want {
			want[i] = append([]byte(nil), shards[i]...)
		}
		drop := func() {
			for i := 0; i < lost; i++ {
				// Length 0 marks the shard missing; the capacity is reused.
				shards[i] = shards[i][:0]
			}
		}
		drop()
		if err := enc.ReconstructData(shards); err != nil {
			b.Fatal(err)
		}
		for i := range want {
			if !bytes.Equal(shards[i], want[i]) {
				b.Fatalf("shard %d reconstructed wrongly", i)
			}
		}
		b.SetBytes(int64(k * size))
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			drop()
			if err := enc.ReconstructData(shards); err != nil {
				b.Fatal(err)
			}
		}
	})
}
