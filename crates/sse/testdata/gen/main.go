// Command gen writes dare.json: DARE 2.0 ciphertexts produced by
// github.com/minio/sio (the library MinIO encrypts objects with), for fixed
// keys and nonces, so that Tessera's own implementation can be checked
// against it byte for byte. With the argument "keys" it writes keys.json:
// object keys, sealed keys, part keys and sealed ETags derived as MinIO's
// internal/crypto package documents them (SHA-256 and HMAC-SHA-256 from
// Go's standard library, sealing with sio), for fixed inputs.
//
//	cd crates/sse/testdata/gen && go run . > ../dare.json
//	cd crates/sse/testdata/gen && go run . keys > ../keys.json
//
// With "kms" it writes kms.json: data keys sealed as MinIO's builtin KMS
// (MINIO_KMS_SECRET_KEY) seals them (binary AES-256-GCM form, and the
// legacy JSON envelope with AES-256-GCM and with ChaCha20-Poly1305 under
// an HChaCha20 key), the context encoded with encoding/json.
//
//	cd crates/sse/testdata/gen && go run . kms > ../kms.json
package main

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"path"

	"github.com/minio/sio"
	"golang.org/x/crypto/chacha20"
	"golang.org/x/crypto/chacha20poly1305"
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

type keyVector struct {
	External  string `json:"external"`
	Random    string `json:"random"`
	IV        string `json:"iv"`
	Nonce     string `json:"nonce"`
	Cipher    string `json:"cipher"`
	Domain    string `json:"domain"`
	Bucket    string `json:"bucket"`
	Object    string `json:"object"`
	ObjectKey string `json:"object_key"`
	SealedKey string `json:"sealed_key"`
	PartKey7  string `json:"part_key_7"`
	ETag      string `json:"etag"`
	SealedTag string `json:"sealed_etag"`
}

func sealWith(key []byte, nonce [12]byte, suite byte, plain []byte) []byte {
	var buf bytes.Buffer
	cfg := sio.Config{MinVersion: sio.Version20, MaxVersion: sio.Version20, CipherSuites: []byte{suite}, Key: key, Nonce: &nonce}
	if _, err := sio.Encrypt(&buf, bytes.NewReader(plain), cfg); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func keys() {
	var out []keyVector
	cases := []struct{ domain, bucket, object string }{
		{"SSE-C", "bucket", "object"},
		{"SSE-S3", "photos", "2026/holiday.raw"},
		{"SSE-KMS", "b", "a//b/./c/"},
	}
	for i, c := range cases {
		var ext, random, iv [32]byte
		var nonce [12]byte
		for j := range ext {
			ext[j] = byte(j + i)
			random[j] = byte(255 - j - i)
			iv[j] = byte(j*3 + i)
		}
		for j := range nonce {
			nonce[j] = byte(0x11 * (j + 1 + i))
		}
		suite := byte(i % 2)
		h := sha256.New()
		h.Write(ext[:])
		h.Write(random[:])
		objectKey := h.Sum(nil)
		mac := hmac.New(sha256.New, ext[:])
		mac.Write(iv[:])
		mac.Write([]byte(c.domain))
		mac.Write([]byte("DAREv2-HMAC-SHA256"))
		mac.Write([]byte(path.Join(c.bucket, c.object)))
		sealed := sealWith(mac.Sum(nil), nonce, suite, objectKey)
		var bin [4]byte
		binary.LittleEndian.PutUint32(bin[:], 7)
		pm := hmac.New(sha256.New, objectKey)
		pm.Write(bin[:])
		em := hmac.New(sha256.New, objectKey)
		em.Write([]byte("SSE-etag"))
		etag := []byte("d41d8cd98f00b204e9800998ecf8427e")
		name := "AES-256-GCM"
		if suite == 1 {
			name = "CHACHA20-POLY1305"
		}
		out = append(out, keyVector{
			External: hex.EncodeToString(ext[:]), Random: hex.EncodeToString(random[:]),
			IV: hex.EncodeToString(iv[:]), Nonce: hex.EncodeToString(nonce[:]), Cipher: name,
			Domain: c.domain, Bucket: c.bucket, Object: c.object,
			ObjectKey: hex.EncodeToString(objectKey), SealedKey: hex.EncodeToString(sealed),
			PartKey7: hex.EncodeToString(pm.Sum(nil)), ETag: string(etag),
			SealedTag: hex.EncodeToString(sealWith(em.Sum(nil), nonce, suite, etag)),
		})
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		panic(err)
	}
}

type kmsVector struct {
	Config     string            `json:"config"`
	Context    map[string]string `json:"context"`
	Plaintext  string            `json:"plaintext"`
	Ciphertext string            `json:"ciphertext"`
	Form       string            `json:"form"`
}

func kmsVectors() {
	master := make([]byte, 32)
	for i := range master {
		master[i] = byte(i*5 + 1)
	}
	config := "tessera-key:" + base64.StdEncoding.EncodeToString(master)
	contexts := []map[string]string{
		{"bucket": "bucket/object"},
		{"photos": "photos/2026/a<b>&c.raw", "x": "y"},
		{},
	}
	var out []kmsVector
	for i, ctx := range contexts {
		aad, err := json.Marshal(ctx)
		if err != nil {
			panic(err)
		}
		plain := make([]byte, 32)
		iv := make([]byte, 16)
		nonce := make([]byte, 12)
		for j := range plain {
			plain[j] = byte(200 - j - i)
		}
		for j := range iv {
			iv[j] = byte(j + 16*i)
		}
		for j := range nonce {
			nonce[j] = byte(0xC0 + j + i)
		}
		mac := hmac.New(sha256.New, master)
		mac.Write(iv)
		block, _ := aes.NewCipher(mac.Sum(nil))
		gcm, _ := cipher.NewGCM(block)
		sealed := gcm.Seal(nil, nonce, plain, aad)
		bin := append(append(append([]byte{}, sealed...), iv...), nonce...)
		out = append(out, kmsVector{config, ctx, hex.EncodeToString(plain), hex.EncodeToString(bin), "binary"})
		js, _ := json.Marshal(map[string]any{"aead": "AES-256-GCM-HMAC-SHA-256", "id": "", "iv": iv, "nonce": nonce, "bytes": sealed})
		out = append(out, kmsVector{config, ctx, hex.EncodeToString(plain), hex.EncodeToString(js), "json-aes"})
		key, err := chacha20.HChaCha20(master, iv)
		if err != nil {
			panic(err)
		}
		cc, _ := chacha20poly1305.New(key)
		csealed := cc.Seal(nil, nonce, plain, aad)
		js2, _ := json.Marshal(map[string]any{"aead": "ChaCha20Poly1305", "iv": iv, "nonce": nonce, "bytes": csealed})
		out = append(out, kmsVector{config, ctx, hex.EncodeToString(plain), hex.EncodeToString(js2), "json-chacha"})
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		panic(err)
	}
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "kms" {
		kmsVectors()
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "keys" {
		keys()
		return
	}
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
