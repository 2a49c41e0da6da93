package render

import (
	"encoding/json"
	"fmt"
	"io"
)

// JSON writes v as indented JSON followed by a newline. Shapes are part of the contract: the
// structs passed here carry snake_case json tags, RFC 3339 times and seconds as numbers.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}
