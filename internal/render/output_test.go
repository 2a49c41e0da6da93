package render

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A view writes its JSON one way for every command (two spaces, one trailing newline), its text
// only for a table, and its CSV only where the command offers one.
func TestOutputWritesAViewInTheFormatAsked(t *testing.T) {
	t.Parallel()
	type shape struct {
		Slug  string   `json:"slug"`
		Tools []string `json:"tools"`
	}
	var buf bytes.Buffer
	view := func(withCSV bool) View {
		v := View{JSON: shape{Slug: "weather", Tools: []string{}}, Text: func() error {
			_, err := fmt.Fprintln(&buf, "weather: no tools")
			return err
		}}
		if withCSV {
			v.CSV = func() error {
				c := NewCSV(&buf)
				c.Write("slug", "tools")
				c.Write("weather", "0")
				return c.Flush()
			}
		}
		return v
	}
	for _, tc := range []struct {
		name, format string
		csv          bool
		want         string
	}{
		{"json is the value, indented, with a newline", FormatJSON, false, "{\n  \"slug\": \"weather\",\n  \"tools\": []\n}\n"},
		{"a table is the text", FormatTable, false, "weather: no tools\n"},
		{"csv is the records", FormatCSV, true, "slug,tools\nweather,0\n"},
		{"json ignores the csv", FormatJSON, true, "{\n  \"slug\": \"weather\",\n  \"tools\": []\n}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			buf.Reset()
			require.NoError(t, Output(&buf, tc.format, view(tc.csv)))
			assert.Equal(t, tc.want, buf.String())
		})
	}

	buf.Reset()
	require.Error(t, Output(&buf, FormatCSV, view(false)), "a view without CSV refuses -o csv, never writes a table instead")
	assert.Empty(t, buf.String())
	require.NoError(t, Output(&buf, FormatTable, View{JSON: 1}), "a view whose text was written along the way writes nothing more")
	assert.Empty(t, buf.String())
	require.NoError(t, Output(&buf, FormatJSON, view(false).personOnly()), "a view for a person only writes no JSON")
	assert.Empty(t, buf.String())
	var none []string
	require.NoError(t, Output(&buf, FormatJSON, View{JSON: none}), "a nil list is a value: null, as encoding/json says it")
	assert.Equal(t, "null\n", buf.String())
}

func (v View) personOnly() View { v.JSON = nil; return v }
