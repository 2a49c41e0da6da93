package check

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxToolsFingerprinted bounds the tools one check fingerprints, records in its result and
// offers for storage: a hostile server may serve a new list at every check, and each run may add
// at most this many definitions. A longer list is counted in full but recorded as truncated, and
// a truncated list is never compared (see audit tools).
const MaxToolsFingerprinted = 1000

// MaxToolDefinitionBytes bounds the bytes of canonical definitions one check offers for storage
// (tool_definitions): 1,000 definitions of a few kilobytes each made one hostile server store
// ~5 MB per check. Definitions past it keep their fingerprints in the run, and the run counts
// them (Result.ToolDefinitionsCut). A server's day has its own budget (probe.MaxToolTextPerDay).
const MaxToolDefinitionBytes = 256 << 10

// MaxToolNameBytes bounds a tool's name as a run records it (tool_fingerprints, the stored list):
// the MCP spec's 128 characters (its names are ASCII). Names are the server's choice and were not
// bounded: 1,000 names of 1 KB went into every run. A longer name is cut to fit, ending in "…";
// its fingerprint is still that of the whole definition, so a cut list stays comparable, and the
// run counts the names cut (Result.ToolNamesCut).
const MaxToolNameBytes = 128

// toolNameCut marks a name cut at MaxToolNameBytes.
const toolNameCut = "…"

// boundName returns name cut to MaxToolNameBytes (at a rune's start, ending in toolNameCut), and
// whether it was cut.
func boundName(name string) (string, bool) {
	if len(name) <= MaxToolNameBytes {
		return name, false
	}
	end := MaxToolNameBytes - len(toolNameCut)
	for end > 0 && !utf8.RuneStart(name[end]) {
		end--
	}
	return strings.ToValidUTF8(name[:end], "") + toolNameCut, true
}

// ToolPrint is one tool of a run's list: its name and the fingerprint of its definition.
type ToolPrint struct {
	Name        string `json:"name"`
	Fingerprint string `json:"fingerprint"`
}

// toolSet gathers a check's tools as the pages arrive.
type toolSet struct {
	prints []ToolPrint
	defs   map[string]json.RawMessage // fingerprint → canonical definition
	count  int
	capped bool
	// defBytes is the size of defs; cut counts the distinct definitions left out of defs for
	// want of room under MaxToolDefinitionBytes.
	defBytes int
	cut      map[string]bool
	// namesCut counts the names cut to MaxToolNameBytes.
	namesCut int
}

// add fingerprints the page's tools while under the cap; a tool it cannot canonicalise (a schema
// with a number JSON cannot hold, say) is recorded with the fingerprint of its error text, so the
// list still changes when it does.
func (s *toolSet) add(tools []*mcp.Tool) {
	for _, t := range tools {
		s.count++
		if t == nil {
			continue
		}
		if len(s.prints) >= MaxToolsFingerprinted {
			s.capped = true
			continue
		}
		canon, err := ToolDefinition(t)
		if err != nil {
			canon = mustCanonical(map[string]string{"name": t.Name, "error": err.Error()})
		}
		fp := fingerprint(canon)
		s.keep(fp, canon)
		name, cut := boundName(t.Name)
		if cut {
			s.namesCut++
		}
		s.prints = append(s.prints, ToolPrint{Name: name, Fingerprint: fp})
	}
}

// keep offers a definition for storage while the check's bytes allow.
func (s *toolSet) keep(fp string, canon json.RawMessage) {
	if _, kept := s.defs[fp]; kept || s.cut[fp] {
		return
	}
	if s.defBytes+len(canon) > MaxToolDefinitionBytes {
		if s.cut == nil {
			s.cut = map[string]bool{}
		}
		s.cut[fp] = true
		return
	}
	if s.defs == nil {
		s.defs = map[string]json.RawMessage{}
	}
	s.defs[fp] = canon
	s.defBytes += len(canon)
}

// list sorts the prints by name (then fingerprint) and returns them with the list's fingerprint:
// the order a server lists its tools in is not a change of what it offers.
func (s *toolSet) list() ([]ToolPrint, string) {
	prints := slices.Clone(s.prints)
	if prints == nil {
		prints = []ToolPrint{}
	}
	slices.SortFunc(prints, func(a, b ToolPrint) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Fingerprint, b.Fingerprint)
	})
	return prints, fingerprint(mustCanonical(prints))
}

// ToolDefinition is the RFC 8785 (JCS) canonical JSON of what a model reads of a tool: name,
// title, description, inputSchema, outputSchema and annotations (absent ones left out). Its
// SHA-256 is the tool's fingerprint.
func ToolDefinition(t *mcp.Tool) (json.RawMessage, error) {
	def := map[string]any{"name": t.Name}
	if t.Title != "" {
		def["title"] = t.Title
	}
	if t.Description != "" {
		def["description"] = t.Description
	}
	if t.InputSchema != nil {
		def["inputSchema"] = t.InputSchema
	}
	if t.OutputSchema != nil {
		def["outputSchema"] = t.OutputSchema
	}
	if t.Annotations != nil {
		def["annotations"] = t.Annotations
	}
	return Canonical(def)
}

// Canonical encodes v as RFC 8785 canonical JSON: sorted keys, no white space, minimal string
// escapes and ECMAScript number forms.
func Canonical(v any) (json.RawMessage, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	val := jsontext.Value(raw)
	if err := val.Canonicalize(); err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	return json.RawMessage(val), nil
}

func mustCanonical(v any) json.RawMessage {
	c, err := Canonical(v)
	if err != nil {
		panic(err) // only called on values made of strings
	}
	return c
}

// fingerprint is the hex SHA-256 of canonical JSON.
func fingerprint(canon []byte) string {
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}
