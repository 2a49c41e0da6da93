package directory

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/probectl/probectl/internal/exit"
)

// MaxImportBytes caps an import file; a directory of a few hundred thousand servers fits easily.
const MaxImportBytes = 64 << 20

// LineError is a bad row: it names the line, so the user can fix the file.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Err) }

func (e *LineError) Unwrap() error { return e.Err }

// Row is a validated entry and the line it came from.
type Row struct {
	Line int
	Entry
}

// Parse reads CSV (with a header row naming slug, url, kind and optionally plan), JSON lines
// (one object per line; detected by a first non-blank character of '{') or a JSON array of the
// same objects (a first '['), validates every row and rejects a slug that appears twice. Bad rows
// are reported together, each with its line, as *RowErrors (at most MaxRowErrors of them). A
// document of the MCP registry, which is none of these, is ErrRegistryDocument.
func Parse(r io.Reader) ([]Row, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxImportBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read import: %w", err)
	}
	if len(data) > MaxImportBytes {
		return nil, fmt.Errorf("import is larger than %d MiB", MaxImportBytes>>20)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if err := checkLines(data, !bytes.HasPrefix(trimmed, []byte("["))); err != nil {
		return nil, err
	}
	var rows []Row
	var bad badRows
	switch {
	case bytes.HasPrefix(trimmed, []byte("{")):
		rows, err = parseJSONLines(data, &bad)
		if (err != nil || len(bad.Rows) > 0) && registryShaped(data) {
			return nil, ErrRegistryDocument
		}
	case bytes.HasPrefix(trimmed, []byte("[")):
		rows, err = parseJSONArray(data, &bad)
	default:
		rows, err = parseCSV(data, &bad)
	}
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 && len(bad.Rows) == 0 {
		return nil, errors.New("import has no servers")
	}
	seen := make(map[string]int, len(rows))
	for _, row := range rows {
		if first, dup := seen[row.Slug]; dup {
			if bad.add(row.Line, fmt.Errorf("slug %q already appears on line %d", row.Slug, first)) {
				break
			}
			continue
		}
		seen[row.Slug] = row.Line
	}
	if err := bad.err(); err != nil {
		sortRowErrors(bad.Rows)
		return nil, err
	}
	return rows, nil
}

func parseJSONLines(data []byte, bad *badRows) ([]Row, error) {
	var rows []Row
	sc := bufio.NewScanner(bytes.NewReader(data))
	// A line of MaxLineBytes and its "\r\n" (checkLines bounded the lines already).
	sc.Buffer(make([]byte, 64<<10), MaxLineBytes+2)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		e, err := decodeEntry([]byte(text))
		if err != nil {
			if bad.add(line, err) {
				return nil, bad.err()
			}
			continue
		}
		rows = append(rows, Row{Line: line, Entry: e})
	}
	if err := sc.Err(); err != nil {
		return nil, bad.fatal(&LineError{Line: line + 1, Err: err})
	}
	return rows, nil
}

// csvReadAhead is how far encoding/csv's reader reads past where it stands (its bufio buffer).
const csvReadAhead = 4096

// errRowTooLong: a CSV row reached its bound before it ended.
var errRowTooLong = errors.New("row too long")

// cappedReader gives its reader's bytes up to limit, then errRowTooLong.
type cappedReader struct {
	r     io.Reader
	read  int64
	limit int64
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.read >= c.limit {
		return 0, errRowTooLong
	}
	if int64(len(p)) > c.limit-c.read {
		p = p[:c.limit-c.read]
	}
	n, err := c.r.Read(p)
	c.read += int64(n)
	return n, err
}

func parseCSV(data []byte, bad *badRows) ([]Row, error) {
	in := &cappedReader{r: bytes.NewReader(data), limit: MaxLineBytes + csvReadAhead}
	cr := csv.NewReader(in)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, errors.New("import has no servers")
	}
	if err != nil {
		return nil, csvError(err)
	}
	cols, err := csvColumns(header)
	if err != nil {
		return nil, &LineError{Line: 1, Err: err}
	}
	var rows []Row
	for {
		// A quoted field may hold line breaks, so a row may span many lines within the bound:
		// none of the fields can hold one, and a row is bounded as a line is, before it is read.
		start := cr.InputOffset()
		in.limit = start + MaxLineBytes + csvReadAhead
		rec, err := cr.Read()
		if err == io.EOF {
			return rows, nil
		}
		if errors.Is(err, errRowTooLong) {
			return nil, bad.fatal(&LineError{Line: bytes.Count(data[:start], []byte("\n")) + 1,
				Err: fmt.Errorf("a row longer than the %d-byte (1 MiB) line limit", MaxLineBytes)})
		}
		if err != nil {
			return nil, bad.fatal(csvError(err))
		}
		line, _ := cr.FieldPos(0)
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if len(rec) != len(header) {
			if bad.add(line, fmt.Errorf("has %d fields, the header has %d", len(rec), len(header))) {
				return nil, bad.err()
			}
			continue
		}
		field := func(name string) string {
			if i, ok := cols[name]; ok {
				return rec[i]
			}
			return ""
		}
		e := Entry{Slug: field("slug"), URL: field("url"), Kind: field("kind"), Plan: field("plan"), Transport: field("transport")}
		if err := e.Validate(); err != nil {
			if bad.add(line, err) {
				return nil, bad.err()
			}
			continue
		}
		rows = append(rows, Row{Line: line, Entry: e})
	}
}

func csvColumns(header []string) (map[string]int, error) {
	cols := map[string]int{}
	for i, h := range header {
		name := strings.ToLower(strings.TrimSpace(h))
		switch name {
		case "slug", "url", "kind", "plan", "transport":
		default:
			return nil, fmt.Errorf("unknown column %q in the header (want slug, url, kind, plan, transport)", h)
		}
		if _, dup := cols[name]; dup {
			return nil, fmt.Errorf("column %q appears twice in the header", name)
		}
		cols[name] = i
	}
	for _, need := range []string{"slug", "url", "kind"} {
		if _, ok := cols[need]; !ok {
			return nil, fmt.Errorf("header lacks the %q column (want slug, url, kind, plan)", need)
		}
	}
	return cols, nil
}

func csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &LineError{Line: pe.Line, Err: pe.Err}
	}
	return fmt.Errorf("read csv: %w", err)
}

// ExitCode: a bad row is bad input.
func (e *LineError) ExitCode() int { return exit.Usage }
