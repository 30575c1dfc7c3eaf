// Command gen writes dare.json: DARE 2.0 ciphertexts produced by
// github.com/minio/sio (the library MinIO encrypts objects with), for fixed
// keys and nonces, so that Tessera's own implementation can be checked
// against it byte for byte.
//
//	cd crates/sse/testdata/gen && go run . > ../dare.json
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"

	"github.com/minio/sio"
)

type vector struct {
	Cipher      string `json:"cipher"`
	Key         string `json:"key"`
	Nonce       string `json:"nonce"`
	PlainLen    int    `json:"plain_len"`
	PlainSeed   uint64 `json:"plain_seed"`
	CipherLen   int    `json:"cipher_len"`
	CipherHex   string `json:"cipher_hex,omitempty"`
	CipherSHA   string `json:"cipher_sha256"`
	FirstPkgHex string `json:"first_package_hex"`
}

// plaintext is a xorshift64 stream: byte i is the low byte of the state
// after i+1 steps.
func plaintext(n int, seed uint64) []byte {
	x := seed | 1
	out := make([]byte, n)
	for i := range out {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		out[i] = byte(x)
	}
	return out
}

func main() {
	var vs []vector
	suites := []struct {
		name string
		id   byte
	}{{"AES-256-GCM", sio.AES_256_GCM}, {"CHACHA20-POLY1305", sio.CHACHA20_POLY1305}}
	lens := []int{1, 2, 100, 65535, 65536, 65537, 131072, 131073, 200000}
	for si, s := range suites {
		for li, n := range lens {
			var key [32]byte
			var nonce [12]byte
			for i := range key {
				key[i] = byte(i*7 + si*31 + li)
			}
			for i := range nonce {
				nonce[i] = byte(0xA0 + i + li)
			}
			seed := uint64(1000*si + li + 1)
			plain := plaintext(n, seed)
			var buf bytes.Buffer
			cfg := sio.Config{
				MinVersion:   sio.Version20,
				MaxVersion:   sio.Version20,
				CipherSuites: []byte{s.id},
				Key:          key[:],
				Nonce:        &nonce,
			}
			if _, err := sio.Encrypt(&buf, bytes.NewReader(plain), cfg); err != nil {
				panic(err)
			}
			ct := buf.Bytes()
			sum := sha256.Sum256(ct)
			first := ct
			if len(first) > 65536+32 {
				first = first[:65536+32]
			}
			v := vector{
				Cipher:      s.name,
				Key:         hex.EncodeToString(key[:]),
				Nonce:       hex.EncodeToString(nonce[:]),
				PlainLen:    n,
				PlainSeed:   seed,
				CipherLen:   len(ct),
				CipherSHA:   hex.EncodeToString(sum[:]),
				FirstPkgHex: hex.EncodeToString(first[:min(len(first), 256)]),
			}
			if len(ct) <= 300 {
				v.CipherHex = hex.EncodeToString(ct)
			}
			vs = append(vs, v)
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(vs); err != nil {
		panic(err)
	}
}
