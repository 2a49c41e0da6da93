package directory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ErrRegistryDocument says an import in the directory's own formats (CSV, JSON lines, a JSON
// array) is a document of the MCP registry (its list response or a server.json), which the
// registry's reader takes (ParseRegistry). The command names the option that picks it.
var ErrRegistryDocument = errors.New("this is an MCP registry document (its list response or a server.json), not CSV or JSON lines")

// decodeEntry reads one JSON object with the fields slug, url, kind, plan and transport, and
// nothing else, and validates it.
func decodeEntry(text []byte) (Entry, error) {
	var e Entry
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return e, fmt.Errorf("not a JSON object with slug, url, kind, plan: %v", err)
	}
	if dec.More() {
		return e, errors.New("more than one JSON value on the line")
	}
	return e, e.Validate()
}

// parseJSONArray reads a JSON array of the objects JSON lines holds, one per element; a bad
// element is reported at the line it starts on. The import's byte bound (MaxImportBytes) holds
// for it as for the other formats: data was read under it.
func parseJSONArray(data []byte, bad *badRows) ([]Row, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	// lineAt counts the lines up to an offset, going forward only: each element's start is after
	// the previous one's.
	line, counted := 1, 0
	lineAt := func(off int) int {
		off = min(off, len(data))
		line += bytes.Count(data[counted:off], []byte("\n"))
		counted = off
		return line
	}
	syntax := func(err error) error {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return &LineError{Line: lineAt(int(se.Offset)), Err: fmt.Errorf("not a JSON array of objects: %v", se)}
		}
		return &LineError{Line: lineAt(int(dec.InputOffset())), Err: fmt.Errorf("not a JSON array of objects: %v", err)}
	}
	if _, err := dec.Token(); err != nil { // the '[' Parse saw
		return nil, syntax(err)
	}
	var rows []Row
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, bad.fatal(syntax(err))
		}
		at := lineAt(int(dec.InputOffset()) - len(raw))
		e, err := decodeEntry(raw)
		if err != nil {
			if bad.add(at, err) {
				return nil, bad.err()
			}
			continue
		}
		rows = append(rows, Row{Line: at, Entry: e})
	}
	if _, err := dec.Token(); err != nil { // the closing ']'
		return nil, bad.fatal(syntax(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, bad.fatal(&LineError{Line: lineAt(int(dec.InputOffset())), Err: errors.New("more after the JSON array's closing ']'")})
	}
	return rows, nil
}

// registryShaped says whether data is one JSON object in the MCP registry's shapes: the list
// response ({"servers": [...], "metadata": ...}) or a server.json (a name, with remotes or
// packages). Parse asks only when the file did not read as JSON lines, so a good import never
// pays for it.
func registryShaped(data []byte) bool {
	var doc map[string]json.RawMessage
	if json.Unmarshal(data, &doc) != nil {
		return false
	}
	if _, ok := doc["servers"]; ok {
		return true
	}
	_, named := doc["name"]
	_, remotes := doc["remotes"]
	_, packages := doc["packages"]
	return named && (remotes || packages)
}
