// Command madmin-gen writes madmin.json, the oracle for Tessera's
// sse::madmin: payloads of the encryption MinIO's admin API uses
// (madmin-go's EncryptData and DecryptData), so that the Rust
// implementation can be checked against madmin-go byte for byte.
//
//	cd crates/sse/testdata/madmin-gen && go run . > ../madmin.json
//
// The file has three parts:
//
//   - "vectors": payloads for fixed salts and nonces, built from the pieces
//     madmin-go's EncryptData is made of (argon2.IDKey or pbkdf2.Key, then a
//     secure-io/sio-go stream), each one checked to decrypt with
//     madmin.DecryptData. Large ciphertexts are given by their SHA-256 only.
//   - "madmin": payloads of madmin.EncryptData itself, with its own
//     randomness. The program runs itself three times for them ("go run .
//     real"): as it is (id 0, AES-256-GCM, on a CPU with AES instructions),
//     with GODEBUG=cpu.aes=off (id 1, ChaCha20-Poly1305) and with the build
//     tag "fips" (id 2, PBKDF2).
//   - "cases": variations of some vectors (truncated, extended, flipped,
//     reordered, hand-built fragment sequences, wrong passwords) with
//     madmin.DecryptData's verdict on each, so the Rust side can check that
//     it accepts exactly what madmin accepts. The transforms are described
//     by the strings documented at applyTransform.
package main

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/minio/madmin-go/v3"
	"github.com/secure-io/sio-go"
	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/pbkdf2"
)

// The parameters madmin-go's encrypt.go uses (unexported there).
const (
	argon2idTime    = 1
	argon2idMemory  = 64 * 1024
	argon2idThreads = 4
	pbkdf2Cost      = 8192
	headerLen       = 32 + 1 + 8
	sealedFragment  = sio.BufSize + 16
)

// plaintext is a xorshift64 stream: byte i is the low byte of the state
// after i+1 steps (as in ../gen).
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

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func deriveKey(id byte, password, salt []byte) []byte {
	if id == 2 {
		return pbkdf2.Key(password, salt, pbkdf2Cost, 32, sha256.New)
	}
	return argon2.IDKey(password, salt, argon2idTime, argon2idMemory, argon2idThreads, 32)
}

func algorithm(id byte) sio.Algorithm {
	if id == 1 {
		return sio.ChaCha20Poly1305
	}
	return sio.AES_256_GCM
}

// compose builds a payload as EncryptData does, with a given salt and nonce.
func compose(id byte, key, salt, nonce, data []byte) []byte {
	stream, err := algorithm(id).Stream(key)
	if err != nil {
		panic(err)
	}
	var out bytes.Buffer
	out.Write(salt)
	out.WriteByte(id)
	out.Write(nonce)
	w := stream.EncryptWriter(&out, nonce, nil)
	if _, err := w.Write(data); err != nil {
		panic(err)
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
	return out.Bytes()
}

type vector struct {
	ID        byte   `json:"id"`
	Password  string `json:"password"`
	Salt      string `json:"salt"`
	Nonce     string `json:"nonce"`
	Key       string `json:"key"`
	PlainLen  int    `json:"plain_len"`
	PlainSeed uint64 `json:"plain_seed"`
	CipherLen int    `json:"cipher_len"`
	CipherSHA string `json:"cipher_sha256"`
	CipherHex string `json:"cipher_hex,omitempty"`

	raw []byte
}

type realVector struct {
	ID        byte   `json:"id"`
	Password  string `json:"password"`
	PlainLen  int    `json:"plain_len"`
	PlainSeed uint64 `json:"plain_seed"`
	CipherHex string `json:"cipher_hex"`
}

type testCase struct {
	Base      int    `json:"base"`
	Transform string `json:"transform"`
	Password  string `json:"password"`
	CipherSHA string `json:"cipher_sha256"`
	MadminOK  bool   `json:"madmin_ok"`
	PlainSHA  string `json:"plain_sha256,omitempty"`
}

type output struct {
	Vectors []vector     `json:"vectors"`
	Madmin  []realVector `json:"madmin"`
	Cases   []testCase   `json:"cases"`
}

// A typical secret key, the empty password, and bytes that are not UTF-8.
var passwords = [][]byte{
	[]byte("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
	{},
	{'p', 0xc3, 0xa4, 's', 0x00, 'w', 0xff},
}

func mustDecrypt(password, payload, plain []byte) {
	got, err := madmin.DecryptData(string(password), bytes.NewReader(payload))
	if err != nil || !bytes.Equal(got, plain) {
		panic(fmt.Sprintf("madmin.DecryptData disagrees: %v", err))
	}
}

func vectors() []vector {
	var out []vector
	groups := []struct {
		password int
		lens     []int
	}{
		{0, []int{0, 1, 15, 16, 17, 100, 1000, 16383, 16384, 16385, 32768, 32769, 50000}},
		{1, []int{0, 3}},
		{2, []int{1, 16400}},
	}
	for _, id := range []byte{0, 1, 2} {
		for g, grp := range groups {
			salt := make([]byte, 32)
			nonce := make([]byte, 8)
			for i := range salt {
				salt[i] = byte(i*7 + int(id)*31 + g*13)
			}
			for i := range nonce {
				nonce[i] = byte(0xA0 + i + int(id)*16 + g)
			}
			pw := passwords[grp.password]
			key := deriveKey(id, pw, salt)
			for _, n := range grp.lens {
				seed := uint64(n)*1000003 + uint64(id)*7 + uint64(g)
				plain := plaintext(n, seed)
				payload := compose(id, key, salt, nonce, plain)
				mustDecrypt(pw, payload, plain)
				v := vector{
					ID: id, Password: hex.EncodeToString(pw), Salt: hex.EncodeToString(salt),
					Nonce: hex.EncodeToString(nonce), Key: hex.EncodeToString(key),
					PlainLen: n, PlainSeed: seed, CipherLen: len(payload), CipherSHA: sum(payload),
					raw: payload,
				}
				if len(payload) <= 2048 {
					v.CipherHex = hex.EncodeToString(payload)
				}
				out = append(out, v)
			}
		}
	}
	return out
}

func newAEAD(id byte, key []byte) cipher.AEAD {
	if id == 1 {
		c, err := chacha20poly1305.New(key)
		if err != nil {
			panic(err)
		}
		return c
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		panic(err)
	}
	c, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return c
}

// handBuilt seals fragments one by one with the AEAD directly: spec is a
// comma-separated list of "<plaintext length><n|f>" (n: non-final, f:
// final), sequence numbers counting from first. The plaintext is the
// base's seed stream, as long as all fragments together.
func handBuilt(v vector, first uint32, spec string) []byte {
	key, _ := hex.DecodeString(v.Key)
	nonce8, _ := hex.DecodeString(v.Nonce)
	aead := newAEAD(v.ID, key)
	nonce := make([]byte, 12)
	copy(nonce, nonce8)
	ad := make([]byte, 1, 17)
	ad = aead.Seal(ad, nonce, nil, nil)
	var lens []int
	var finals []bool
	total := 0
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(f[:len(f)-1])
		if err != nil {
			panic(err)
		}
		lens = append(lens, n)
		finals = append(finals, f[len(f)-1] == 'f')
		total += n
	}
	plain := plaintext(total, v.PlainSeed)
	out := append([]byte{}, v.raw[:headerLen]...)
	seq := first
	for i, n := range lens {
		binary.LittleEndian.PutUint32(nonce[8:], seq)
		if finals[i] {
			ad[0] = 0x80
		} else {
			ad[0] = 0
		}
		out = aead.Seal(out, nonce, plain[:n], ad)
		plain = plain[n:]
		seq++
	}
	return out
}

func fragments(payload []byte) [][]byte {
	var out [][]byte
	for s := payload[headerLen:]; len(s) > 0; {
		n := min(len(s), sealedFragment)
		out = append(out, append([]byte{}, s[:n]...))
		s = s[n:]
	}
	return out
}

func join(header []byte, frags [][]byte) []byte {
	out := append([]byte{}, header...)
	for _, f := range frags {
		out = append(out, f...)
	}
	return out
}

// applyTransform changes a copy of the base payload:
//
//	none            unchanged (for a different password)
//	keep:N          the first N bytes
//	append:HEX      the bytes of HEX added at the end
//	flip:N          byte N XORed with 0x01
//	set_id:X        the id byte set to X
//	swap:I,J        fragments I and J exchanged (fragments of 16400 bytes
//	                after the header, the last one what remains)
//	drop:I          fragment I removed
//	dup:I           fragment I repeated right after itself
//	raw:FIRST:SPEC  the header followed by fragments sealed one by one (see
//	                handBuilt)
func applyTransform(v vector, t string) []byte {
	p := append([]byte{}, v.raw...)
	op, arg, _ := strings.Cut(t, ":")
	atoi := func(s string) int {
		n, err := strconv.Atoi(s)
		if err != nil {
			panic(err)
		}
		return n
	}
	switch op {
	case "none":
		return p
	case "keep":
		return p[:atoi(arg)]
	case "append":
		b, err := hex.DecodeString(arg)
		if err != nil {
			panic(err)
		}
		return append(p, b...)
	case "flip":
		p[atoi(arg)] ^= 1
		return p
	case "set_id":
		p[32] = byte(atoi(arg))
		return p
	case "swap", "drop", "dup":
		fr := fragments(p)
		a, b, _ := strings.Cut(arg, ",")
		i := atoi(a)
		switch op {
		case "swap":
			j := atoi(b)
			fr[i], fr[j] = fr[j], fr[i]
		case "drop":
			fr = append(fr[:i], fr[i+1:]...)
		case "dup":
			fr = append(fr[:i+1], fr[i:]...)
		}
		return join(p[:headerLen], fr)
	case "raw":
		first, spec, _ := strings.Cut(arg, ":")
		return handBuilt(v, uint32(atoi(first)), spec)
	}
	panic("unknown transform " + t)
}

func cases(vs []vector) []testCase {
	var out []testCase
	for b, v := range vs {
		if v.PlainLen != 32769 {
			continue
		}
		l := v.CipherLen
		ts := []string{
			"none",
			"keep:0", "keep:40", "keep:41", "keep:56",
			fmt.Sprint("keep:", l-1),
			fmt.Sprint("keep:", headerLen+sealedFragment),
			fmt.Sprint("keep:", headerLen+2*sealedFragment),
			"append:00",
			"append:" + strings.Repeat("00", 16),
			"flip:0", "flip:32", "flip:33", "flip:50",
			fmt.Sprint("flip:", headerLen+sealedFragment-1),
			fmt.Sprint("flip:", l-1),
			fmt.Sprint("set_id:", (v.ID+1)%3),
			fmt.Sprint("set_id:", (v.ID+2)%3),
			"set_id:3", "set_id:255",
			"swap:0,1", "drop:0", "drop:1", "dup:0",
			"raw:1:16384n,16384n,1f",
			"raw:1:16384n,0f",
			"raw:1:16384n,16384n,0f",
			"raw:1:16384f",
			"raw:1:16384n",
			"raw:1:16384f,1f",
			"raw:0:16384n,1f",
			"raw:2:16384n,1f",
			"raw:1:100n",
			"raw:1:0f,0f",
			"raw:1:0f",
		}
		for _, t := range ts {
			out = append(out, runCase(vs, b, t, v.Password))
		}
		// The right payload under other passwords: another secret key, the
		// empty one, one with a byte added.
		for _, pw := range []string{hex.EncodeToString([]byte("wrong")), "", v.Password + "00"} {
			out = append(out, runCase(vs, b, "none", pw))
		}
	}
	return out
}

func runCase(vs []vector, base int, t, password string) testCase {
	payload := applyTransform(vs[base], t)
	pw, _ := hex.DecodeString(password)
	c := testCase{Base: base, Transform: t, Password: password, CipherSHA: sum(payload)}
	plain, err := madmin.DecryptData(string(pw), bytes.NewReader(payload))
	if err == nil {
		c.MadminOK = true
		c.PlainSHA = sum(plain)
	}
	return c
}

// realPayloads prints payloads of madmin.EncryptData (whose id depends on the CPU
// and the build tags), each checked to decrypt with madmin.DecryptData.
func realPayloads() {
	var out []realVector
	for i, n := range []int{0, 1, 300, 16500} {
		pw := passwords[i%2]
		seed := uint64(4242 + n)
		plain := plaintext(n, seed)
		payload, err := madmin.EncryptData(string(pw), plain)
		if err != nil {
			panic(err)
		}
		mustDecrypt(pw, payload, plain)
		out = append(out, realVector{
			ID: payload[32], Password: hex.EncodeToString(pw), PlainLen: n, PlainSeed: seed,
			CipherHex: hex.EncodeToString(payload),
		})
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		panic(err)
	}
}

// realRun runs "go run [-tags fips] . real" with extra environment and
// checks that every payload has the expected id.
func realRun(id byte, env []string, args ...string) []realVector {
	cmd := exec.Command("go", append(append([]string{"run"}, args...), ".", "real")...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		panic(err)
	}
	var vs []realVector
	if err := json.Unmarshal(b, &vs); err != nil {
		panic(err)
	}
	for _, v := range vs {
		if v.ID != id {
			panic(fmt.Sprintf("madmin.EncryptData chose id %d, expected %d", v.ID, id))
		}
	}
	if id != 0 {
		// Keep the file small: the multi-fragment payload once.
		vs = vs[:len(vs)-1]
	}
	return vs
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "real" {
		realPayloads()
		return
	}
	vs := vectors()
	out := output{Vectors: vs, Cases: cases(vs)}
	out.Madmin = append(out.Madmin, realRun(0, nil)...)
	out.Madmin = append(out.Madmin, realRun(1, []string{"GODEBUG=cpu.aes=off"})...)
	out.Madmin = append(out.Madmin, realRun(2, nil, "-tags", "fips")...)
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	if err := enc.Encode(out); err != nil {
		panic(err)
	}
}
