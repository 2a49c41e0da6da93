package directory

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/probectl/probectl/internal/exit"
)

// The official MCP registry's shapes (server.json, and the list response of GET /v0/servers):
// only the fields an import reads.
type registryServer struct {
	Name    string           `json:"name"`
	Remotes []registryRemote `json:"remotes"`
	// Packages is only counted: a sync holds every entry of every page until it applies them, and
	// a package's definition (arguments, environment) can be large.
	Packages packageCount `json:"packages"`
}

// packageCount decodes a JSON list keeping only its length.
type packageCount int

func (c *packageCount) UnmarshalJSON(b []byte) error {
	var items []skippedJSON
	if err := json.Unmarshal(b, &items); err != nil {
		return err
	}
	*c = packageCount(len(items))
	return nil
}

// skippedJSON is any JSON value, validated and dropped.
type skippedJSON struct{}

func (*skippedJSON) UnmarshalJSON([]byte) error { return nil }

// MaxRegistryRemotes bounds the remotes of one entry (an import's, a sync's).
const MaxRegistryRemotes = 16

type registryRemote struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

type registryEntry struct {
	Server registryServer `json:"server"`
	Meta   struct {
		Official *struct {
			Status    string     `json:"status"`
			IsLatest  *bool      `json:"isLatest"`
			UpdatedAt *time.Time `json:"updatedAt"`
		} `json:"io.modelcontextprotocol.registry/official"`
	} `json:"_meta"`
}

// RegistrySkipped counts the registry entries an import left out, by reason.
type RegistrySkipped struct {
	Deleted      int `json:"deleted"`       // status deleted
	OlderVersion int `json:"older_version"` // a version not marked isLatest
	PackagesOnly int `json:"packages_only"` // no remote to check, only packages to install
	TemplatedURL int `json:"templated_url"` // a remote URL with {variables} the user fills in
}

// RegistryImport is what ParseRegistry found: the servers to import and what it skipped.
type RegistryImport struct {
	Rows    []RegistryRow
	Skipped RegistrySkipped
}

// RegistryRow is one server of a registry entry: the row an import writes, and the registry name
// it belongs to (recorded, so that another name mapping to the same slug is refused).
type RegistryRow struct {
	Row
	Name string
	// Deprecated: the registry marked the entry deprecated; it is kept, checked, and marked.
	Deprecated bool
}

// EntryError is a bad registry entry: it names the entry's index in the file and its name, so
// the user can find it.
type EntryError struct {
	Index int
	Name  string
	Err   error
}

func (e *EntryError) Error() string {
	return fmt.Sprintf("entry %d (%q): %s", e.Index, e.Name, e.Err)
}

func (e *EntryError) Unwrap() error { return e.Err }

// ExitCode: a bad entry is bad input.
func (e *EntryError) ExitCode() int { return exit.Usage }

// MaxRegistryNameChars bounds a registry name a server records (the registry's own schema allows
// 200).
const MaxRegistryNameChars = 500

// maxSlugLen is the slug pattern's bound.
const maxSlugLen = 100

// ParseRegistry reads a registry server.json document, or the registry's list response
// ({"servers": [{"server": {...}, "_meta": {...}}], "metadata": {...}}), and turns each remote of
// each latest, not deleted, entry into an mcp server: the slug is the registry name lower-cased
// with '/' and '.' turned into '-' (stable across imports), a second remote of the same entry
// gets "-<type>" appended, and a slug over 100 characters is cut and suffixed with a short hash
// of the whole. Entries with only packages, and remotes whose URL is a template, are skipped and
// counted. The first bad entry is returned, named by index and name.
func ParseRegistry(r io.Reader) (RegistryImport, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxImportBytes+1))
	if err != nil {
		return RegistryImport{}, fmt.Errorf("read import: %w", err)
	}
	if len(data) > MaxImportBytes {
		return RegistryImport{}, fmt.Errorf("import is larger than %d MiB", MaxImportBytes>>20)
	}
	if err := checkLines(data, false); err != nil {
		return RegistryImport{}, err
	}
	entries, err := registryEntries(data)
	if err != nil {
		return RegistryImport{}, err
	}
	var out RegistryImport
	seen := slugOwners{}
	for i, e := range entries {
		rows, err := registryRows(&out.Skipped, e)
		if err != nil {
			return RegistryImport{}, &EntryError{Index: i, Name: e.Server.Name, Err: err}
		}
		for _, row := range rows {
			if err := seen.claim(row.Slug, e.Server.Name, fmt.Sprintf("entry %d", i)); err != nil {
				return RegistryImport{}, &EntryError{Index: i, Name: e.Server.Name, Err: err}
			}
			row.Line = i
			out.Rows = append(out.Rows, row)
		}
	}
	return out, nil
}

// slugOwners remembers which registry name (and where it was read) took each slug of one import or
// sync, so a second name mapping to the same slug is refused naming both.
type slugOwners map[string]struct{ name, where string }

func (o slugOwners) claim(slug, name, where string) error {
	if first, dup := o[slug]; dup {
		if first.name == name {
			return fmt.Errorf("slug %q is also %s's, the same name listed twice", slug, first.where)
		}
		return &CollisionError{Slug: slug, Name: name, Existing: &first.name, ExistingWhere: first.where}
	}
	o[slug] = struct{ name, where string }{name, where}
	return nil
}

// registryEntries accepts the list response or a single server.json.
func registryEntries(data []byte) ([]registryEntry, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("not a registry document (server.json or a list response): %v", err)
	}
	if list, ok := probe["servers"]; ok {
		var entries []registryEntry
		if err := json.Unmarshal(list, &entries); err != nil {
			return nil, fmt.Errorf("servers: not a list of {\"server\", \"_meta\"} entries: %v", err)
		}
		if len(entries) == 0 {
			return nil, errors.New("import has no servers")
		}
		return entries, nil
	}
	var one registryServer
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&one); err != nil {
		return nil, fmt.Errorf("not a server.json document: %v", err)
	}
	return []registryEntry{{Server: one}}, nil
}

func registryRows(skipped *RegistrySkipped, e registryEntry) ([]RegistryRow, error) {
	if off := e.Meta.Official; off != nil {
		if off.Status == "deleted" {
			skipped.Deleted++
			return nil, nil
		}
		if off.IsLatest != nil && !*off.IsLatest {
			skipped.OlderVersion++
			return nil, nil
		}
	}
	if strings.TrimSpace(e.Server.Name) == "" {
		return nil, errors.New("name: missing")
	}
	if n := utf8.RuneCountInString(strings.TrimSpace(e.Server.Name)); n > MaxRegistryNameChars {
		return nil, fmt.Errorf("name: %d characters, longer than the %d-character limit", n, MaxRegistryNameChars)
	}
	if n := len(e.Server.Remotes); n > MaxRegistryRemotes {
		return nil, fmt.Errorf("remotes: %d, more than the %d an entry may have", n, MaxRegistryRemotes)
	}
	if len(e.Server.Remotes) == 0 {
		if e.Server.Packages == 0 {
			return nil, errors.New("neither remotes nor packages")
		}
		skipped.PackagesOnly++
		return nil, nil
	}
	base := registrySlug(e.Server.Name)
	deprecated := e.Meta.Official != nil && e.Meta.Official.Status == "deprecated"
	var rows []RegistryRow
	for i, remote := range e.Server.Remotes {
		if strings.ContainsAny(remote.URL, "{}") {
			skipped.TemplatedURL++
			continue
		}
		slug := base
		if i > 0 {
			slug = base + "-" + strings.ToLower(remote.Type)
		}
		entry := Entry{Slug: fitSlug(slug), URL: remote.URL, Kind: "mcp", Transport: remote.Type}
		if err := entry.Validate(); err != nil {
			return nil, fmt.Errorf("remotes[%d]: %w", i, err)
		}
		rows = append(rows, RegistryRow{Row: Row{Entry: entry}, Name: strings.TrimSpace(e.Server.Name), Deprecated: deprecated})
	}
	return rows, nil
}

// registrySlug is a registry name as a slug: lower case, '/' and '.' as '-'.
func registrySlug(name string) string {
	return strings.NewReplacer("/", "-", ".", "-").Replace(strings.ToLower(strings.TrimSpace(name)))
}

// fitSlug cuts a slug over maxSlugLen characters and suffixes a short hash of the whole, so two
// long names that share a start stay apart and the same name always gives the same slug.
func fitSlug(slug string) string {
	if len(slug) <= maxSlugLen {
		return slug
	}
	sum := sha256.Sum256([]byte(slug))
	suffix := "-" + hex.EncodeToString(sum[:4])
	return strings.TrimRight(slug[:maxSlugLen-len(suffix)], "-._") + suffix
}
