package check

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"sync"
	"time"
)

// Decode bounds: what an MCP server's answers may make a check decode, judged on the raw bytes as
// they are read, before the SDK builds a single Go value of them. A page of 15,000 tiny tools
// (700 KB, under the body cap) decoded into 30–88 MB; a schema of 75,000 sub-schemas cost the
// same. These bounds keep a check's decoded size near a megabyte whatever the server sends, so a
// worker's memory is bounded by its concurrency (docs/deploy.md, "Memory").
const (
	// MaxMessageValues bounds the JSON values (objects, arrays, strings, numbers, literals; an
	// object's keys count too) of one JSON-RPC message. The Go SDK's servers send 1,000 tools a
	// page; a realistic tool (a title, a description, annotations, five typed and described
	// parameters, an output schema) is 80 values and 817 bytes, so a full honest page is 80,000
	// values in 817 KB, under the body cap. A tiny-value bomb that fits the cap is refused.
	MaxMessageValues = 100000
	// MaxCheckValues bounds the JSON values of all the messages of one check together. A list's
	// next page is asked for only while a whole message's worth (MaxMessageValues) is left: the
	// list is then recorded as truncated, not failed.
	MaxCheckValues = 150000
	// MaxMessageDepth bounds how deep a message's arrays and objects nest.
	MaxMessageDepth = 64
	// MaxArrayItems bounds the items of a list array: a batch of messages, and an array directly
	// in a result (the tools, resources or prompts of one page; a longer list is served in pages,
	// and the Go SDK's servers send 1,000 a page). The SDK re-encodes each listed tool's input
	// schema, some 30 KB of garbage a tool whatever its size, so tools per page cost more than
	// values do. An array deeper in (a schema's enum) is bounded by the message's values only:
	// one long enum must not fail an honest server's whole check.
	MaxArrayItems = 1000
)

// listDepth says whether the depth is one at which an array is a list MaxArrayItems bounds: a batch (the
// message itself, depth 1) and a member of a message's result or params (depth 3:
// {"result":{"tools":[...]}}).
func listDepth(depth int) bool { return depth == 1 || depth == 3 }

// MaxLargeDecodes bounds how many large answers (largeAnswer bytes or more) one Checker's checks
// decode at once. A 1 MB answer costs the SDK several times its size to decode: 60 checks doing
// so at once peaked near 256 MiB. A check's answer is read from the network whole (JSON) or an
// event at a time (server-sent events), bounded by the body cap and the shape scan, before the
// SDK sees a byte of it; only then does a large one wait for a slot, which the check holds until
// the call the answer was for returns (or the check ends), or until the SDK reads the network
// again for more of that stream. So a slot is held while decoding, never while a server sends:
// a server that trickles its answer holds none, and cannot make an honest server's check wait.
// Answers under largeAnswer never wait.
const MaxLargeDecodes = 8

// DecodeSlots are the MaxLargeDecodes slots large answers are read and decoded in. Checkers of one
// process share one (Config.DecodeSlots: a worker makes a Checker per invocation), so that the
// bound is the process's.
type DecodeSlots struct{ ch chan struct{} }

// NewDecodeSlots returns MaxLargeDecodes free slots.
func NewDecodeSlots() *DecodeSlots { return &DecodeSlots{ch: make(chan struct{}, MaxLargeDecodes)} }

// largeAnswer is the size from which an answer waits for a decode slot.
const largeAnswer = 64 << 10

// decodeGate is one check's hold on its Checker's decode slots. Its lock is held while an
// acquire waits, so two answers of one check never take two slots.
type decodeGate struct {
	slots  chan struct{}
	mu     sync.Mutex
	held   bool
	owner  any  // the body that took the slot
	closed bool // the check has ended: what the SDK still reads is not decoded for it
}

// SlotsBusyError says a large answer, read whole, waited for a decode slot for a whole request
// timeout: the process was busy decoding others' answers. It says nothing about the server.
type SlotsBusyError struct{ After time.Duration }

func (e *SlotsBusyError) Error() string {
	return fmt.Sprintf("could not check: decode slots busy (waited %s for one of %d)", e.After, MaxLargeDecodes)
}

// errCheckEnded refuses a slot to an answer read after its check ended.
var errCheckEnded = errors.New("check ended")

// acquire takes a slot for owner unless the check holds one; it waits at most as long as ctx.
func (g *decodeGate) acquire(ctx context.Context, owner any) error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return errCheckEnded
	}
	if g.held {
		return nil
	}
	select {
	case g.slots <- struct{}{}:
		g.held, g.owner = true, owner
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// releaseFor gives the check's slot back if owner took it: its body is about to read the network.
func (g *decodeGate) releaseFor(owner any) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.owner == owner {
		g.releaseLocked()
	}
}

// release gives the check's slot back, if it holds one.
func (g *decodeGate) release() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.releaseLocked()
}

func (g *decodeGate) releaseLocked() {
	if g.held {
		<-g.slots
		g.held, g.owner = false, nil
	}
}

// close releases the slot for good when the check ends.
func (g *decodeGate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.releaseLocked()
	g.closed = true
}

// ShapeError says a response went past a decode bound; reading stopped there, before it was
// decoded, and the check failed as the server's fault.
type ShapeError struct {
	What  string // what was counted, e.g. "JSON values in one message"
	Limit int
}

func (e *ShapeError) Error() string {
	return fmt.Sprintf("response has more than %d %s; stopped reading before decoding it", e.Limit, e.What)
}

// shapeBudget is one check's count of JSON values, shared by all its responses (the SDK reads
// them from several goroutines).
type shapeBudget struct {
	mu     sync.Mutex
	values int
}

// left is how many values the check may still read; a check without a budget has all of them.
func (b *shapeBudget) left() int {
	if b == nil {
		return MaxCheckValues
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return MaxCheckValues - b.values
}

// shapeScan counts the JSON structure of one response body as it is read: raw JSON
// (application/json) or JSON inside server-sent events' data fields (anything else: the SDK
// reads a GET stream and a text/event-stream answer as events). It tracks strings, so a brace in
// a string is not a value, and keeps only counters: no byte is kept.
type shapeScan struct {
	budget *shapeBudget
	sse    bool

	// SSE framing: at the start of a line, the field name read so far (up to five bytes), in a
	// data field's value, or skipping the rest of a line of another field.
	lineStart bool
	field     []byte
	inData    bool
	skipLine  bool

	// JSON of the current message.
	values   int
	depth    int
	inString bool
	escape   bool
	inScalar bool
	items    [MaxMessageDepth + 1]int  // items of the list array open at each depth
	isArray  [MaxMessageDepth + 1]bool // a list array (listDepth) is open at that depth
}

// newShapeScan returns the scan for a response to req, or nil when it needs none.
func newShapeScan(budget *shapeBudget, req *http.Request, resp *http.Response) *shapeScan {
	if budget == nil {
		return nil
	}
	media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	s := &shapeScan{budget: budget, sse: req.Method == http.MethodGet || media != "application/json"}
	s.reset()
	return s
}

// reset starts a new message.
func (s *shapeScan) reset() {
	s.lineStart = true
	s.field = s.field[:0]
	s.inData, s.skipLine = false, false
	s.values, s.depth = 0, 0
	s.inString, s.escape, s.inScalar = false, false, false
}

// scanEvents reads p and returns how many of its bytes end with the last server-sent event that
// ended in p (0 when none did, and always for raw JSON); an error means a bound was passed.
func (s *shapeScan) scanEvents(p []byte) (int, error) {
	s.budget.mu.Lock()
	defer s.budget.mu.Unlock()
	ended := 0
	for i, c := range p {
		if !s.sse {
			if err := s.json(c); err != nil {
				return ended, err
			}
			continue
		}
		end, err := s.event(c)
		if err != nil {
			return ended, err
		}
		if end {
			ended = i + 1
		}
	}
	return ended, nil
}

// event follows the SSE framing (docs: the SDK's event reader): "field: value" lines, the values
// of consecutive data fields joined by newlines into one message, a blank line ending it (end).
func (s *shapeScan) event(c byte) (end bool, err error) {
	if c == '\r' {
		return false, nil // a line ends at '\n'; "\r\n" is "\n", and a '\r' elsewhere is JSON space
	}
	if c == '\n' {
		if s.lineStart {
			s.reset() // a blank line: the event ends, the next is a new message
			return true, nil
		}
		if s.inData {
			if err := s.json('\n'); err != nil {
				return false, err
			}
		}
		s.lineStart, s.inData, s.skipLine = true, false, false
		s.field = s.field[:0]
		return false, nil
	}
	wasStart := s.lineStart
	s.lineStart = false
	switch {
	case s.inData:
		return false, s.json(c)
	case s.skipLine:
		return false, nil
	case c == ':':
		s.inData = !wasStart && string(s.field) == "data"
		s.skipLine = !s.inData
		return false, nil
	case len(s.field) < 5:
		s.field = append(s.field, c)
	default:
		s.skipLine = true // no field we scan has a longer name
	}
	return false, nil
}

// json counts one byte of a message's JSON. A newline inside a string is not JSON: the string is
// taken as ended, so that structure after it is still counted (the decoder refuses it anyway).
func (s *shapeScan) json(c byte) error {
	if s.inString {
		switch {
		case s.escape:
			s.escape = false
		case c == '\\':
			s.escape = true
		case c == '"' || c == '\n':
			s.inString = false
		}
		return nil
	}
	switch c {
	case ' ', '\t', '\n', '\r':
		s.inScalar = false
		return nil
	case '"':
		s.inString, s.inScalar = true, false
		return s.value()
	case '{', '[':
		s.inScalar = false
		if err := s.value(); err != nil {
			return err
		}
		s.depth++
		if s.depth > MaxMessageDepth {
			return &ShapeError{What: "levels of nesting", Limit: MaxMessageDepth}
		}
		s.isArray[s.depth], s.items[s.depth] = c == '[' && listDepth(s.depth), 0
		return nil
	case '}', ']':
		s.inScalar = false
		if s.depth > 0 {
			s.depth--
		}
		return nil
	case ',', ':':
		s.inScalar = false
		return nil
	}
	if s.inScalar {
		return nil
	}
	s.inScalar = true
	return s.value()
}

// value counts a value starting, against the message's, the check's and its array's bounds.
func (s *shapeScan) value() error {
	s.values++
	s.budget.values++
	if s.values > MaxMessageValues {
		return &ShapeError{What: "JSON values in one message", Limit: MaxMessageValues}
	}
	if s.budget.values > MaxCheckValues {
		return &ShapeError{What: "JSON values in all of the check's responses", Limit: MaxCheckValues}
	}
	if s.depth > 0 && s.isArray[s.depth] {
		s.items[s.depth]++
		if s.items[s.depth] > MaxArrayItems {
			return &ShapeError{What: "items in one array", Limit: MaxArrayItems}
		}
	}
	return nil
}
