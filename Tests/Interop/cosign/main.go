// Command cosign-interop checks a cosigned checkpoint with Go's own
// golang.org/x/mod/sumdb/note (code the project did not write) and a cosignature/v1
// verifier written here against Go's standard crypto/ed25519, from the C2SP
// tlog-cosignature text:
//   - note.Open with only the log's verifier opens the cosigned checkpoint (stock
//     clients skip the witnesses' lines: unknown signatures must not break them);
//   - note.Open with the log's verifier and a cosignature/v1 note.Verifier per witness
//     verifies each witness line, and at least -min of them are valid.
//
// Usage: cosign-interop -note FILE -vkey LOG_VKEY -witness VKEY [-witness VKEY ...] -min N
package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

type witnesses []string

func (w *witnesses) String() string     { return strings.Join(*w, ",") }
func (w *witnesses) Set(v string) error { *w = append(*w, v); return nil }

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "FAIL: "+format+"\n", args...)
	os.Exit(1)
}

// cosigV1 is a note.Verifier for C2SP cosignature/v1: key id
// SHA-256(name || "\n" || 0x04 || key)[:4]; the signature is an 8-byte big-endian
// time followed by the Ed25519 signature of "cosignature/v1\ntime <T>\n" || text.
type cosigV1 struct {
	name string
	hash uint32
	key  ed25519.PublicKey
	seen *int
}

func (v cosigV1) Name() string    { return v.name }
func (v cosigV1) KeyHash() uint32 { return v.hash }
func (v cosigV1) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	t := binary.BigEndian.Uint64(sig[:8])
	m := append([]byte(fmt.Sprintf("cosignature/v1\ntime %d\n", t)), msg...)
	if !ed25519.Verify(v.key, m, sig[8:]) {
		return false
	}
	*v.seen++
	return true
}

func newCosigV1(vkey string) (cosigV1, error) {
	parts := strings.SplitN(vkey, "+", 3)
	if len(parts) != 3 {
		return cosigV1{}, errors.New("not <name>+<id>+<key>")
	}
	raw, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(raw) != 33 || raw[0] != 0x04 {
		return cosigV1{}, errors.New("not a 0x04 Ed25519 key")
	}
	sum := sha256.Sum256(append([]byte(parts[0]+"\n"), raw...))
	if hex.EncodeToString(sum[:4]) != parts[1] {
		return cosigV1{}, errors.New("the key id does not match")
	}
	return cosigV1{name: parts[0], hash: binary.BigEndian.Uint32(sum[:4]), key: ed25519.PublicKey(raw[1:]), seen: new(int)}, nil
}

func main() {
	file := flag.String("note", "", "the cosigned checkpoint")
	vkey := flag.String("vkey", "", "the log's verifier key")
	min := flag.Int("min", 1, "how many witnesses must have cosigned")
	var ws witnesses
	flag.Var(&ws, "witness", "a witness's cosignature/v1 verifier key (repeatable)")
	flag.Parse()
	msg, err := os.ReadFile(*file)
	if err != nil {
		fail("%v", err)
	}
	logV, err := note.NewVerifier(*vkey)
	if err != nil {
		fail("log key: %v", err)
	}
	n, err := note.Open(msg, note.VerifierList(logV))
	if err != nil {
		fail("note.Open with the log's key alone: %v", err)
	}
	if len(n.Sigs) != 1 || len(n.UnverifiedSigs) < *min {
		fail("expected the log's signature verified and the cosignatures unverified, got %d and %d", len(n.Sigs), len(n.UnverifiedSigs))
	}
	fmt.Printf("ok: Go's note.Open opens the cosigned checkpoint with the log's key alone (%d other signature lines skipped)\n", len(n.UnverifiedSigs))
	verifiers := []note.Verifier{logV}
	var cs []cosigV1
	for _, w := range ws {
		c, err := newCosigV1(w)
		if err != nil {
			fail("witness key %s: %v", w, err)
		}
		cs = append(cs, c)
		verifiers = append(verifiers, c)
	}
	n, err = note.Open(msg, note.VerifierList(verifiers...))
	if err != nil {
		fail("note.Open with the witnesses' cosignature/v1 verifiers: %v", err)
	}
	valid := 0
	for _, c := range cs {
		if *c.seen > 0 {
			valid++
			fmt.Printf("ok: %s's cosignature/v1 verifies with crypto/ed25519\n", c.name)
		}
	}
	if valid < *min {
		fail("%d witnesses cosigned, %d required", valid, *min)
	}
	// A flipped bit in a witness's signature: note.Open refuses the note (a known key failing).
	if valid > 0 {
		target := ""
		for _, c := range cs {
			if *c.seen > 0 {
				target = c.name
				break
			}
		}
		lines := bytes.Split(msg, []byte("\n"))
		for i, l := range lines {
			if bytes.HasPrefix(l, []byte("— "+target+" ")) {
				f := bytes.Fields(l)
				raw, _ := base64.StdEncoding.DecodeString(string(f[2]))
				raw[len(raw)-1] ^= 1
				lines[i] = []byte("— " + target + " " + base64.StdEncoding.EncodeToString(raw))
			}
		}
		if _, err := note.Open(bytes.Join(lines, []byte("\n")), note.VerifierList(verifiers...)); err == nil {
			fail("a tampered cosignature was accepted")
		}
		fmt.Println("ok: a tampered cosignature makes note.Open refuse the note")
	}
	fmt.Printf("ok: %d of %d witnesses cosigned (at least %d required)\n", valid, len(cs), *min)
}
