package directory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseAcceptsCSVWithColumnsInAnyOrderAndDefaultsThePlan(t *testing.T) {
	t.Parallel()
	rows, err := Parse(strings.NewReader("\ufeffkind,slug,url\r\nmcp,weather,https://weather.example/mcp\r\n\r\nhttp,status,http://status.example:8080/health\r\n"))
	require.NoError(t, err)
	require.Equal(t, []Row{
		{Line: 2, Entry: Entry{Slug: "weather", URL: "https://weather.example/mcp", Kind: "mcp", Plan: "standard", Transport: "streamable-http"}},
		{Line: 4, Entry: Entry{Slug: "status", URL: "http://status.example:8080/health", Kind: "http", Plan: "standard"}},
	}, rows)
}

func TestParseReadsAnMCPServersTransportFromEitherFormat(t *testing.T) {
	t.Parallel()
	for name, input := range map[string]string{
		"csv":        "slug,url,kind,transport\nlegacy,https://legacy.example/sse,mcp,sse\n",
		"json lines": `{"slug":"legacy","url":"https://legacy.example/sse","kind":"mcp","transport":"sse"}` + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rows, err := Parse(strings.NewReader(input))
			require.NoError(t, err)
			require.Len(t, rows, 1)
			require.Equal(t, "sse", rows[0].Transport)
		})
	}
}

func TestParseCountsLinesOfQuotedMultilineCSVFields(t *testing.T) {
	t.Parallel()
	_, err := Parse(strings.NewReader("slug,url,kind\n\"a\nb\",https://a.example/,http\nok,https://ok.example/,grpc\n"))
	var le *LineError
	require.True(t, errors.As(err, &le), "%v", err)
	require.Equal(t, 2, le.Line, "the slug with a newline is the row starting on line 2")
}

func TestParseReportsEveryBadRowInLineOrder(t *testing.T) {
	t.Parallel()
	_, err := Parse(strings.NewReader("slug,url,kind\nb,https://b.example/,grpc\nok,https://ok.example/,http\nb,https://c.example/,http\nUP,https://d.example/,mcp\nx,https://x.example/\n"))
	var re *RowErrors
	require.True(t, errors.As(err, &re), "%v", err)
	lines := make([]int, len(re.Rows))
	for i, r := range re.Rows {
		lines[i] = r.Line
	}
	require.Equal(t, []int{2, 5, 6}, lines, "kind, slug and field count; line 4's slug b was refused on line 2 already")
	require.False(t, re.Truncated)
}

func TestParseStopsReportingAtTheBound(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("slug,url,kind\n")
	for i := range MaxRowErrors + 50 {
		fmt.Fprintf(&b, "s%d,https://s.example/,grpc\n", i)
	}
	_, err := Parse(strings.NewReader(b.String()))
	var re *RowErrors
	require.True(t, errors.As(err, &re), "%v", err)
	require.Len(t, re.Rows, MaxRowErrors)
	require.True(t, re.Truncated)
}

func TestParseNamesTheLineOfTheSecondOccurrenceOfASlug(t *testing.T) {
	t.Parallel()
	_, err := Parse(strings.NewReader(`{"slug":"a","url":"https://a.example/","kind":"http"}
{"slug":"b","url":"https://b.example/","kind":"mcp","plan":"frequent"}
{"slug":"a","url":"https://c.example/","kind":"http"}
`))
	require.EqualError(t, err, `line 3: slug "a" already appears on line 1`)
}

func TestValidateRefusesWhatWouldBreakProbingOrLeakSecrets(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		entry Entry
		want  string
	}{
		{"an upper-case slug", Entry{Slug: "Weather", URL: "https://a.example/", Kind: "http"}, "slug"},
		{"a url without a host", Entry{Slug: "a", URL: "https:///path", Kind: "http"}, "no host"},
		{"a url with a password", Entry{Slug: "a", URL: "https://u:p@a.example/", Kind: "http"}, "credentials"},
		{"a url with port zero", Entry{Slug: "a", URL: "https://a.example:0/", Kind: "http"}, "bad port"},
		{"a relative url", Entry{Slug: "a", URL: "/health", Kind: "http"}, "scheme"},
		{"an unknown transport", Entry{Slug: "a", URL: "https://a.example/", Kind: "mcp", Transport: "websocket"}, "must be streamable-http or sse"},
		{"a transport on an http server", Entry{Slug: "a", URL: "https://a.example/", Kind: "http", Transport: "sse"}, "only mcp servers"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.entry.Validate()
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// FuzzParse: whatever the input, Parse returns rows that all validate, or an error; it never panics
// and never returns both.
func FuzzParse(f *testing.F) {
	f.Add("slug,url,kind,plan\nweather,https://weather.example/mcp,mcp,standard\n")
	f.Add(`{"slug":"a","url":"https://a.example/","kind":"http"}` + "\n")
	f.Add("slug,url,kind\n\"a\nb\",https://a.example/,http\n")
	f.Add(`[{"slug":"a","url":"https://a.example/","kind":"http"},` + "\n" + `{"slug":"b","url":"https://b.example/","kind":"mcp"}]`)
	f.Fuzz(func(t *testing.T, input string) {
		rows, err := Parse(strings.NewReader(input))
		if err != nil {
			require.Nil(t, rows)
			return
		}
		seen := map[string]bool{}
		for _, r := range rows {
			e := r.Entry
			require.NoError(t, e.Validate())
			require.False(t, seen[e.Slug])
			seen[e.Slug] = true
			require.Positive(t, r.Line)
		}
	})
}

func TestParseAcceptsAJSONArrayAndNamesTheLineABadElementStartsOn(t *testing.T) {
	t.Parallel()
	rows, err := Parse(strings.NewReader(`[
  {"slug": "weather", "url": "https://weather.example/mcp", "kind": "mcp"},
  {
    "slug": "status",
    "url": "https://status.example/health",
    "kind": "http",
    "plan": "frequent"
  }
]
`))
	require.NoError(t, err)
	require.Equal(t, []Row{
		{Line: 2, Entry: Entry{Slug: "weather", URL: "https://weather.example/mcp", Kind: "mcp", Plan: "standard", Transport: "streamable-http"}},
		{Line: 3, Entry: Entry{Slug: "status", URL: "https://status.example/health", Kind: "http", Plan: "frequent"}},
	}, rows)

	_, err = Parse(strings.NewReader("[{\"slug\":\"a\",\"url\":\"https://a.example/\",\"kind\":\"http\"},\n" +
		"\n  {\"slug\":\"b\",\"url\":\"https://b.example/\",\"kind\":\"grpc\"},\n" +
		"  {\"slug\":\"a\",\"url\":\"https://c.example/\",\"kind\":\"http\", \"owner\": \"x\"},\n" +
		"  \"weather\"]"))
	var re *RowErrors
	require.True(t, errors.As(err, &re), "%v", err)
	require.Len(t, re.Rows, 3, "%v", err)
	require.Equal(t, 3, re.Rows[0].Line)
	require.Contains(t, re.Rows[0].Error(), `kind "grpc"`)
	require.Equal(t, 4, re.Rows[1].Line)
	require.Contains(t, re.Rows[1].Error(), `unknown field "owner"`)
	require.Equal(t, 5, re.Rows[2].Line)
	require.Contains(t, re.Rows[2].Error(), "not a JSON object")

	for input, want := range map[string]string{
		"[]":                   "import has no servers",
		"[\n{\"slug\": \"a\",": "line 2: not a JSON array of objects",
		`[{"slug":"a","url":"https://a.example/","kind":"http"}] {}`: "line 1: more after the JSON array's closing ']'",
	} {
		_, err := Parse(strings.NewReader(input))
		require.ErrorContains(t, err, want, input)
	}
}

func TestParseOfAnMCPRegistryDocumentSaysSoInsteadOfABadRow(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"testdata/mcp-registry/servers.json", "testdata/mcp-registry/server.json"} {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		_, err = Parse(bytes.NewReader(data))
		require.ErrorIs(t, err, ErrRegistryDocument, file)

		// On one line too, as `curl` prints the list response.
		var compact bytes.Buffer
		require.NoError(t, json.Compact(&compact, data))
		_, err = Parse(&compact)
		require.ErrorIs(t, err, ErrRegistryDocument, file+", compacted")
	}
	// A JSON-lines file with a bad row is not taken for one.
	_, err := Parse(strings.NewReader(`{"slug":"a","url":"https://a.example/","kind":"http","name":"x","remotes":[]}` + "\n" +
		`{"slug":"b","url":"https://b.example/","kind":"http"}` + "\n"))
	require.NotErrorIs(t, err, ErrRegistryDocument)
	require.ErrorContains(t, err, `line 1: not a JSON object with slug, url, kind, plan: json: unknown field "name"`)
}

// Bytes that are not UTF-8 are refused by line, in every format, before any row is judged: the
// database refused them in a CSV row (a raw error, after the parse had passed the row), and JSON
// decoding replaced them with U+FFFD, storing a URL that is not the file's.
func TestParseRefusesBytesThatAreNotUTF8NamingTheirLines(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		input string
		lines []int
	}{
		"csv": {"slug,url,kind\nok,https://ok.example/,http\nu1,https://a.example/\xff\xfe,http\nu2,https://b.example/,ht\xc3tp\n", []int{3, 4}},
		"json lines": {`{"slug":"j1","url":"https://a.example/","kind":"http"}` + "\n" +
			`{"slug":"j2","url":"https://a.example/` + "\xff" + `","kind":"http"}` + "\n", []int{2}},
		"json array": {"[\n" + `{"slug":"j1","url":"https://a.example/","kind":"http"},` + "\n" +
			`{"slug":"j2","url":"https://a.example/` + "\xff" + `","kind":"http"}` + "\n]\n", []int{3}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rows, err := Parse(strings.NewReader(tc.input))
			require.Nil(t, rows)
			var rowErrs *RowErrors
			require.ErrorAs(t, err, &rowErrs, "%v", err)
			var lines []int
			for _, r := range rowErrs.Rows {
				lines = append(lines, r.Line)
				require.ErrorContains(t, r, "not valid UTF-8 text")
			}
			require.Equal(t, tc.lines, lines)
			require.NotContains(t, err.Error(), "\xff")
		})
	}
}

func TestParseRegistryRefusesBytesThatAreNotUTF8(t *testing.T) {
	t.Parallel()
	_, err := ParseRegistry(strings.NewReader(`{"name":"io.example/w` + "\xff" + `","remotes":[{"type":"streamable-http","url":"https://w.example/mcp"}]}`))
	require.ErrorContains(t, err, "line 1: not valid UTF-8 text")
}

// A line has a bound (1 MiB), in every format, and a value too long for its field is quoted cut
// in its error: a 50 MB plan was read, and its error printed all of it.
func TestParseBoundsALineAndQuotesALongValueCut(t *testing.T) {
	t.Parallel()
	long := "slug,url,kind,plan\nok,https://ok.example/,http,standard\nbig,https://big.example/,http," +
		strings.Repeat("p", MaxLineBytes) + "\n"
	_, err := Parse(strings.NewReader(long))
	require.EqualError(t, err, fmt.Sprintf("line 3: %d bytes, longer than the 1048576-byte (1 MiB) line limit", MaxLineBytes+len("big,https://big.example/,http,")))
	jsonLong := `{"slug":"j1","url":"https://a.example/","kind":"http","plan":"` + strings.Repeat("p", MaxLineBytes) + `"}` + "\n"
	_, err = Parse(strings.NewReader(jsonLong))
	require.ErrorContains(t, err, "line 1: ")
	require.ErrorContains(t, err, "longer than the 1048576-byte (1 MiB) line limit")

	_, err = Parse(strings.NewReader("slug,url,kind,plan\nbig,https://big.example/,http," + strings.Repeat("é", 10_000) + "\n"))
	require.EqualError(t, err, `line 2: plan "`+strings.Repeat("é", 64)+`"… (10000 characters): must be standard (every 12h) or frequent (every 15m)`)
}

// The line bound, at its edges: a JSON line of exactly 1 MiB (and its CRLF) is read, not refused by
// the scanner ("token too long"); a CSV row whose quoted field spans lines is bounded as a line
// is, before it is read whole; a JSON array, or a registry page, may be one long line (only the
// import's size bounds it).
func TestParseBoundsALineAtItsEdges(t *testing.T) {
	t.Parallel()
	prefix := `{"slug":"j1","url":"https://a.example/","kind":"http","plan":"`
	exact := prefix + strings.Repeat("p", MaxLineBytes-len(prefix)-2) + `"}`
	require.Len(t, exact, MaxLineBytes)
	for _, end := range []string{"\n", "\r\n", ""} {
		_, err := Parse(strings.NewReader(exact + end))
		require.ErrorContains(t, err, "line 1: plan \"pppp", "read whole, judged by its plan")
	}

	split := "slug,url,kind,plan\nok,https://ok.example/,http,standard\nbig,https://big.example/,http,\"" +
		strings.Repeat(strings.Repeat("p", 999)+"\n", 2000) + "\"\n"
	_, err := Parse(strings.NewReader(split))
	require.EqualError(t, err, "line 3: a row longer than the 1048576-byte (1 MiB) line limit")

	entries := make([]string, 0, 20_000)
	for i := range 20_000 {
		entries = append(entries, fmt.Sprintf(`{"slug":"s%d","url":"https://s%d.example/","kind":"http"}`, i, i))
	}
	rows, err := Parse(strings.NewReader("[" + strings.Join(entries, ",") + "]"))
	require.NoError(t, err, "a JSON array of %d bytes on one line", len(strings.Join(entries, ",")))
	require.Len(t, rows, 20_000)
}
