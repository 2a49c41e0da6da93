package archive

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/probectl/probectl/probe/attest"
)

// MaxLineBytes bounds one line of an archive: a run holds at most 8 requests, so a real line is a
// few kilobytes, and a longer one is not a run.
const MaxLineBytes = 8 << 20

// MaxZstdWindow bounds the window a zstd archive may ask its reader to hold (the decoder's memory
// is about that): an archive is input, and a frame declaring a larger one is refused. Export
// writes with this window.
const MaxZstdWindow = 8 << 20

// Report is what a verified archive holds.
type Report struct {
	Runs     int64    `json:"runs"`
	Signed   int64    `json:"signed"`
	Unsigned int64    `json:"unsigned"`
	Manifest Manifest `json:"manifest"`
}

// BadLineError names the first line of an archive that does not verify (1-based).
type BadLineError struct {
	Line  int
	RunID int64
	Err   error
}

func (e *BadLineError) Error() string {
	if e.RunID != 0 {
		return fmt.Sprintf("line %d (run %d): %v", e.Line, e.RunID, e.Err)
	}
	return fmt.Sprintf("line %d: %v", e.Line, e.Err)
}

func (e *BadLineError) Unwrap() error { return e.Err }

var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// namedReader says which compression failed: zstd's errors ("CRC check failed") do not.
type namedReader struct {
	r    io.Reader
	name string
}

func (n namedReader) Read(p []byte) (int, error) {
	k, err := n.r.Read(p)
	switch {
	case err == nil || errors.Is(err, io.EOF):
	case errors.Is(err, zstd.ErrWindowSizeExceeded), errors.Is(err, zstd.ErrDecoderSizeExceeded):
		err = fmt.Errorf("the %s stream asks for a window larger than %d MiB (not an export's): refused: %w",
			n.name, MaxZstdWindow>>20, err)
	default:
		err = fmt.Errorf("the %s stream is corrupt or truncated: %w", n.name, err)
	}
	return k, err
}

// ErrUnsigned: a run without an envelope; nothing proves what it says.
var ErrUnsigned = errors.New("the run is unsigned")

// Verify reads an archive (gzip, zstd or plain, by its first bytes) and checks, offline, every line's
// envelope against keys (key id → public key), that each envelope is the line's own job and
// server, and the manifest: the last line, with the count, first and last times and the SHA-256
// of everything before it. The first line that fails is returned as a *BadLineError. Unsigned
// runs fail unless allowUnsigned.
func Verify(r io.Reader, keys map[string]ed25519.PublicKey, allowUnsigned bool) (Report, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return Report{}, &BadLineError{Line: 1, Err: fmt.Errorf("not a gzip stream: %w", err)}
		}
		br = bufio.NewReaderSize(zr, 1<<20)
	} else if err == nil && bytes.Equal(magic, []byte{0x28, 0xb5}) {
		if m, err := br.Peek(4); err == nil && bytes.Equal(m, zstdMagic) {
			zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1),
				zstd.WithDecoderMaxWindow(MaxZstdWindow), zstd.WithDecoderMaxMemory(MaxZstdWindow))
			if err != nil {
				return Report{}, &BadLineError{Line: 1, Err: fmt.Errorf("not a zstd stream: %w", err)}
			}
			defer zr.Close()
			br = bufio.NewReaderSize(namedReader{r: zr, name: "zstd"}, 1<<20)
		}
	}
	var rep Report
	sum := sha256.New()
	n := 0
	for {
		line, err := readLine(br)
		if errors.Is(err, io.EOF) {
			return rep, &BadLineError{Line: n + 1, Err: errors.New("no manifest line: the archive is truncated")}
		}
		n++
		if err != nil {
			return rep, &BadLineError{Line: n, Err: err}
		}
		var ml manifestLine
		if bytes.HasPrefix(line, []byte(`{"manifest":`)) && json.Unmarshal(line, &ml) == nil && ml.Manifest != nil {
			if err := checkManifest(*ml.Manifest, rep, hex.EncodeToString(sum.Sum(nil))); err != nil {
				return rep, &BadLineError{Line: n, Err: err}
			}
			if _, err := readLine(br); !errors.Is(err, io.EOF) {
				return rep, &BadLineError{Line: n + 1, Err: errors.New("a line after the manifest")}
			}
			rep.Manifest = *ml.Manifest
			return rep, nil
		}
		sum.Write(line)
		l, err := verifyLine(line, keys, allowUnsigned)
		if err != nil {
			return rep, &BadLineError{Line: n, RunID: l.RunID, Err: err}
		}
		rep.Runs++
		if l.Envelope == nil || string(l.Envelope) == "null" {
			rep.Unsigned++
		} else {
			rep.Signed++
		}
		if rep.Manifest.First == nil || l.StartedAt.Before(*rep.Manifest.First) {
			t := l.StartedAt
			rep.Manifest.First = &t
		}
		if rep.Manifest.Last == nil || l.StartedAt.After(*rep.Manifest.Last) {
			t := l.StartedAt
			rep.Manifest.Last = &t
		}
	}
}

// readLine reads one line with its newline, at most MaxLineBytes.
func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > MaxLineBytes {
			return nil, fmt.Errorf("longer than %d bytes: not a run", MaxLineBytes)
		}
		switch {
		case err == nil:
			return buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(buf) > 0:
			return nil, errors.New("no newline at the end: the archive is truncated")
		default:
			return nil, err
		}
	}
}

func verifyLine(line []byte, keys map[string]ed25519.PublicKey, allowUnsigned bool) (Line, error) {
	var l Line
	if err := json.Unmarshal(line, &l); err != nil {
		return l, fmt.Errorf("not a run: %w", err)
	}
	if l.RunID == 0 || l.JobID == 0 || l.Server == "" {
		return l, errors.New("not a run: no run_id, job_id or server")
	}
	if l.Envelope == nil || string(l.Envelope) == "null" {
		if allowUnsigned {
			return l, nil
		}
		return l, ErrUnsigned
	}
	st, err := attest.Verify(l.Envelope, keys)
	if err != nil {
		return l, err
	}
	if err := st.CheckJob(l.JobID); err != nil {
		return l, err
	}
	if st.Predicate.Server.Slug != l.Server {
		return l, fmt.Errorf("%w: the envelope is about server %q, the line says %q", attest.ErrWrongSubject,
			st.Predicate.Server.Slug, l.Server)
	}
	return l, nil
}

// checkManifest compares the manifest with what the lines before it held.
func checkManifest(m Manifest, seen Report, sum string) error {
	if m.Runs != seen.Runs {
		return fmt.Errorf("the manifest counts %d runs, the archive holds %d", m.Runs, seen.Runs)
	}
	if m.SHA256 != sum {
		return fmt.Errorf("the manifest's sha256 %s is not the content's %s: the archive was changed", m.SHA256, sum)
	}
	if !sameTime(m.First, seen.Manifest.First) || !sameTime(m.Last, seen.Manifest.Last) {
		return errors.New("the manifest's first or last time is not the runs'")
	}
	return nil
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}
