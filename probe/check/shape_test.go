package check

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/fakefleet"
)

// A hostile server's page is refused before it is decoded: 15,000 tiny tools (700 KB, under the
// body cap) and a schema of 75,000 sub-schemas, as JSON and as server-sent events, each fail the
// check as the server's fault, naming the bound.
func TestAHostilePageFailsTheCheckBeforeItIsDecoded(t *testing.T) {
	t.Parallel()
	many, bomb := fakefleet.ManyToolsResult(15000), fakefleet.SchemaBombResult(75000)
	require.Less(t, len(many), 1<<20, "under the body cap: only the decode bounds stop it")
	require.Less(t, len(bomb), 1<<20)
	for _, tc := range []struct {
		name string
		page []byte
		sse  bool
		want string
	}{
		{"15,000 tools as json", many, false, "more than 1000 items in one array"},
		{"15,000 tools as events", many, true, "more than 1000 items in one array"},
		{"a schema bomb as json", bomb, false, "more than 100000 JSON values in one message"},
		{"a schema bomb as events", bomb, true, "more than 100000 JSON values in one message"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFleet(t, fakefleet.HostileMCP(tc.page, tc.sse))
			res := New(Config{AllowPrivate: true}).Check(context.Background(), Target{URL: srv.URL, Kind: "mcp"})
			assert.Equal(t, OutcomeFailed, res.Outcome, "the server's fault")
			assert.Equal(t, "response too large to decode", res.Summary)
			assert.Contains(t, res.Error, tc.want)
			assert.Contains(t, res.Error, "stopped reading before decoding it")
			assert.Nil(t, res.Tools)
		})
	}
}

// The bounds leave room for a large honest server: 500 tools of 32 values each.
func TestALargeHonestToolListIsWithinTheDecodeBounds(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "big", Version: "1"}, &mcp.ServerOptions{PageSize: 500})
	props := map[string]any{}
	for i := range 3 {
		props[fmt.Sprintf("p%d", i)] = map[string]any{"type": "string", "description": "a property"}
	}
	for i := range 500 {
		srv.AddTool(&mcp.Tool{Name: fmt.Sprintf("tool_%03d", i), Description: "does a thing",
			InputSchema: map[string]any{"type": "object", "properties": props, "required": []any{"p0"}}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	fleet := newFleet(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	res := New(Config{AllowPrivate: true}).Check(context.Background(), Target{URL: fleet.URL, Kind: "mcp"})
	require.Equal(t, OutcomeOK, res.Outcome, res.Error)
	assert.Equal(t, 500, *res.Tools)
}

// An honest server on the Go SDK serves 1,000 tools a page: a full page of realistic tools (80
// values and 817 bytes each), one of them with a parameter's enum of 1,500 values, is listed
// whole. Such a server failed outright past ~666 tools, and one long enum failed its whole check.
func TestAFullPageOfRealisticToolsIsWithinTheDecodeBounds(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "full", Version: "1"}, nil) // the SDK's page size
	for i := range 1000 {
		units := []any{"metric", "imperial"}
		if i == 7 {
			units = make([]any, 1500)
			for j := range units {
				units[j] = fmt.Sprintf("u%d", j)
			}
		}
		srv.AddTool(&mcp.Tool{Name: fmt.Sprintf("get_weather_forecast_%d", i), Title: "Weather forecast",
			Description: "Returns the weather forecast for a city for the next days, with temperatures, precipitation and wind.",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(bool)},
			InputSchema: map[string]any{"type": "object", "properties": map[string]any{
				"city":    map[string]any{"type": "string", "description": "The city name"},
				"days":    map[string]any{"type": "integer", "description": "How many days", "minimum": 1, "maximum": 14},
				"units":   map[string]any{"type": "string", "enum": units, "default": "metric"},
				"hourly":  map[string]any{"type": "boolean", "description": "Hourly detail"},
				"country": map[string]any{"type": "string", "description": "ISO 3166 country code", "pattern": "^[A-Z]{2}$"},
			}, "required": []any{"city"}, "additionalProperties": false},
			OutputSchema: map[string]any{"type": "object", "properties": map[string]any{
				"forecast": map[string]any{"type": "array", "items": map[string]any{"type": "object"}}}},
		}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	}
	fleet := newFleet(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	res := New(Config{AllowPrivate: true}).Check(context.Background(), Target{URL: fleet.URL, Kind: "mcp"})
	require.Equal(t, OutcomeOK, res.Outcome, "%s: %s", res.Summary, res.Error)
	assert.Equal(t, 1000, *res.Tools)
	assert.False(t, res.ToolsTruncated)
}

func TestTheShapeScanCountsStructureNotText(t *testing.T) {
	t.Parallel()
	count := func(sse bool, body string) (int, error) {
		s := &shapeScan{budget: &shapeBudget{}, sse: sse}
		s.reset()
		err := s.scan([]byte(body))
		return s.budget.values, err
	}
	n, err := count(false, `{"a":"{[{[\"]}","b":[1,true,null,-2.5e3]}`)
	require.NoError(t, err)
	assert.Equal(t, 9, n, "object, two keys, a string, an array and its four items; braces in strings are text")

	n, err = count(true, "event: message\r\nid: \"{{{\r\ndata: {\"a\":\r\ndata: [1,2]}\r\n\r\n: {[\ndata: 7\n\n")
	require.NoError(t, err)
	assert.Equal(t, 6, n, "only data fields are JSON; a comment or an id with a quote hides nothing")

	_, err = count(false, strings.Repeat("[", MaxMessageDepth+1))
	assert.ErrorContains(t, err, "more than 64 levels of nesting")

	_, err = count(true, "data: ["+strings.Repeat("0,", MaxArrayItems)+"0]\n\n")
	assert.ErrorContains(t, err, "more than 1000 items in one array")
	_, err = count(false, `{"result":{"tools":[`+strings.Repeat("{},", MaxArrayItems)+"{}]}}")
	assert.ErrorContains(t, err, "more than 1000 items in one array", "a list in a result is bounded")
	_, err = count(false, `{"result":{"tools":[{"inputSchema":{"enum":[`+strings.Repeat("0,", 5*MaxArrayItems)+"0]}}]}}")
	assert.NoError(t, err, "an array deeper in is bounded by the message's values only")

	// The per-message bound resets at each event; the check's does not.
	inner := "[" + strings.Repeat("0,", MaxArrayItems-1) + "0]"
	event := "data: [" + strings.Repeat(inner+",", 9) + inner + "]\n\n" // 10,011 values
	s := &shapeScan{budget: &shapeBudget{}, sse: true}
	s.reset()
	for range 14 {
		require.NoError(t, s.scan([]byte(event)))
	}
	assert.ErrorContains(t, s.scan([]byte(event)), "more than 150000 JSON values in all of the check's responses")
}

// A long list whose pages would pass the check's decode budget is listed while a whole message
// still fits in it, then recorded as truncated (not failed), as the request budget does.
func TestAListIsCutAtTheChecksDecodeBudget(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "long", Version: "1"}, &mcp.ServerOptions{PageSize: MaxArrayItems})
	str := map[string]any{"type": "string"}
	schema := map[string]any{"type": "object", "properties": map[string]any{"a": str, "b": str}} // 19 values a tool
	for i := range 10_000 {
		srv.AddTool(&mcp.Tool{Name: fmt.Sprintf("tool_%05d", i), Description: "d", InputSchema: schema},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	fleet := newFleet(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	res := New(Config{AllowPrivate: true}).Check(context.Background(), Target{URL: fleet.URL, Kind: "mcp"})
	require.Equal(t, OutcomeOK, res.Outcome, res.Error)
	assert.True(t, res.ToolsTruncated)
	assert.Equal(t, "at least 3000 tools (listing stopped at the decode budget) from long", res.Summary)
	assert.Less(t, len(res.Requests), MaxRequests, "the request budget was not what stopped it")
}

// The scan counts exactly the values a decoder sees in valid JSON (keys included), as raw JSON
// and as the data lines of an event, so no input decodes into more than the scan let through.
func FuzzShapeScanCountsWhatADecoderSees(f *testing.F) {
	for _, seed := range []string{`{"a":[1,"x{",true,null,{"b":-2.5e3}]}`, `"\"\\\\"`, "[\n1,\n2\n]", `{}`, `[[],[{}]]`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if !json.Valid([]byte(doc)) {
			return
		}
		want, depth, items := decoderCount(t, doc)
		if depth > MaxMessageDepth || items > MaxArrayItems || want > MaxMessageValues {
			return
		}
		for _, sse := range []bool{false, true} {
			body := doc
			if sse {
				body = "event: message\ndata: " + strings.ReplaceAll(doc, "\n", "\ndata: ") + "\n\n"
			}
			s := &shapeScan{budget: &shapeBudget{}, sse: sse}
			s.reset()
			require.NoError(t, s.scan([]byte(body)))
			require.Equal(t, want, s.budget.values, "sse %v: %q", sse, body)
		}
	})
}

// decoderCount counts a document's values with encoding/json's tokenizer, and its deepest nesting
// and longest array.
func decoderCount(t *testing.T, doc string) (values, maxDepth, maxItems int) {
	dec := json.NewDecoder(strings.NewReader(doc))
	type level struct {
		array bool
		items int
	}
	var stack []level
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return values, maxDepth, maxItems
		}
		require.NoError(t, err)
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			continue
		}
		values++
		if n := len(stack); n > 0 && stack[n-1].array {
			stack[n-1].items++
			maxItems = max(maxItems, stack[n-1].items)
		}
		if d, ok := tok.(json.Delim); ok {
			stack = append(stack, level{array: d == '['})
			maxDepth = max(maxDepth, len(stack))
		}
	}
}

// A large answer is decoded only in one of the Checker's decode slots; a small one never waits.
// With every slot taken, a check of a server whose page is large waits its request's time for
// one and could not be made: an error at probectl's fault, not the server's timeout.
func TestALargeAnswerWaitsForADecodeSlot(t *testing.T) {
	t.Parallel()
	large := newFleet(t, fakefleet.HostileMCP(fakefleet.NearBoundsResult(200, 400), false))
	small := newFleet(t, fakefleet.HostileMCP(fakefleet.ManyToolsResult(3), false))
	c := New(Config{AllowPrivate: true, RequestTimeout: 500 * time.Millisecond})
	for range MaxLargeDecodes {
		c.decodes <- struct{}{}
	}
	res := c.Check(context.Background(), Target{URL: small.URL, Kind: "mcp"})
	require.Equal(t, OutcomeOK, res.Outcome, res.Error)

	res = c.Check(context.Background(), Target{URL: large.URL, Kind: "mcp"})
	assert.Equal(t, OutcomeError, res.Outcome)
	assert.Equal(t, "could not check: decode slots busy", res.Summary, res.Error)
	assert.Equal(t, FaultProbectl, res.Fault)

	<-c.decodes
	res = c.Check(context.Background(), Target{URL: large.URL, Kind: "mcp"})
	require.Equal(t, OutcomeOK, res.Outcome, res.Error)
	assert.Len(t, c.decodes, MaxLargeDecodes-1, "the check gave its slot back")
}

func TestADecodeGateHoldsOneSlotAndNoneAfterItsCheck(t *testing.T) {
	t.Parallel()
	g := &decodeGate{slots: make(chan struct{}, 2)}
	require.NoError(t, g.acquire(context.Background(), nil))
	require.NoError(t, g.acquire(context.Background(), nil), "a check holds one slot at most")
	assert.Len(t, g.slots, 1)
	g.release()
	assert.Empty(t, g.slots)
	g.close()
	assert.ErrorIs(t, g.acquire(context.Background(), nil), errCheckEnded, "an answer read after its check ended takes no slot")
	assert.Empty(t, g.slots)
}

// The read that crosses the body cap is scanned up to the cap: it hands on all but the byte past
// the cap, and a bound passed in those bytes must stop it as any other read's would.
func TestTheReadThatCrossesTheCapIsScanned(t *testing.T) {
	t.Parallel()
	const limit = 100
	body := strings.Repeat("[", MaxMessageDepth+1) + strings.Repeat(" ", 200)
	rec := &recorder{maxBody: limit, requests: []Request{{}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &shapeScan{budget: &shapeBudget{}}
	s.reset()
	b := &cappedBody{rc: io.NopCloser(strings.NewReader(body)), rec: rec, parent: context.Background(),
		ctx: ctx, cancel: cancel, shape: s}
	n, err := b.Read(make([]byte, 4096))
	var shape *ShapeError
	require.ErrorAs(t, err, &shape, "the bound passed within the cap stops the read")
	assert.Zero(t, n, "none of it is handed on")
}

// scan reads p; an error means a bound was passed.
func (s *shapeScan) scan(p []byte) error {
	_, err := s.scanEvents(p)
	return err
}
