// Command tlog-interop checks a running `authledger serve` with Go's own transparency-log
// packages (golang.org/x/mod/sumdb/note and sumdb/tlog), code the project did not write:
// the signed checkpoint opens with note.Open under the verifier key the CLI prints, the
// served inclusion and consistency proofs pass tlog.CheckRecord and tlog.CheckTree, and
// proofs computed by tlog itself from the served tiles (tlog.TileHashReader) agree.
//
// Usage: tlog-interop -url http://127.0.0.1:PORT -token TOKEN -vkey VKEY -origin ORIGIN [-users-vkey UVKEY] -append 'shell command'
// The append command runs between the first and the second checkpoint.
package main

import (
	"bytes"
	"encoding/binary"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

var (
	base      = flag.String("url", "", "base URL of authledger serve")
	token     = flag.String("token", "", "bearer token with the audit scope")
	vkey      = flag.String("vkey", "", "verifier key (authledger checkpoint --vkey)")
	origin    = flag.String("origin", "", "expected origin")
	appendCmd = flag.String("append", "", "shell command that appends events")
	usersVkey = flag.String("users-vkey", "", "the index log's verifier key (authledger checkpoint --vkey --users)")
	checks    = 0
)

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "FAIL: "+format+"\n", args...)
	os.Exit(1)
}

func ok(format string, args ...interface{}) {
	checks++
	fmt.Printf("ok: "+format+"\n", args...)
}

func get(path string) ([]byte, http.Header) {
	req, err := http.NewRequest("GET", *base+path, nil)
	if err != nil {
		fail("%v", err)
	}
	req.Header.Set("Authorization", "Bearer "+*token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fail("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		fail("GET %s: %v", path, err)
	}
	if resp.StatusCode != 200 {
		fail("GET %s: status %d: %s", path, resp.StatusCode, body)
	}
	return body, resp.Header
}

// openCheckpoint verifies a signed checkpoint with note.Open and parses its body
// (C2SP tlog-checkpoint: origin, size, base64 root).
func openCheckpoint(msg []byte) tlog.Tree { return openNote(msg, *vkey, *origin) }

// openNote is openCheckpoint under the verifier key vk, for origin org (the index log's).
func openNote(msg []byte, vk, org string) tlog.Tree {
	verifier, err := note.NewVerifier(vk)
	if err != nil {
		fail("note.NewVerifier(%q): %v", vk, err)
	}
	n, err := note.Open(msg, note.VerifierList(verifier))
	if err != nil {
		fail("note.Open: %v\n%s", err, msg)
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) < 4 || lines[0] != org {
		fail("checkpoint body %q: want origin %q, size and root", n.Text, org)
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || strconv.FormatInt(size, 10) != lines[1] {
		fail("checkpoint size %q", lines[1])
	}
	root, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(root) != tlog.HashSize {
		fail("checkpoint root %q", lines[2])
	}
	var h tlog.Hash
	copy(h[:], root)
	return tlog.Tree{N: size, Hash: h}
}

// tileReader fetches C2SP tlog-tiles paths: Go's tlog names a tile tile/H/L/N[.p/W]
// (data tiles tile/H/data/N); C2SP drops the height and calls data tiles entries.
// prefix is "" for the log's tiles, "/users" for the index log's.
type tileReader struct {
	fetched int
	prefix  string
}

func c2spPath(t tlog.Tile) string {
	p := strings.TrimPrefix(t.Path(), fmt.Sprintf("tile/%d/", t.H))
	return "/tile/" + strings.Replace(p, "data/", "entries/", 1)
}

func (r *tileReader) Height() int { return 8 }

func (r *tileReader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		data, header := get(r.prefix + c2spPath(t))
		cache := header.Get("Cache-Control")
		if t.W == 256 && !strings.Contains(cache, "immutable") {
			fail("full tile %s: Cache-Control %q is not immutable", c2spPath(t), cache)
		}
		if t.W < 256 && strings.Contains(cache, "immutable") {
			fail("partial tile %s: Cache-Control %q is immutable", c2spPath(t), cache)
		}
		out[i] = data
		r.fetched++
	}
	return out, nil
}

func (r *tileReader) SaveTiles(tiles []tlog.Tile, data [][]byte) {}

// entries reads the entry bundle holding leaf i of a tree of size n: big-endian
// uint16 lengths and the bytes of each entry.
func entry(i, n int64) []byte { return entryIn("", i, n) }

// entryIn is entry in the log whose tiles are under prefix.
func entryIn(prefix string, i, n int64) []byte {
	t := tlog.Tile{H: 8, L: -1, N: i / 256, W: 256}
	if rest := n - t.N*256; rest < 256 {
		t.W = int(rest)
	}
	data, _ := get(prefix + c2spPath(t))
	k := i % 256
	for j := int64(0); ; j++ {
		if len(data) < 2 {
			fail("entry bundle %s ends before entry %d", c2spPath(t), k)
		}
		l := int(data[0])<<8 | int(data[1])
		if len(data) < 2+l {
			fail("entry bundle %s: entry %d is cut", c2spPath(t), j)
		}
		if j == k {
			if j == int64(t.W)-1 && len(data) != 2+l {
				fail("entry bundle %s has bytes after its last entry", c2spPath(t))
			}
			return data[2 : 2+l]
		}
		data = data[2+l:]
	}
}

type proofJSON struct {
	TreeSize   int64    `json:"treeSize"`
	LeafIndex  int64    `json:"leafIndex"`
	OldSize    int64    `json:"oldSize"`
	Proof      []string `json:"proof"`
	Root       string   `json:"root"`
	Checkpoint string   `json:"checkpoint"`
}

func hashes(ss []string) []tlog.Hash {
	out := make([]tlog.Hash, len(ss))
	for i, s := range ss {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(b) != tlog.HashSize {
			fail("proof hash %q", s)
		}
		copy(out[i][:], b)
	}
	return out
}

func fetchJSON(path string) proofJSON {
	body, _ := get(path)
	var p proofJSON
	if err := json.Unmarshal(body, &p); err != nil {
		fail("GET %s: %v", path, err)
	}
	return p
}

func checkInclusion(tree tlog.Tree, thr tlog.HashReader, seqs []int64) {
	for _, seq := range seqs {
		i := seq - 1
		leaf := tlog.RecordHash(entry(i, tree.N))
		// The served proof, against the signed checkpoint.
		p := fetchJSON(fmt.Sprintf("/v1/proofs/inclusion?seq=%d&size=%d", seq, tree.N))
		if p.TreeSize != tree.N || p.LeafIndex != i {
			fail("inclusion proof of seq %d: treeSize %d leafIndex %d", seq, p.TreeSize, p.LeafIndex)
		}
		if cp := openCheckpoint([]byte(p.Checkpoint)); cp != tree {
			fail("inclusion proof of seq %d comes with checkpoint %v, want %v", seq, cp, tree)
		}
		if err := tlog.CheckRecord(hashes(p.Proof), tree.N, tree.Hash, i, leaf); err != nil {
			fail("tlog.CheckRecord(served proof of seq %d in %d): %v", seq, tree.N, err)
		}
		// A proof of another leaf must not pass (the check is real).
		if len(p.Proof) > 0 {
			bad := hashes(p.Proof)
			bad[0][0] ^= 1
			if tlog.CheckRecord(bad, tree.N, tree.Hash, i, leaf) == nil {
				fail("a corrupted proof passed tlog.CheckRecord")
			}
		}
		// tlog's own proof from the served tiles, and the leaf hash in the level-0 tile.
		own, err := tlog.ProveRecord(tree.N, i, thr)
		if err != nil {
			fail("tlog.ProveRecord(%d, %d) over served tiles: %v", tree.N, i, err)
		}
		if err := tlog.CheckRecord(own, tree.N, tree.Hash, i, leaf); err != nil {
			fail("tlog.CheckRecord(tile proof of seq %d): %v", seq, err)
		}
		stored, err := thr.ReadHashes([]int64{tlog.StoredHashIndex(0, i)})
		if err != nil || stored[0] != leaf {
			fail("leaf %d in the hash tiles is not RecordHash of its entry (%v)", i, err)
		}
		ok("seq %d in tree %d: served proof and tile proof pass tlog.CheckRecord", seq, tree.N)
	}
}

func main() {
	flag.Parse()
	if *base == "" || *vkey == "" || *origin == "" {
		fail("-url, -vkey and -origin are required")
	}

	// First checkpoint.
	msg, header := get("/checkpoint")
	tree1 := openCheckpoint(msg)
	if !strings.HasPrefix(header.Get("Content-Type"), "text/plain") {
		fail("/checkpoint Content-Type %q", header.Get("Content-Type"))
	}
	ok("checkpoint opens with note.Open: origin %s, size %d", *origin, tree1.N)
	// A note with an extra signature line (a witness cosignature) still opens.
	extra := string(msg) + "\u2014 witness.example/w1 " + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 68)) + "\n"
	if n, err := note.Open([]byte(extra), note.VerifierList(mustVerifier())); err != nil || len(n.UnverifiedSigs) != 1 {
		fail("checkpoint with an extra cosignature line: %v", err)
	}
	ok("checkpoint with an extra cosignature line opens")
	if _, err := note.Open(msg, note.VerifierList(otherVerifier())); err == nil {
		fail("checkpoint opened under another key")
	}

	tiles1 := &tileReader{}
	thr1 := tlog.TileHashReader(tree1, tiles1)
	th, err := tlog.TreeHash(tree1.N, thr1)
	if err != nil || th != tree1.Hash {
		fail("tlog.TreeHash over served tiles: %v (%v vs %v)", err, th, tree1.Hash)
	}
	ok("tlog.TreeHash over the served tiles is the checkpoint's root (%d tiles fetched)", tiles1.fetched)
	checkInclusion(tree1, thr1, []int64{1, 2, 3, 255, 256, 257, 300, tree1.N - 1, tree1.N})

	// Append, then the second checkpoint must extend the first.
	if *appendCmd != "" {
		cmd := exec.Command("sh", "-c", *appendCmd)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fail("append command: %v", err)
		}
	}
	msg2, _ := get("/checkpoint")
	tree2 := openCheckpoint(msg2)
	if tree2.N <= tree1.N {
		fail("the log did not grow: %d then %d", tree1.N, tree2.N)
	}
	ok("second checkpoint opens: size %d", tree2.N)
	for _, old := range []int64{1, 2, 7, 256, tree1.N} {
		for _, t := range []tlog.Tree{tree1, tree2} {
			if old > t.N {
				continue
			}
			oldTree := tree1
			if old != tree1.N {
				h, err := tlog.TreeHash(old, tlog.TileHashReader(t, &tileReader{}))
				if err != nil {
					fail("tlog.TreeHash(%d): %v", old, err)
				}
				oldTree = tlog.Tree{N: old, Hash: h}
			}
			p := fetchJSON(fmt.Sprintf("/v1/proofs/consistency?from=%d&to=%d", old, t.N))
			if p.TreeSize != t.N || p.OldSize != old {
				fail("consistency proof %d→%d: treeSize %d oldSize %d", old, t.N, p.TreeSize, p.OldSize)
			}
			if cp := openCheckpoint([]byte(p.Checkpoint)); cp != t {
				fail("consistency proof comes with checkpoint %v, want %v", cp, t)
			}
			if err := tlog.CheckTree(hashes(p.Proof), t.N, t.Hash, old, oldTree.Hash); err != nil {
				fail("tlog.CheckTree(served proof %d→%d): %v", old, t.N, err)
			}
			own, err := tlog.ProveTree(t.N, old, tlog.TileHashReader(t, &tileReader{}))
			if err != nil {
				fail("tlog.ProveTree(%d, %d) over served tiles: %v", t.N, old, err)
			}
			if err := tlog.CheckTree(own, t.N, t.Hash, old, oldTree.Hash); err != nil {
				fail("tlog.CheckTree(tile proof %d→%d): %v", old, t.N, err)
			}
			ok("tree %d extends tree %d: served proof and tile proof pass tlog.CheckTree", t.N, old)
		}
	}
	// The first checkpoint's root is consistent with the second (the auditor's check).
	if err := tlog.CheckTree(hashes(fetchJSON(fmt.Sprintf("/v1/proofs/consistency?from=%d&to=%d", tree1.N, tree2.N)).Proof), tree2.N, tree2.Hash, tree1.N, tree1.Hash); err != nil {
		fail("first checkpoint not consistent with second: %v", err)
	}
	thr2 := tlog.TileHashReader(tree2, &tileReader{})
	checkInclusion(tree2, thr2, []int64{1, tree1.N, tree1.N + 1, tree2.N})
	checkUsers(tree2)
	fmt.Printf("%d passed, 0 failed\n", checks)
}

func mustVerifier() note.Verifier {
	v, err := note.NewVerifier(*vkey)
	if err != nil {
		fail("%v", err)
	}
	return v
}

// otherVerifier is a verifier of the same name with another key.
func otherVerifier() note.Verifier {
	skey, vk, err := note.GenerateKey(nil, *origin)
	_ = skey
	if err != nil {
		fail("%v", err)
	}
	v, err := note.NewVerifier(vk)
	if err != nil {
		fail("%v", err)
	}
	return v
}

// checkUsers checks the index log of user proofs (origin <origin>/users): its checkpoint
// opens with note.Open under its own verifier key, tlog hashes its served tiles to the
// checkpoint's root, every 72-byte entry u64be(S) || R_S || I_S has increasing sizes and
// an R_S that is tlog.TreeHash(S) over the log's own tiles, and tlog's proofs over its
// tiles pass tlog.CheckRecord and tlog.CheckTree. Signing each /checkpoint appended an
// entry first, so there are at least two.
func checkUsers(logTree tlog.Tree) {
	if *usersVkey == "" {
		return
	}
	msg, _ := get("/users/checkpoint")
	users := openNote(msg, *usersVkey, *origin+"/users")
	if users.N < 2 {
		fail("the index log has %d entries, want at least 2 (one before each signed checkpoint)", users.N)
	}
	ok("the index log's checkpoint opens with note.Open: origin %s/users, %d entries", *origin, users.N)
	thr := tlog.TileHashReader(users, &tileReader{prefix: "/users"})
	if th, err := tlog.TreeHash(users.N, thr); err != nil || th != users.Hash {
		fail("tlog.TreeHash over the index log's tiles: %v (%v vs %v)", err, th, users.Hash)
	}
	logHashes := tlog.TileHashReader(logTree, &tileReader{})
	var last int64
	for i := int64(0); i < users.N; i++ {
		e := entryIn("/users", i, users.N)
		if len(e) != 72 {
			fail("index log entry %d has %d bytes, not 72", i, len(e))
		}
		s := int64(binary.BigEndian.Uint64(e[:8]))
		if s <= last || s > logTree.N {
			fail("index log entry %d: size %d after %d (log of %d)", i, s, last, logTree.N)
		}
		last = s
		if r, err := tlog.TreeHash(s, logHashes); err != nil || !bytes.Equal(r[:], e[8:40]) {
			fail("index log entry %d: R_S is not tlog.TreeHash(%d) over the log's tiles (%v)", i, s, err)
		}
		own, err := tlog.ProveRecord(users.N, i, thr)
		if err != nil {
			fail("tlog.ProveRecord(%d, %d) over the index log's tiles: %v", users.N, i, err)
		}
		if err := tlog.CheckRecord(own, users.N, users.Hash, i, tlog.RecordHash(e)); err != nil {
			fail("tlog.CheckRecord(index log entry %d): %v", i, err)
		}
	}
	ok("%d index log entries: sizes increasing, each R_S is tlog.TreeHash over the log's tiles, each passes tlog.CheckRecord", users.N)
	first, err := tlog.TreeHash(1, thr)
	if err != nil {
		fail("tlog.TreeHash(1) over the index log's tiles: %v", err)
	}
	own, err := tlog.ProveTree(users.N, 1, thr)
	if err != nil || tlog.CheckTree(own, users.N, users.Hash, 1, first) != nil {
		fail("the index log of %d entries does not extend its first (%v)", users.N, err)
	}
	ok("the index log of %d entries extends its first entry's: tlog.CheckTree", users.N)
}
